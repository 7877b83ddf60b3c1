import ClickerWire
import PostgresClient

/// The counts of a poll in the ledger, as they change: every receiver's ballots, counted by the
/// database, and which questions are closed. The follower listens on ``LedgerSchema/channel`` and
/// reads them again when a transaction that changed one of its counted ballots commits (migration
/// 4's trigger), or one of its questions is closed (``BallotLedger/closeQuestion(poll:question:)``), on a
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
        /// The questions closed in the ledger.
        public var closed: Set<UInt8>

        public init(counts: [UInt8: [Answer: Int]], error: String? = nil, changed: [LedgerBallot] = [], closed: Set<UInt8> = []) {
            self.counts = counts
            self.error = error
            self.changed = changed
            self.closed = closed
        }
    }

    private let listener: LedgerListener
    /// The readings, in order.
    public let readings: AsyncStream<Reading>

    /// Starts following `poll` in the ledger at `url` (the instructor's role, or a receiver's), with
    /// the ballots that changed in each reading when `ballots` is set. Returns nil when the system
    /// refuses a thread.
    public init?(url: String, poll: Int64, ballots: Bool = false, retryInterval: Duration = .seconds(1)) {
        let (readings, continuation) = AsyncStream<Reading>.makeStream(bufferingPolicy: .bufferingNewest(64))
        self.readings = readings
        guard let listener = LedgerListener(name: "clicker-follow", url: url, channel: LedgerSchema.channel, poll: poll,
                                            retry: retryInterval, handlers: {
            var last: Reading?
            var seen: LedgerSnapshot?
            func publish(_ r: Reading) {
                guard r.counts != last?.counts || r.closed != last?.closed || r.error != last?.error || !r.changed.isEmpty else { return }
                last = r
                continuation.yield(r)
            }
            return LedgerListener.Handlers(read: { ledger in
                var changed: [LedgerBallot] = []
                if ballots { (changed, seen) = try ledger.changes(poll: poll, since: seen) }
                publish(Reading(counts: try ledger.counts(poll: poll), changed: changed, closed: try ledger.closedQuestions(poll: poll)))
            }, failed: { error in
                publish(Reading(counts: last?.counts ?? [:], error: "\(error)", closed: last?.closed ?? []))
            }, ended: { continuation.finish() })
        }) else { return nil }
        self.listener = listener
    }

    /// Stops following; returns once the thread has ended (the readings then finish).
    public func stop() async { await listener.stop() }
}
