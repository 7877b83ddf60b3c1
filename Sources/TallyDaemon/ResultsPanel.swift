import ClickerTally
import TerminalView

/// What the live view and the plain summary show of a question's results, by its kind: the bars
/// (one per option, per histogram bin, or per option in the last instant-runoff round), a caption
/// saying what the bars are, and the kind's lines under them.
public struct ResultsPanel: Sendable, Equatable {
    public var bars: [TallyViewModel.Answer]
    public var caption: String?
    public var details: [String]

    /// Most combinations of a multi-select listed.
    public static let combinationsShown = 6

    public init(_ results: KindResults) {
        switch results {
        case .choice(let c), .trueFalse(let c):
            bars = c.options.map { .init(label: $0.option, count: $0.count, text: $0.text) }
            caption = nil
            details = []
        case .multiSelect(let m):
            bars = m.options.map { .init(label: $0.option, count: $0.count, text: $0.text) }
            caption = "Each option (a ballot may select several) · \(Self.ballots(m.ballots))"
            let top = m.combinations.prefix(Self.combinationsShown).map { "\($0.answer) \($0.count)" }
            let more = m.combinations.count > Self.combinationsShown ? " · \(m.combinations.count - Self.combinationsShown) more" : ""
            details = top.isEmpty ? [] : ["Combinations: " + top.joined(separator: " · ") + more]
        case .numeric(let n):
            bars = n.bins.map { .init(label: n.label($0), count: $0.count) }
            caption = "Histogram · \(Self.ballots(n.ballots))"
            if let median = n.median, let q1 = n.lowerQuartile, let q3 = n.upperQuartile, let lo = n.minimum, let hi = n.maximum {
                details = ["Median \(n.text(halfUnits: median)) · quartiles \(n.text(halfUnits: q1)) and \(n.text(halfUnits: q3))"
                    + " · lowest \(n.text(halfUnits: lo)) · highest \(n.text(halfUnits: hi))"]
            } else {
                details = []
            }
        case .ranked(let r):
            let last = r.rounds.last
            bars = last?.votes.map { .init(label: $0.option, count: $0.count, text: $0.text) } ?? []
            caption = "Round \(r.rounds.count) of instant-runoff · \(Self.ballots(r.ballots))"
            details = r.rounds.map { round in
                let votes = round.votes.map { "\($0.option) \($0.count)" }.joined(separator: " · ")
                let out = round.eliminated.map { " → \($0) out" } ?? ""
                return "Round \(round.number): \(votes) · exhausted \(round.exhausted)\(out)"
            } + [r.summary.prefix(1).uppercased() + r.summary.dropFirst()]
        }
    }

    static func ballots(_ n: Int) -> String { n == 1 ? "1 ballot" : "\(n) ballots" }
}

extension KindReport {
    /// The kind's lines for a text summary (`clicker-tally` at the end of a run, `results`): the
    /// combinations of a multi-select, the statistics of a numeric question, every instant-runoff
    /// round and the outcome. Empty for single choice and true/false (their counts say it all).
    public var summaryLines: [String] {
        switch kind {
        case .choice, .trueFalse:
            return []
        case .multiSelect:
            let list = (combinations ?? []).map { "\($0.answer) \($0.count)" }
            return list.isEmpty ? [] : ["combinations: " + list.joined(separator: " · ")]
        case .numeric:
            guard let median, let lowerQuartile, let upperQuartile, let minimum, let maximum else { return ["no ballots"] }
            let hist = (bins ?? []).map { "\($0.label): \($0.count)" }.joined(separator: " · ")
            return ["median \(number(median)) · quartiles \(number(lowerQuartile)) and \(number(upperQuartile))"
                        + " · lowest \(number(minimum)) · highest \(number(maximum))",
                    "histogram: " + hist]
        case .ranked:
            let rounds = (rounds ?? []).map { r in
                "round \(r.round): " + r.votes.map { "\($0.option) \($0.count)" }.joined(separator: " · ")
                    + " · exhausted \(r.exhausted)" + (r.eliminated.map { " → \($0) out" } ?? "")
            }
            let end: String
            switch outcome {
            case .winner?: end = "winner " + (winner ?? "?")
            case .tie?: end = "tie " + (tied ?? []).joined(separator: ", ")
            case .noWinner?, nil: end = "no winner (no active ballot)"
            }
            return rounds + [end]
        }
    }

    /// A statistic with the question's decimals, one more when it falls halfway.
    func number(_ v: Double) -> String {
        let d = decimals ?? 0
        var scale = 1.0
        for _ in 0..<d { scale *= 10 }
        let halves = (v * scale * 2).rounded()
        return Int(halves) % 2 == 0
            ? NumericResults.format(Int(halves) / 2, decimals: d)
            : NumericResults.format(Int(halves) * 5, decimals: d + 1)
    }
}
