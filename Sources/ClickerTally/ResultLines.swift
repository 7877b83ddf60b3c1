import ClickerWire

/// The one writer of a question's results as lines of text, by kind: the combinations of a
/// multi-select, the statistics and histogram of a numeric question, every instant-runoff round and
/// the outcome. The text summary (`clicker-tally` at the end of a run, `results`), the live view's
/// lines under its bars and the chart's note all take their lines from here. Lines start in lower
/// case; a view that shows them as sentences capitalizes the first letter. Pure.
public enum ResultLines {
    /// `combinations: A+C 3 · B+C 3`, the first `shown` (all when nil) and how many more; nothing
    /// without a ballot.
    public static func combinations(_ list: [MultiSelectResults.Combination], shown: Int? = nil) -> [String] {
        guard !list.isEmpty else { return [] }
        let listed = list.prefix(shown ?? list.count).map { "\($0.answer) \($0.count)" }
        let more = list.count > listed.count ? " · \(list.count - listed.count) more" : ""
        return ["combinations: " + listed.joined(separator: " · ") + more]
    }

    /// `median 1.75 · quartiles 0.5 and 2.25 · lowest -0.5 · highest 2.5`, each in half wire units
    /// written with the question's decimals (one more when it falls halfway); nil without a ballot.
    public static func statistics(median: Int?, lowerQuartile: Int?, upperQuartile: Int?, lowest: Int?, highest: Int?,
                                  decimals: Int) -> String? {
        guard let median, let lowerQuartile, let upperQuartile, let lowest, let highest else { return nil }
        func t(_ h: Int) -> String { NumericResults.text(halfUnits: h, decimals: decimals) }
        return "median \(t(median)) · quartiles \(t(lowerQuartile)) and \(t(upperQuartile))"
            + " · lowest \(t(lowest)) · highest \(t(highest))"
    }

    /// `histogram: 1.5: 1 · 2.0: 3`, from the bins' labels and counts.
    public static func histogram(_ bins: [(label: String, count: Int)]) -> String {
        "histogram: " + bins.map { "\($0.label): \($0.count)" }.joined(separator: " · ")
    }

    /// `round 1: A 4 · B 3 · C 3 · exhausted 0 → C out`.
    public static func round(_ number: Int, votes: [OptionCount], exhausted: Int, eliminated: String?) -> String {
        "round \(number): " + votes.map { "\($0.option) \($0.count)" }.joined(separator: " · ")
            + " · exhausted \(exhausted)" + (eliminated.map { " → \($0) out" } ?? "")
    }

    /// How an instant-runoff count ended: `winner B (5 of 9 active ballots, round 2)`,
    /// `tie A, C (3 each, round 2)`, `no winner (no active ballot)`; `last` is the last round's votes
    /// and active ballots, `rounds` their number.
    public static func outcome(_ outcome: RankedResults.Outcome, leaders: [String], last: (votes: [OptionCount], active: Int)?,
                               rounds: Int) -> String {
        switch outcome {
        case .winner:
            let votes = last?.votes.first { $0.option == leaders.first }?.count ?? 0
            return "winner \(leaders.joined()) (\(votes) of \(last?.active ?? 0) active ballots, round \(rounds))"
        case .tie:
            return "tie " + leaders.joined(separator: ", ") + " (\(last?.votes.first?.count ?? 0) each, round \(rounds))"
        case .noWinner:
            return "no winner (no active ballot)"
        }
    }

    /// A line as a sentence: its first letter capitalized.
    public static func sentence(_ line: String) -> String { line.prefix(1).uppercased() + line.dropFirst() }
}

extension KindResults {
    /// The kind's lines (``ResultLines``): nothing for single choice and true/false (their counts say
    /// it all). `combinationsShown`: most combinations listed; `histogram`: whether a numeric
    /// question's histogram gets a line (a view that draws its bars leaves it out).
    public func lines(combinationsShown: Int? = nil, histogram: Bool = true) -> [String] {
        switch self {
        case .choice, .trueFalse:
            return []
        case .multiSelect(let m):
            return ResultLines.combinations(m.combinations, shown: combinationsShown)
        case .numeric(let n):
            guard let stats = ResultLines.statistics(median: n.median, lowerQuartile: n.lowerQuartile,
                                                     upperQuartile: n.upperQuartile, lowest: n.minimum,
                                                     highest: n.maximum, decimals: n.decimals) else { return ["no ballots"] }
            return [stats] + (histogram ? [ResultLines.histogram(n.bins.map { (n.label($0), $0.count) })] : [])
        case .ranked(let r):
            return r.rounds.map { ResultLines.round($0.number, votes: $0.votes, exhausted: $0.exhausted, eliminated: $0.eliminated) }
                + [r.summary]
        }
    }
}

extension KindReport {
    /// The kind's lines for a text summary (`clicker-tally` at the end of a run, `results`), as
    /// ``KindResults/lines(combinationsShown:histogram:)`` writes them, from the report as `--json`
    /// and D-Bus carry it.
    public var summaryLines: [String] {
        switch kind {
        case .choice, .trueFalse:
            return []
        case .multiSelect:
            return ResultLines.combinations(combinations ?? [])
        case .numeric:
            let d = decimals ?? 0
            guard let stats = ResultLines.statistics(median: halfUnits(median), lowerQuartile: halfUnits(lowerQuartile),
                                                     upperQuartile: halfUnits(upperQuartile), lowest: halfUnits(minimum),
                                                     highest: halfUnits(maximum), decimals: d) else { return ["no ballots"] }
            return [stats, ResultLines.histogram((bins ?? []).map { ($0.label, $0.count) })]
        case .ranked:
            let rounds = rounds ?? []
            let leaders: [String] = switch outcome {
            case .winner?: winner.map { [$0] } ?? []
            case .tie?: tied ?? []
            case .noWinner?, nil: []
            }
            return rounds.map { ResultLines.round($0.round, votes: $0.votes, exhausted: $0.exhausted, eliminated: $0.eliminated) }
                + [ResultLines.outcome(outcome ?? .noWinner, leaders: leaders, last: rounds.last.map { ($0.votes, $0.active) },
                                       rounds: rounds.count)]
        }
    }

    /// A statistic back in half wire units: the report carries `halfUnits / 2 / 10^decimals`
    /// (``NumericResults/number(halfUnits:)``), which a Double holds exactly enough for rounding to
    /// give the integer back for every 16-bit value and up to 4 decimals.
    func halfUnits(_ v: Double?) -> Int? {
        guard let v, v.isFinite else { return nil }
        var scale = 2.0
        for _ in 0..<(decimals ?? 0) { scale *= 10 }
        let h = (v * scale).rounded()
        // A report decoded from elsewhere may hold anything: out of Int's range is no statistic.
        return abs(h) < 1e15 ? Int(h) : nil
    }
}
