/// Log lines about rejected reports, at most one per reason per `interval`: the first rejection of
/// a reason is said at once, later ones are added up and said together when the interval is over
/// (a flood of forged votes would otherwise write a line per pass). Pure: the caller passes the time.
public struct RejectionSummary: Sendable {
    public let interval: Duration
    private var unsaid: [String: Int] = [:]
    private var lastSaid: [String: Duration] = [:]
    private var totals: [String: Int] = [:]

    public init(interval: Duration = .seconds(5)) { self.interval = interval }

    /// Takes the totals by reason now; returns the lines due at `now`.
    public mutating func update(_ rejections: [TallyViewModel.Rejection], at now: Duration) -> [String] {
        for r in rejections {
            let new = r.count - (totals[r.reason] ?? 0)
            totals[r.reason] = r.count
            if new > 0 { unsaid[r.reason, default: 0] += new }
        }
        return due(at: now)
    }

    /// The lines due at `now` (reasons whose interval is over and that have something unsaid).
    public mutating func due(at now: Duration) -> [String] {
        var lines: [String] = []
        for reason in unsaid.keys.sorted() {
            guard let n = unsaid[reason], n > 0 else { continue }
            if let last = lastSaid[reason], now - last < interval { continue }
            let first = lastSaid[reason] == nil
            let reasonText = TerminalText.safe(reason)
            lines.append(first
                ? "rejected \(n) \(reasonText) (total \(totals[reason] ?? n))"
                : "rejected \(n) \(reasonText) in the last \(Format.age(now - (lastSaid[reason] ?? now))) (total \(totals[reason] ?? n))")
            unsaid[reason] = 0
            lastSaid[reason] = now
        }
        return lines
    }

    /// When the next line may be due, if anything is waiting.
    public func nextDue() -> Duration? {
        unsaid.filter { $0.value > 0 }.keys.compactMap { lastSaid[$0].map { $0 + interval } }.min()
    }
}
