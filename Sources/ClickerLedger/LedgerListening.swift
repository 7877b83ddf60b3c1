import Dispatch
import PostgresClient
import Synchronization

/// The loop of a thread that follows one poll in the ledger by LISTEN/NOTIFY (``LedgerFollower``,
/// ``LedgerBeaconFeed``): connect, listen on a channel, read at once and again at each notification
/// for the poll; when the connection fails, say so and connect again at most once per retry interval.
enum LedgerListening {
    /// What the caller and the thread share: whether to stop, and the wake-up of a retry's wait.
    final class Control: Sendable {
        let stopping = Mutex(false)
        let wake = DispatchSemaphore(value: 0)
        var stopped: Bool { stopping.withLock { $0 } }

        func stop() {
            stopping.withLock { $0 = true }
            wake.signal()
        }
    }

    /// Runs on the calling thread until `control` stops: `read` once connected and at each
    /// notification on `channel` whose payload is `poll`'s number; `failed` when connecting, listening
    /// or reading throws, then a wait of `retry` before the next connection.
    static func run(url: String, channel: String, poll: Int64, retry: Duration, control: Control,
                    read: (BallotLedger) throws -> Void, failed: (any Error) -> Void) {
        let (seconds, atto) = retry.components
        let retryNanoseconds = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, atto / 1_000_000_000))
        let payload = String(poll)
        while !control.stopped {
            do {
                let ledger = try BallotLedger(url: url, migrate: false)
                try ledger.db.execute("LISTEN \(channel)")
                try read(ledger)
                while !control.stopped {
                    // A short wait, so that `stop()` is noticed soon; a notification ends it at once.
                    let arrived = try ledger.db.notifications(waitingUpTo: .milliseconds(200))
                    if arrived.contains(where: { $0.channel == channel && $0.payload == payload }) { try read(ledger) }
                }
            } catch {
                failed(error)
                // Until the next attempt, or `stop()`.
                _ = control.wake.wait(timeout: .now() + .nanoseconds(Int(clamping: retryNanoseconds)))
            }
        }
    }
}
