import ClickerWire
import Dispatch
import OSThreads
import PostgresClient
import Synchronization

/// The counts of a poll in the ledger, as they change: every receiver's ballots, counted by the
/// database. The follower listens on ``LedgerSchema/channel`` and reads the poll's counts again when
/// a transaction that changed one of its counted ballots commits (migration 4's trigger), on a
/// thread of its own with a connection of its own (its waits block). It yields the counts at start,
/// then each time they changed; when the connection fails, it connects again (at most once per
/// `retryInterval`) and yields the counts as they are then.
///
/// Following with `ballots`, each reading also carries the counted ballots that changed since the
/// one before (all of them in the first), read from the snapshot the last reading took
/// (``BallotLedger/changes(poll:since:)``), across reconnections: what the instructor's tally
/// counts with its own.
public final class LedgerFollower: Sendable {
    /// One reading of the poll's counts.
    public struct Reading: Sendable, Equatable {
        /// Counted ballots per answer, per question that has any.
        public var counts: [UInt8: [Answer: Int]]
        /// Why the ledger cannot be read now (the last counts stand); nil while it can.
        public var error: String?
        /// Following with `ballots`: the counted ballots written since the reading before.
        public var changed: [LedgerBallot]

        public init(counts: [UInt8: [Answer: Int]], error: String? = nil, changed: [LedgerBallot] = []) {
            self.counts = counts
            self.error = error
            self.changed = changed
        }
    }

    /// What the caller and the thread share: whether to stop, and the wake-up of a retry's wait.
    final class Control: Sendable {
        let stopping = Mutex(false)
        let wake = DispatchSemaphore(value: 0)
        var stopped: Bool { stopping.withLock { $0 } }
    }

    private let control = Control()
    private let thread: ThreadHandle
    /// The readings, in order.
    public let readings: AsyncStream<Reading>

    /// Starts following `poll` in the ledger at `url` (the instructor's role, or a receiver's), with
    /// the ballots that changed in each reading when `ballots` is set. Returns nil when the system
    /// refuses a thread.
    public init?(url: String, poll: Int64, ballots: Bool = false, retryInterval: Duration = .seconds(1)) {
        let (readings, continuation) = AsyncStream<Reading>.makeStream(bufferingPolicy: .bufferingNewest(64))
        self.readings = readings
        let control = self.control
        let (seconds, atto) = retryInterval.components
        let retryNanoseconds = UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, atto / 1_000_000_000))
        guard let thread = OSThread.start(name: "clicker-follow", {
            var last: Reading?
            var seen: LedgerSnapshot?
            func publish(_ r: Reading) {
                guard r.counts != last?.counts || r.error != last?.error || !r.changed.isEmpty else { return }
                last = r
                continuation.yield(r)
            }
            func read(_ ledger: BallotLedger) throws -> Reading {
                var changed: [LedgerBallot] = []
                if ballots { (changed, seen) = try ledger.changes(poll: poll, since: seen) }
                return Reading(counts: try ledger.counts(poll: poll), changed: changed)
            }
            while !control.stopped {
                do {
                    let ledger = try BallotLedger(url: url, migrate: false)
                    try ledger.db.execute("LISTEN \(LedgerSchema.channel)")
                    publish(try read(ledger))
                    let payload = String(poll)
                    while !control.stopped {
                        // A short wait, so that `stop()` is noticed soon; a notification ends it at once.
                        let arrived = try ledger.db.notifications(waitingUpTo: .milliseconds(200))
                        if arrived.contains(where: { $0.channel == LedgerSchema.channel && $0.payload == payload }) {
                            publish(try read(ledger))
                        }
                    }
                } catch {
                    publish(Reading(counts: last?.counts ?? [:], error: "\(error)"))
                    // Until the next attempt, or `stop()`.
                    _ = control.wake.wait(timeout: .now() + .nanoseconds(Int(clamping: retryNanoseconds)))
                }
            }
            continuation.finish()
        }) else { return nil }
        self.thread = thread
    }

    /// Stops following; returns once the thread has ended (the readings then finish).
    public func stop() async {
        control.stopping.withLock { $0 = true }
        control.wake.signal()
        await thread.finished()
    }

    deinit {
        control.stopping.withLock { $0 = true }
        control.wake.signal()
    }
}
