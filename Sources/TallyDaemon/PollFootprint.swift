import ClickerTally

/// How many entries a running poll holds in each table it keeps per voter or per event: what must
/// grow with the room (voters × questions), never with time. For tests, logs and the soak benchmark.
public struct PollFootprint: Sendable, Hashable, Codable {
    /// Entries kept to compute votes per second (constant).
    public var rateWindow: Int
    /// GATT reads asked for (emptied when full).
    public var verificationRequests: Int
    /// Failed GATT reads waiting to be tried again (at most `ReadRetries.limit`).
    public var readRetries: Int = 0
    /// Committed sequences, (question, voter) pairs.
    public var committed: Int
    /// Voter records over all questions of the tally (counted and kept apart).
    public var tallyVoters: Int
    /// Rejection reasons with a pending counter.
    public var pendingRejections: Int
    /// The ingest pipeline's caches and per-address tables.
    public var ingest: IngestFootprint
}
