import CDBus
import Synchronization

/// The connection's own OS thread: connecting, the poll/read/write loop, timeouts and shutdown.
extension ConnectionCore {
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

    static func threadMain(target: DBusBusTarget, clock: DeadlineClock, cont: CheckedContinuation<DBusConnection, Error>) {
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
        let core = ConnectionCore(conn: c, socketFD: fd, wake: wake, clock: clock)
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

    /// The dispatch loop: dispatch everything queued, fail the calls whose reply deadline has passed on
    /// the connection's clock, then wait for the socket, the wake pipe, the next reply deadline (looked
    /// at again at least every `deadlineCheckNanos` while a call waits) or the next batch, then read and
    /// write without blocking.
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
            let (stop, deadline) = state.withLock { ($0.stopRequested, $0.earliestDeadline) }
            if stop || dbus_connection_get_is_connected(conn) == 0 { break }
            // The connection's clock is read once per turn, and only while a call may wait.
            var clockNow: UInt64? = nil
            if deadline != .max {
                let t = clock.now
                if deadline <= t { expireWaiters(now: t) }
                clockNow = t
            }
            if !readSomething {
                let now = monotonicNanos()
                // The socket ran dry: deliver the buffered batches once the oldest has waited
                // `batchDelayNanos`, else wake up for them then.
                var flushDue = UInt64.max
                if !dirty.value.isEmpty {
                    flushDue = dirtySince.value &+ Self.batchDelayNanos
                    if flushDue <= now {
                        flushBatches()
                        flushDue = .max
                    }
                }
                let (earliest, awaitingReplies) = state.withLock { ($0.earliestDeadline, !$0.waiters.isEmpty) }
                var wait = flushDue == .max ? UInt64.max : flushDue &- now
                if awaitingReplies {
                    let t = clockNow ?? clock.now
                    wait = min(wait, earliest &- min(t, earliest), Self.deadlineCheckNanos)
                }
                let timeoutMs = wait == .max ? -1 : Int32(clamping: wait / 1_000_000 + 1)
                let wantWrite = dbus_connection_has_messages_to_send(conn) != 0
                // While a batch waits for its time and no call waits for a reply, the socket is left alone
                // until the batch is due: the signals arriving meanwhile are then read in one go, one
                // wake-up per batch instead of one per signal or two (a wake-up costs more than routing a
                // signal). The batch goes out no later than before; a call made meanwhile (the wake pipe)
                // ends the wait.
                let coalesce = flushDue != .max && !wantWrite && !awaitingReplies
                let r = pollConnection(coalesce ? -1 : socketFD, wantWrite: wantWrite, wakeFD: waker.readFD,
                                       timeoutMs: timeoutMs)
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
