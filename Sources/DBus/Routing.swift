import CDBus
import Synchronization

/// Incoming messages routed to reply waiters, `Peer`, exported objects and signal subscribers (dispatch
/// thread only); adding and removing subscriptions.
extension ConnectionCore {
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
        signalsRead.store(signalsRead.load(ordering: .relaxed) &+ 1, ordering: .relaxed)  // one writer
        let subs = subscribers.current()
        guard !subs.isEmpty else { return }
        var wrapped: DBusMessage? = nil
        for s in subs where s.match.matches(msg) {
            let m: DBusMessage
            if let w = wrapped { m = w } else { m = DBusMessage(retaining: msg); wrapped = m }
            if s.deliver(m) {
                if dirty.value.isEmpty { dirtySince.value = monotonicNanos() }
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
                    s.match.owner.set(owner, onlyIfUnknown: true)
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

/// The subscribers of one connection. Changed rarely (subscribing, unsubscribing) under a lock that
/// bumps a version; the dispatch thread keeps its own copy, refreshed when the version moved, so routing
/// a signal takes no lock.
final class SubscriberList: @unchecked Sendable {
    // @unchecked Sendable: `list` is behind a Mutex; `cached` and `cachedVersion` are read and written
    // only on the connection's dispatch thread (``current()``).
    private let list = Mutex<[SignalSubscriber]>([])
    private let version = Atomic<Int>(0)
    private var cachedVersion = 0
    private var cached: [SignalSubscriber] = []

    /// Reads or changes the list (any thread).
    func withLock<R>(_ body: (inout [SignalSubscriber]) throws -> R) rethrows -> R {
        try list.withLock { l in
            defer { version.add(1, ordering: .releasing) }
            return try body(&l)
        }
    }

    /// The current subscribers. Dispatch thread only.
    @inline(__always)
    func current() -> [SignalSubscriber] {
        let v = version.load(ordering: .acquiring)
        if v != cachedVersion {
            cached = list.withLock { $0 }
            cachedVersion = v
        }
        return cached
    }
}
