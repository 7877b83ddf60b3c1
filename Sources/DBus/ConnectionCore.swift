import CDBus
import Synchronization

/// Raw libdbus connection pointer.
struct RawConnection: @unchecked Sendable {
    // @unchecked Sendable: libdbus connections are internally locked (threads are initialised with
    // dbus_threads_init_default before any connection exists), so the pointer may be used from any
    // thread; its lifetime is managed by ConnectionCore.
    let ptr: OpaquePointer
}

struct ReplyWaiter {
    let continuation: CheckedContinuation<DBusMessage, Error>
    /// When the call fails with `NoReply`, on the connection's ``DeadlineClock``.
    let deadline: UInt64
}

struct CoreState {
    var closed = false
    var stopRequested = false
    var waiters: [UInt32: ReplyWaiter] = [:]
    /// At or before the earliest deadline of `waiters` (`.max`: none to look at).
    var earliestDeadline: UInt64 = .max
    var activeMatches = 0
}

/// The shared state behind a ``DBusConnection``: the libdbus connection, the dispatch thread's loop,
/// pending replies and subscriptions.
final class ConnectionCore: Sendable {
    let raw: RawConnection
    let socketFD: Int32
    let waker: Waker
    /// What reply deadlines are read on.
    let clock: DeadlineClock
    let state = Mutex(CoreState())
    /// Signal subscribers; the dispatch thread reads them without a lock (``SubscriberList/current()``).
    let subscribers = SubscriberList()
    let objects = ObjectRegistry()
    /// Subscribers with buffered batch items; touched only on the dispatch thread.
    let dirty = DispatchThreadBox<[SignalSubscriber]>([])
    /// When `dirty` became non-empty (monotonic nanoseconds; dispatch thread only).
    let dirtySince = DispatchThreadBox<UInt64>(0)
    /// How long buffered signal batches may wait for more signals once the socket has run dry. Each
    /// delivered batch wakes a consumer task on another thread, and waking costs more than routing a
    /// signal: at 20,000 signals/s arriving in bursts of 20 every millisecond, a batch per burst would
    /// mean a thousand wake-ups a second. Batches also go out as soon as they are full.
    static let batchDelayNanos: UInt64 = 4_000_000
    /// How often the dispatch thread looks at the reply deadlines while a call waits, at the least.
    /// The connection's clock need not keep pace with real time (a test moves its own), so the time
    /// left on it is no promise of when a deadline comes.
    static let deadlineCheckNanos: UInt64 = 100_000_000
    /// Signals read from the bus so far (written by the dispatch thread only; for tests).
    let signalsRead = Atomic<Int>(0)
    /// CPU clock of the dispatch thread (valid while `threadRunning`).
    let threadClock = Mutex<Int32?>(nil)

    var conn: OpaquePointer { raw.ptr }

    init(conn: OpaquePointer, socketFD: Int32, wake: (Int32, Int32), clock: DeadlineClock) {
        liveCores.add(1, ordering: .relaxed)
        self.raw = RawConnection(ptr: conn)
        self.socketFD = socketFD
        self.waker = Waker(read: wake.0, write: wake.1)
        self.clock = clock
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
                let deadline = clock.deadline(after: timeout)
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
}

final class SerialToken: Sendable {
    let serial = Atomic<UInt32>(0)
}
