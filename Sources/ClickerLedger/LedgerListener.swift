import Dispatch
import OSThreads
import PostgresClient
import Synchronization

/// A thread that follows one poll in the ledger by LISTEN/NOTIFY (what ``LedgerFollower`` and
/// ``LedgerBeaconFeed`` run): it connects, listens on a channel, reads at once and again at each
/// notification for the poll; when the connection fails it says so and connects again at most once
/// per retry interval; until ``stop()``.
final class LedgerListener: Sendable {
    /// What the thread does, made on the thread (so that the state the closures share stays there).
    struct Handlers {
        /// Once connected, and at each notification of the poll.
        var read: (BallotLedger) throws -> Void
        /// When connecting, listening or reading threw.
        var failed: (any Error) -> Void
        /// When the thread ends.
        var ended: () -> Void
    }

    /// What the caller and the thread share: whether to stop, and the wake-up of a retry's wait.
    private final class Control: Sendable {
        let stopping = Mutex(false)
        let wake = DispatchSemaphore(value: 0)
        var stopped: Bool { stopping.withLock { $0 } }

        func stop() {
            stopping.withLock { $0 = true }
            wake.signal()
        }
    }

    private let control = Control()
    private let thread: ThreadHandle

    /// Starts the thread `name`; nil when the system refuses one.
    init?(name: String, url: String, channel: String, poll: Int64, retry: Duration,
          handlers make: @escaping @Sendable () -> Handlers) {
        let control = self.control
        let (seconds, atto) = retry.components
        let retryNanoseconds = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, atto / 1_000_000_000))
        guard let thread = OSThread.start(name: name, {
            let handlers = make()
            let payload = String(poll)
            while !control.stopped {
                do {
                    let ledger = try BallotLedger(url: url, migrate: false)
                    try ledger.db.execute("LISTEN \(channel)")
                    try handlers.read(ledger)
                    while !control.stopped {
                        // A short wait, so that `stop()` is noticed soon; a notification ends it at once.
                        let arrived = try ledger.db.notifications(waitingUpTo: .milliseconds(200))
                        if arrived.contains(where: { $0.channel == channel && $0.payload == payload }) { try handlers.read(ledger) }
                    }
                } catch {
                    handlers.failed(error)
                    // Until the next attempt, or `stop()`.
                    _ = control.wake.wait(timeout: .now() + .nanoseconds(Int(clamping: retryNanoseconds)))
                }
            }
            handlers.ended()
        }) else { return nil }
        self.thread = thread
    }

    /// Stops the thread; returns once it has ended.
    func stop() async {
        control.stop()
        await thread.finished()
    }

    deinit { control.stop() }
}
