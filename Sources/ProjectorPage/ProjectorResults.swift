import ClickerTally
import ClickerWire

/// The snapshot's results from the live counts, by kind: the same per-kind results the terminal view,
/// `--json` and the exports show (ClickerTally's `KindResults`), in the page's form.
extension ProjectorSnapshot {
    /// Combinations of a multi-select question the page lists, most chosen first.
    static let shownCombinations = 6

    /// The results of `spec` from its counts per answer (keyed as `Answer.description` writes it; keys
    /// that are not an answer, or answers the question does not take, are left out).
    static func results(spec: QuestionSpec, counts: [String: Int]) -> Results {
        results(kindResults(spec: spec, counts: counts))
    }

    /// The per-kind results of `spec` from the live counts (keyed as `Answer.description` writes them):
    /// what the page's results and its SVG chart are both drawn from.
    public static func kindResults(spec: QuestionSpec, counts: [String: Int]) -> KindResults {
        var answers: [Answer: Int] = [:]
        for (text, n) in counts where n > 0 {
            if let a = Answer(text) { answers[a, default: 0] += n }
        }
        return KindResults(spec: spec, counts: answers)
    }

    static func results(_ kind: KindResults) -> Results {
        switch kind {
        case .choice(let c), .trueFalse(let c):
            return Results(kind: .bars, bars: c.options)
        case .multiSelect(let m):
            var r = Results(kind: .bars, bars: m.options)
            r.ballots = m.ballots
            r.combinations = m.combinations.prefix(shownCombinations).map { Combination(answer: $0.answer, count: $0.count) }
            return r
        case .ranked(let k):
            var r = Results(kind: .rounds, bars: k.rounds.last?.votes ?? [])
            r.ballots = k.ballots
            r.rounds = KindReport(kind).rounds
            r.outcome = k.outcome.rawValue
            switch k.outcome {
            case .winner: r.winner = k.leaders.first
            case .tie: r.tied = k.leaders
            case .noWinner: break
            }
            return r
        case .numeric(let n):
            var r = Results(kind: .histogram, bars: [])
            r.ballots = n.ballots
            r.bins = KindReport(kind).bins
            r.minimum = n.minimum.map(n.text(halfUnits:))
            r.lowerQuartile = n.lowerQuartile.map(n.text(halfUnits:))
            r.median = n.median.map(n.text(halfUnits:))
            r.upperQuartile = n.upperQuartile.map(n.text(halfUnits:))
            r.maximum = n.maximum.map(n.text(halfUnits:))
            return r
        }
    }
}
