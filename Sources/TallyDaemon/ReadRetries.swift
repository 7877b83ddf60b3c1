import ClickerTransport

/// GATT reads that failed (a connection lost, a collision, a timeout, a read the budget put off) and are
/// tried again, with back-off, until their ballot is verified or its question closes (PROTOCOL.md,
/// "Takeover rule"). Bounded: a flood of made-up voters, whose reads all fail, cannot grow it, and the
/// reads it keeps are those of ballots heard lately (a device that is there, following the beacon).
///
/// Pure value, on the radio's clock (report timestamps), like `ReadBudget`.
struct ReadRetries: Sendable {
    struct Entry: Sendable {
        /// Failed attempts so far.
        var attempts: Int
        /// When the next attempt is due; nil while an attempt is under way.
        var due: RadioInstant?
        /// When it last failed, and when its ballot was last heard (at least then): a full table drops
        /// first the entries not heard since they failed (made-up voters are heard once), then those
        /// heard least recently.
        var failedAt: RadioInstant
        var heardAt: RadioInstant

        var heardSinceFailing: Bool { heardAt > failedAt }
    }

    /// Most reads kept for retrying. Each costs about 100 bytes.
    static let limit = 1024
    /// The wait after the first failure, doubled after each further one, up to ``maxBackoff``.
    static let firstBackoff: Duration = .seconds(1)
    /// The longest wait between two attempts: a voter at the keep-alive (10.24 s) is read at least
    /// every two of its advertising events.
    static let maxBackoff: Duration = .seconds(20)

    private(set) var entries: [VerificationState.Request: Entry] = [:]
    /// The earliest due time, or nil when none is due (a lower bound: entries may have gone).
    private(set) var nextDue: RadioInstant?
    /// Entries dropped because the table was full, for the figures.
    private(set) var evicted = 0

    var count: Int { entries.count }

    /// The wait after `attempts` failures.
    static func backoff(after attempts: Int) -> Duration {
        var d = firstBackoff
        for _ in 1..<max(1, min(attempts, 16)) where d < maxBackoff { d *= 2 }
        return min(d, maxBackoff)
    }

    /// Whether `r` waits for a retry (then hearing its ballot does not read it sooner); notes the hearing.
    mutating func isWaiting(_ r: VerificationState.Request, heardAt t: RadioInstant) -> Bool {
        guard var e = entries[r] else { return false }
        if t > e.heardAt {
            e.heardAt = t
            entries[r] = e
        }
        return true
    }

    /// A read of `r` failed at `t`: it is tried again after the back-off.
    mutating func failed(_ r: VerificationState.Request, at t: RadioInstant) {
        var e = entries[r] ?? Entry(attempts: 0, due: nil, failedAt: t, heardAt: t)
        e.attempts += 1
        e.failedAt = t
        e.heardAt = max(e.heardAt, t)
        let due = t + Self.backoff(after: e.attempts)
        e.due = due
        if entries[r] == nil, entries.count >= Self.limit { evictLeastRecentlyHeard() }
        entries[r] = e
        if nextDue.map({ due < $0 }) ?? true { nextDue = due }
    }

    /// The reads due at `t`, marked as under way (their entries stay until `done`).
    mutating func due(at t: RadioInstant) -> [VerificationState.Request] {
        guard let next = nextDue, t >= next else { return [] }
        var ready: [VerificationState.Request] = []
        var later: RadioInstant?
        for (r, e) in entries {
            guard let d = e.due else { continue }
            if d <= t {
                ready.append(r)
                entries[r]?.due = nil
            } else if later.map({ d < $0 }) ?? true {
                later = d
            }
        }
        nextDue = later
        // Oldest first, as they failed; ties by the request's own order so that runs repeat exactly.
        return ready.sorted { ($0.question, $0.voter, $0.sequence, $0.address.rawValue) < ($1.question, $1.voter, $1.sequence, $1.address.rawValue) }
    }

    /// `r` needs no more reads: verified, read and refused, or its question closed.
    mutating func done(_ r: VerificationState.Request) { entries[r] = nil }

    mutating func removeAll() {
        entries.removeAll()
        nextDue = nil
    }

    /// Drops a quarter of the entries: those not heard since they failed, then those heard least
    /// recently (amortized: a flood pays one sort per quarter of the table).
    private mutating func evictLeastRecentlyHeard() {
        let drop = max(1, entries.count / 4)
        let victims = entries.sorted {
            ($0.value.heardSinceFailing ? 1 : 0, $0.value.heardAt) < ($1.value.heardSinceFailing ? 1 : 0, $1.value.heardAt)
        }.prefix(drop).map(\.key)
        for r in victims { entries[r] = nil }
        evicted += victims.count
    }
}
