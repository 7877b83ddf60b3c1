import ClickerTransport

/// When the tally may start a GATT read of a ballot. On Linux an outgoing LE connection pauses the
/// scan, so a read costs the reports the scanner would have heard meanwhile. While ballots are still
/// arriving (a new or changed ballot counted within `quietAfter`), reads may take at most `share` of
/// the radio's time: a token bucket that fills at `share` of the time that passes, holds at most
/// `burst`, and is charged each read's whole duration (an upper bound on the scan time it takes).
/// Once the air has been quiet for `quietAfter`, nothing is left to lose and reads run freely,
/// uncharged. A read refused now is asked again when its ballot is heard again.
///
/// Pure value; times are the radio's (report timestamps), so a simulated air on a virtual clock
/// gives the same decisions on any machine.
public struct ReadBudget: Sendable, Equatable {
    public let share: Double
    public let burst: Duration
    public let quietAfter: Duration
    /// Read time available, in nanoseconds; negative when reads ran over it.
    public private(set) var balance: Int64
    /// Read time charged so far (reads started while ballots were arriving), for the figures.
    public private(set) var charged: Duration = .zero
    private var refilledAt: RadioInstant?
    private var lastCounted: RadioInstant?

    public init(share: Double = 0.05, burst: Duration = .seconds(1), quietAfter: Duration = .seconds(2)) {
        self.share = share
        self.burst = burst
        self.quietAfter = quietAfter
        balance = burst.nanoseconds
    }

    /// A new or changed ballot was counted at `t`.
    public mutating func counted(at t: RadioInstant) {
        refill(at: t)
        if lastCounted.map({ t > $0 }) ?? true { lastCounted = t }
    }

    /// No new or changed ballot was counted within `quietAfter` before `t`.
    public func isQuiet(at t: RadioInstant) -> Bool {
        guard let last = lastCounted else { return true }
        return t >= last + quietAfter
    }

    /// Whether a read may start at `t`: the air is quiet, or read time is left.
    public mutating func mayStart(at t: RadioInstant) -> Bool {
        refill(at: t)
        return isQuiet(at: t) || balance > 0
    }

    /// A read that started at `start` has ended at `end`: charged its whole duration if the air was
    /// busy when it started.
    public mutating func ended(startedAt start: RadioInstant, busy: Bool, at end: RadioInstant) {
        refill(at: end)
        guard busy, end > start else { return }
        let took = Int64(end.nanoseconds - start.nanoseconds)
        balance -= took
        charged += .nanoseconds(took)
    }

    private mutating func refill(at t: RadioInstant) {
        defer { if refilledAt.map({ t > $0 }) ?? true { refilledAt = t } }
        guard let last = refilledAt, t > last else { return }
        let earned = Int64(Double(t.nanoseconds - last.nanoseconds) * share)
        balance = min(burst.nanoseconds, balance + earned)
    }
}

fileprivate extension Duration {
    /// This duration in whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (s, atto) = components
        let (ns, overflow) = s.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (s < 0 ? .min : .max) : ns &+ atto / 1_000_000_000
    }
}
