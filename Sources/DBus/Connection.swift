import CDBus
import Synchronization

/// Which bus (or peer) to connect to.
public enum DBusBusTarget: Sendable, Hashable {
    /// The system bus: `DBUS_SYSTEM_BUS_ADDRESS` if set, else `unix:path=/run/dbus/system_bus_socket`.
    case system
    /// The session bus: `DBUS_SESSION_BUS_ADDRESS` if set, else libdbus's own session-bus lookup.
    case session
    /// A D-Bus address such as `unix:path=/tmp/x/bus`. With `registerWithBus` (default) the connection
    /// says `Hello` to a message bus; turn it off for a direct peer-to-peer connection.
    case address(String, registerWithBus: Bool = true)
}

/// The reply of `RequestName`.
public enum DBusRequestNameReply: UInt32, Sendable {
    case primaryOwner = 1
    case inQueue = 2
    case exists = 3
    case alreadyOwner = 4
}

/// The reply of `ReleaseName`.
public enum DBusReleaseNameReply: UInt32, Sendable {
    case released = 1
    case nonExistent = 2
    case notOwner = 3
}

/// Flags for `RequestName`.
public struct DBusRequestNameFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let allowReplacement = DBusRequestNameFlags(rawValue: 1)
    public static let replaceExisting = DBusRequestNameFlags(rawValue: 2)
    public static let doNotQueue = DBusRequestNameFlags(rawValue: 4)
}

/// A connection to a message bus, driven by its own dispatch thread (never by the Swift cooperative
/// pool). All methods may be called from any thread or task. The connection closes when ``close()``
/// is called or the last reference to it goes away; calls in flight then fail with
/// `org.freedesktop.DBus.Error.Disconnected` and signal streams finish.
public final class DBusConnection: Sendable {
    let core: ConnectionCore

    /// The unique name the bus assigned (`:1.42`), or `nil` for a peer-to-peer connection.
    public let uniqueName: String?

    init(core: ConnectionCore, uniqueName: String?) {
        self.core = core
        self.uniqueName = uniqueName
    }

    deinit { core.requestClose() }

    /// Connects (authentication and `Hello` run on the new dispatch thread, not on the caller's).
    public static func connect(_ target: DBusBusTarget) async throws -> DBusConnection {
        try await withCheckedThrowingContinuation { (cont: CheckedContinuation<DBusConnection, Error>) in
            let started = startThread {
                ConnectionCore.threadMain(target: target, cont: cont)
            }
            if !started {
                cont.resume(throwing: DBusError(name: DBusError.failed, message: "cannot start dispatch thread"))
            }
        }
    }

    /// Connects to the system bus (honouring `DBUS_SYSTEM_BUS_ADDRESS`).
    public static func system() async throws -> DBusConnection { try await connect(.system) }

    /// Connects to the session bus.
    public static func session() async throws -> DBusConnection { try await connect(.session) }

    /// Closes the connection and stops its dispatch thread. Idempotent.
    public func close() { core.requestClose() }

    /// Whether the connection is still open.
    public var isConnected: Bool { !core.isClosed }

    // MARK: Calls

    /// Calls a method and returns the reply message. A D-Bus error reply throws ``DBusError`` with the
    /// peer's error name and message; no reply within `timeout` throws `NoReply` (``DBusError/isTimeout``);
    /// task cancellation throws `CancellationError`.
    public func call(destination: String?, path: DBusObjectPath, interface: String?, method: String,
                     arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws -> DBusMessage {
        let msg = try DBusMessage.methodCall(destination: destination, path: path, interface: interface,
                                             member: method, arguments: arguments)
        return try await core.sendWithReply(msg, timeout: timeout)
    }

    /// Calls a method and decodes the first reply argument as `T`.
    public func call<T: DBusDecodable>(_: T.Type, destination: String?, path: DBusObjectPath, interface: String?,
                                       method: String, arguments: [DBusValue] = [],
                                       timeout: Duration = .seconds(25)) async throws -> T {
        let reply = try await call(destination: destination, path: path, interface: interface, method: method,
                                   arguments: arguments, timeout: timeout)
        return try reply.decode(T.self)
    }

    /// Sends a method call without waiting for (or asking for) a reply.
    public func callNoReply(destination: String?, path: DBusObjectPath, interface: String?, method: String,
                            arguments: [DBusValue] = []) throws {
        let msg = try DBusMessage.methodCall(destination: destination, path: path, interface: interface,
                                             member: method, arguments: arguments)
        dbus_message_set_no_reply(msg.raw, 1)
        try core.send(msg)
    }

    /// Emits a signal (broadcast unless `destination` is given).
    public func emitSignal(path: DBusObjectPath, interface: String, name: String, arguments: [DBusValue] = [],
                           destination: String? = nil) throws {
        let msg = try DBusMessage.signal(path: path, interface: interface, member: name, destination: destination,
                                         arguments: arguments)
        try core.send(msg)
    }

    // MARK: Bus driver

    static let busName = "org.freedesktop.DBus"
    static let busPath: DBusObjectPath = "/org/freedesktop/DBus"

    func busCall(_ method: String, _ args: [DBusValue]) async throws -> DBusMessage {
        try await call(destination: Self.busName, path: Self.busPath, interface: Self.busName, method: method,
                       arguments: args)
    }

    /// Asks the bus for a well-known name.
    @discardableResult
    public func requestName(_ name: String, flags: DBusRequestNameFlags = [.doNotQueue]) async throws -> DBusRequestNameReply {
        try Validate.busName(name)
        let r = try await busCall("RequestName", [.string(name), .uint32(flags.rawValue)]).decode(UInt32.self)
        guard let reply = DBusRequestNameReply(rawValue: r) else {
            throw DBusDecodingError(expected: "RequestName reply 1...4", found: "\(r)")
        }
        return reply
    }

    /// Releases a well-known name.
    @discardableResult
    public func releaseName(_ name: String) async throws -> DBusReleaseNameReply {
        try Validate.busName(name)
        let r = try await busCall("ReleaseName", [.string(name)]).decode(UInt32.self)
        guard let reply = DBusReleaseNameReply(rawValue: r) else {
            throw DBusDecodingError(expected: "ReleaseName reply 1...3", found: "\(r)")
        }
        return reply
    }

    /// The unique name owning `name`, or `nil` if nobody owns it.
    public func nameOwner(_ name: String) async throws -> String? {
        try Validate.busName(name)
        do {
            return try await busCall("GetNameOwner", [.string(name)]).decode(String.self)
        } catch let e as DBusError where e.name == DBusError.nameHasNoOwner {
            return nil
        }
    }

    /// Adds a match rule on the bus (normally done for you by the signal subscription methods).
    public func addMatch(_ rule: DBusMatchRule) async throws {
        try rule.validate()
        _ = try await busCall("AddMatch", [.string(rule.description)])
    }

    /// Removes a match rule previously added with ``addMatch(_:)``.
    public func removeMatch(_ rule: DBusMatchRule) async throws {
        _ = try await busCall("RemoveMatch", [.string(rule.description)])
    }

    /// CPU time consumed so far by this connection's dispatch thread (reading, parsing, matching and
    /// running fast-path decoders), in nanoseconds; `nil` once the thread has ended. For measurements.
    public var dispatchThreadCPUNanoseconds: UInt64? { core.dispatchThreadCPUNanos() }

    /// The number of match rules this connection's subscriptions currently hold on the bus.
    public var activeMatchCount: Int { core.state.withLock { $0.activeMatches } }
}

let liveCores = Atomic<Int>(0)
let liveThreads = Atomic<Int>(0)

extension DBusConnection {
    /// Diagnostics for leak tests: connection cores still alive and dispatch threads still running in
    /// this process. Both return to zero once every connection is closed and released.
    public static var liveInstances: (connections: Int, dispatchThreads: Int) {
        (liveCores.load(ordering: .relaxed), liveThreads.load(ordering: .relaxed))
    }
}

/// Raw libdbus connection pointer.
struct RawConnection: @unchecked Sendable {
    // @unchecked Sendable: libdbus connections are internally locked (threads are initialised with
    // dbus_threads_init_default before any connection exists), so the pointer may be used from any
    // thread; its lifetime is managed by ConnectionCore.
    let ptr: OpaquePointer
}

struct ReplyWaiter {
    let continuation: CheckedContinuation<DBusMessage, Error>
    let deadline: UInt64
}

struct CoreState {
    var closed = false
    var stopRequested = false
    var waiters: [UInt32: ReplyWaiter] = [:]
    var earliestDeadline: UInt64 = .max
    var activeMatches = 0
}

/// The shared state behind a ``DBusConnection``: the libdbus connection, the dispatch thread's loop,
/// pending replies and subscriptions.
final class ConnectionCore: Sendable {
    let raw: RawConnection
    let socketFD: Int32
    let waker: Waker
    let state = Mutex(CoreState())
    /// Snapshot read once per incoming signal.
    let subscribers = Mutex<[SignalSubscriber]>([])
    let objects = ObjectRegistry()
    /// Subscribers with buffered batch items; touched only on the dispatch thread.
    let dirty = DispatchThreadBox<[SignalSubscriber]>([])
    /// CPU clock of the dispatch thread (valid while `threadRunning`).
    let threadClock = Mutex<Int32?>(nil)

    var conn: OpaquePointer { raw.ptr }

    init(conn: OpaquePointer, socketFD: Int32, wake: (Int32, Int32)) {
        liveCores.add(1, ordering: .relaxed)
        self.raw = RawConnection(ptr: conn)
        self.socketFD = socketFD
        self.waker = Waker(read: wake.0, write: wake.1)
    }

    deinit {
        liveCores.subtract(1, ordering: .relaxed)
        dbus_connection_set_wakeup_main_function(raw.ptr, nil, nil, nil)
        dbus_connection_unref(raw.ptr)
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    func dispatchThreadCPUNanos() -> UInt64? {
        threadClock.withLock { clock in clock.flatMap { cpuNanos(of: $0) } }
    }

    func wake() { waker.wake() }

    func requestClose() {
        state.withLock { $0.stopRequested = true }
        wake()
    }

    // MARK: Thread

    static func resolveAddress(_ target: DBusBusTarget) -> (String?, Bool) {
        switch target {
        case .system:
            return (getenvString("DBUS_SYSTEM_BUS_ADDRESS") ?? "unix:path=/run/dbus/system_bus_socket", true)
        case .session:
            return (getenvString("DBUS_SESSION_BUS_ADDRESS"), true)
        case .address(let a, let reg):
            return (a, reg)
        }
    }

    static func threadMain(target: DBusBusTarget, cont: CheckedContinuation<DBusConnection, Error>) {
        _ = dbus_threads_init_default()
        var err = CDBus.DBusError()
        dbus_error_init(&err)
        let (address, register) = resolveAddress(target)
        let c: OpaquePointer?
        if let address {
            guard !address.utf8.contains(0) else {
                cont.resume(throwing: DBusError(name: DBusError.invalidArgs, message: "bad address"))
                return
            }
            c = dbus_connection_open_private(address, &err)
        } else {
            c = dbus_bus_get_private(DBUS_BUS_SESSION, &err)
        }
        guard let c else {
            cont.resume(throwing: DBusError.consume(&err))
            return
        }
        dbus_connection_set_exit_on_disconnect(c, 0)
        if address != nil && register {
            if dbus_bus_register(c, &err) == 0 {
                dbus_connection_close(c)
                dbus_connection_unref(c)
                cont.resume(throwing: DBusError.consume(&err))
                return
            }
        }
        var fd: Int32 = -1
        guard dbus_connection_get_socket(c, &fd) != 0, let wake = makeWakePipe() else {
            dbus_connection_close(c)
            dbus_connection_unref(c)
            cont.resume(throwing: DBusError(name: DBusError.failed, message: "no socket for connection"))
            return
        }
        let unique = dbus_bus_get_unique_name(c).map { String(cString: $0) }
        let core = ConnectionCore(conn: c, socketFD: fd, wake: wake)
        core.installCallbacks()
        cont.resume(returning: DBusConnection(core: core, uniqueName: register ? unique : nil))
        core.run()
    }

    func installCallbacks() {
        // libdbus calls this when another thread queues a message to send (and also for every message
        // it reads, on the dispatch thread itself, where it is ignored). The waker outlives the
        // connection: the callback is removed before the core releases the connection. Nothing but
        // the dispatch thread ever reads, so no dispatch-status callback is needed.
        let token = Unmanaged.passUnretained(waker).toOpaque()
        dbus_connection_set_wakeup_main_function(conn, wakeupMain, token, nil)
    }

    /// The dispatch loop: dispatch everything queued, then wait for the socket, the wake pipe or the
    /// next reply deadline, then read and write without blocking.
    func run() {
        liveThreads.add(1, ordering: .relaxed)
        waker.dispatchThread.store(currentThreadID(), ordering: .releasing)
        threadClock.withLock { $0 = currentThreadCPUClock() }
        defer {
            threadClock.withLock { $0 = nil }
            liveThreads.subtract(1, ordering: .relaxed)
        }
        var readSomething = false
        while true {
            // Messages are taken off the queue and routed here rather than through
            // dbus_connection_dispatch: its per-message filter-list copy and locking cost more than the
            // routing itself. (No DBusPendingCall is ever used once the loop runs.)
            while let m = dbus_connection_pop_message(conn) {
                handle(m)
                dbus_message_unref(m)
            }
            if !readSomething { flushBatches() }
            let (stop, deadline) = state.withLock { ($0.stopRequested, $0.earliestDeadline) }
            if stop || dbus_connection_get_is_connected(conn) == 0 { break }
            var now = monotonicNanos()
            if deadline <= now { expireWaiters(now: now); now = monotonicNanos() }
            if !readSomething {
                let nextDeadline = state.withLock { $0.earliestDeadline }
                let timeoutMs: Int32
                if nextDeadline == .max {
                    timeoutMs = -1
                } else {
                    timeoutMs = Int32(clamping: (nextDeadline &- min(now, nextDeadline)) / 1_000_000 + 1)
                }
                let wantWrite = dbus_connection_has_messages_to_send(conn) != 0
                let r = pollConnection(socketFD, wantWrite: wantWrite, wakeFD: waker.readFD, timeoutMs: timeoutMs)
                if r.woken { waker.reset() }
                if r.error { break }
            }
            _ = dbus_connection_read_write(conn, 0)
            readSomething = dbus_connection_get_dispatch_status(conn) == DBUS_DISPATCH_DATA_REMAINS
        }
        shutdown()
    }

    private func shutdown() {
        let waiters = state.withLock { s -> [ReplyWaiter] in
            s.closed = true
            s.earliestDeadline = .max
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        let subs = subscribers.withLock { s -> [SignalSubscriber] in
            defer { s.removeAll() }
            return s
        }
        dbus_connection_close(conn)
        flushBatches()
        let e = DBusError(name: DBusError.disconnected, message: "connection closed")
        for w in waiters { w.continuation.resume(throwing: e) }
        for s in subs { s.finish() }
        objects.removeAll()
    }

    private func expireWaiters(now: UInt64) {
        let expired = state.withLock { s -> [ReplyWaiter] in
            var out: [ReplyWaiter] = []
            var next = UInt64.max
            for (serial, w) in s.waiters {
                if w.deadline <= now {
                    out.append(w)
                    s.waiters[serial] = nil
                } else {
                    next = min(next, w.deadline)
                }
            }
            s.earliestDeadline = next
            return out
        }
        for w in expired {
            w.continuation.resume(throwing: DBusError(name: DBusError.noReply, message: "no reply within the timeout"))
        }
    }

    // MARK: Sending

    func send(_ msg: DBusMessage) throws {
        try state.withLock { s in
            guard !s.closed && !s.stopRequested else {
                throw DBusError(name: DBusError.disconnected, message: "connection closed")
            }
            guard dbus_connection_send(conn, msg.raw, nil) != 0 else {
                throw DBusError(name: DBusError.noMemory, message: "send failed")
            }
        }
    }

    func sendWithReply(_ msg: DBusMessage, timeout: Duration) async throws -> DBusMessage {
        let token = SerialToken()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (cont: CheckedContinuation<DBusMessage, Error>) in
                let ns = timeout.components.seconds.multipliedReportingOverflow(by: 1_000_000_000)
                let total = ns.overflow ? Int64.max : ns.partialValue &+ timeout.components.attoseconds / 1_000_000_000
                let deadline = total <= 0 ? monotonicNanos() : monotonicNanos() &+ UInt64(clamping: total)
                let result: Result<Bool, DBusError> = state.withLock { s in
                    guard !s.closed && !s.stopRequested else {
                        return .failure(DBusError(name: DBusError.disconnected, message: "connection closed"))
                    }
                    var serial: UInt32 = 0
                    guard dbus_connection_send(conn, msg.raw, &serial) != 0 else {
                        return .failure(DBusError(name: DBusError.noMemory, message: "send failed"))
                    }
                    s.waiters[serial] = ReplyWaiter(continuation: cont, deadline: deadline)
                    token.serial.store(serial, ordering: .releasing)
                    let earlier = deadline < s.earliestDeadline
                    if earlier { s.earliestDeadline = deadline }
                    return .success(earlier)
                }
                switch result {
                case .failure(let e): cont.resume(throwing: e)
                case .success(let earlier):
                    if earlier { wake() }
                    if Task.isCancelled { cancelWaiter(token) }
                }
            }
        } onCancel: {
            cancelWaiter(token)
        }
    }

    private func cancelWaiter(_ token: SerialToken) {
        let serial = token.serial.load(ordering: .acquiring)
        guard serial != 0 else { return }
        let w = state.withLock { $0.waiters.removeValue(forKey: serial) }
        w?.continuation.resume(throwing: CancellationError())
    }

    // MARK: Dispatch (dispatch thread only)

    func handle(_ msg: OpaquePointer) {
        let type = dbus_message_get_type(msg)
        switch type {
        case DBusMessageType.signal.rawValue:
            dispatchSignal(msg)
        case DBusMessageType.methodReturn.rawValue, DBusMessageType.error.rawValue:
            let rs = dbus_message_get_reply_serial(msg)
            guard let w = state.withLock({ $0.waiters.removeValue(forKey: rs) }) else { return }
            let m = DBusMessage(retaining: msg)
            if type == DBusMessageType.error.rawValue {
                w.continuation.resume(throwing: m.asError ?? DBusError(name: DBusError.failed))
            } else {
                w.continuation.resume(returning: m)
            }
        case DBusMessageType.methodCall.rawValue:
            if handlePeer(msg) || objects.handle(msg, core: self) { return }
            let m = DBusMessage(retaining: msg)
            guard !m.noReply else { return }
            let text = "no method \(m.interface.map { $0 + "." } ?? "")\(m.member ?? "") at \(m.path?.rawValue ?? "?")"
            if let e = m.makeError(DBusError(name: DBusError.unknownMethod, message: text)) { try? send(e) }
        default:
            break
        }
    }

    /// `org.freedesktop.DBus.Peer` on every path (normally answered inside dbus_connection_dispatch).
    private func handlePeer(_ msg: OpaquePointer) -> Bool {
        guard let i = dbus_message_get_interface(msg), strcmpC(i, "org.freedesktop.DBus.Peer") == 0,
              let member = dbus_message_get_member(msg) else { return false }
        let m = DBusMessage(retaining: msg)
        var reply: [DBusValue]? = nil
        if strcmpC(member, "Ping") == 0 {
            reply = []
        } else if strcmpC(member, "GetMachineId") == 0, let id = dbus_get_local_machine_id() {
            reply = [.string(String(cString: id))]
            dbus_free(id)
        }
        guard !m.noReply else { return true }
        if let reply, let r = try? m.makeReturn(reply) {
            try? send(r)
        } else if let e = m.makeError(DBusError(name: DBusError.unknownMethod, message: "unknown Peer method")) {
            try? send(e)
        }
        return true
    }

    private func dispatchSignal(_ msg: OpaquePointer) {
        let subs = subscribers.withLock { $0 }
        guard !subs.isEmpty else { return }
        var wrapped: DBusMessage? = nil
        for s in subs where s.match.matches(msg) {
            let m: DBusMessage
            if let w = wrapped { m = w } else { m = DBusMessage(retaining: msg); wrapped = m }
            if s.deliver(m) {
                dirty.value.append(s)
            }
        }
    }

    func flushBatches() {
        guard !dirty.value.isEmpty else { return }
        let list = dirty.value
        dirty.value.removeAll(keepingCapacity: true)
        for s in list { s.flush() }
    }

    // MARK: Subscriptions

    func addSubscriber(_ s: SignalSubscriber, connection: DBusConnection) async throws {
        try s.rule.validate()
        guard !isClosed else { throw DBusError(name: DBusError.disconnected, message: "connection closed") }
        if let name = s.match.trackedSender {
            // Track the owner of the well-known name: first the change signals, then the current owner.
            let tracker = OwnerTracker(name: name, target: s.match)
            s.ownerTracker = tracker
            subscribers.withLock { $0.append(tracker) }
            do {
                try await connection.addMatch(tracker.rule)
                state.withLock { $0.activeMatches += 1 }
                if let owner = try await connection.nameOwner(name) {
                    s.match.owner.withLock { if $0 == nil { $0 = Array(owner.utf8CString) } }
                }
            } catch {
                removeSubscriberLocally(tracker)
                try? await connection.removeMatch(tracker.rule)
                throw error
            }
        }
        subscribers.withLock { $0.append(s) }
        do {
            try await connection.addMatch(s.rule)
            state.withLock { $0.activeMatches += 1 }
        } catch {
            removeSubscriberLocally(s)
            if let t = s.ownerTracker {
                removeSubscriberLocally(t)
                try? await connection.removeMatch(t.rule)
                state.withLock { $0.activeMatches -= 1 }
            }
            throw error
        }
    }

    private func removeSubscriberLocally(_ s: SignalSubscriber) {
        subscribers.withLock { $0.removeAll { $0 === s } }
    }

    /// Removes a subscriber and its bus match rules (asynchronously; the caller need not wait).
    func removeSubscriber(_ s: SignalSubscriber) {
        let present = subscribers.withLock { list -> Bool in
            let before = list.count
            list.removeAll { $0 === s || $0 === s.ownerTracker }
            return list.count != before
        }
        guard present, !isClosed else { return }
        var rules = [s.rule]
        if let t = s.ownerTracker { rules.append(t.rule) }
        for r in rules {
            guard let msg = try? DBusMessage.methodCall(destination: DBusConnection.busName, path: DBusConnection.busPath,
                                                        interface: DBusConnection.busName, member: "RemoveMatch",
                                                        arguments: [.string(r.description)]) else { continue }
            Task { [self] in
                _ = try? await self.sendWithReply(msg, timeout: .seconds(25))
                self.state.withLock { $0.activeMatches -= 1 }
            }
        }
    }
}

final class SerialToken: Sendable {
    let serial = Atomic<UInt32>(0)
}

/// A value accessed only from the dispatch thread.
final class DispatchThreadBox<T>: @unchecked Sendable {
    // @unchecked Sendable: `value` is read and written exclusively on the connection's dispatch thread
    // (inside the filter callback and the loop), so there is never concurrent access.
    var value: T
    init(_ v: T) { value = v }
}

private let wakeupMain: DBusWakeupMainFunction = { token in
    guard let token else { return }
    Unmanaged<Waker>.fromOpaque(token).takeUnretainedValue().wakeFromCallback()
}

/// Wakes the dispatch thread's poll through a self-pipe, writing at most one byte per wake-up.
final class Waker: Sendable {
    let readFD: Int32
    let writeFD: Int32
    let pending = Atomic<Bool>(false)
    let dispatchThread = Atomic<UInt>(0)

    init(read: Int32, write: Int32) {
        readFD = read
        writeFD = write
    }

    deinit {
        _ = closeFD(readFD)
        _ = closeFD(writeFD)
    }

    func wake() {
        if !pending.exchange(true, ordering: .acquiringAndReleasing) { pokeFD(writeFD) }
    }

    func wakeFromCallback() {
        // Reading a message on the dispatch thread also triggers the callback; that thread is awake.
        if dispatchThread.load(ordering: .relaxed) == currentThreadID() { return }
        wake()
    }

    /// Called by the dispatch thread after poll reported the pipe readable, before it does its work.
    func reset() {
        pending.store(false, ordering: .releasing)
        drainFD(readFD)
    }
}
