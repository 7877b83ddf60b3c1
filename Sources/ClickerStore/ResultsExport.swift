import ClickerTally
import ClickerWire

/// The results by kind in the exports: the summary CSV's result columns, the instant-runoff
/// rounds CSV, and the JSON's `results` (ClickerTally's ``KindReport``). Pure.
extension Exporter {
    /// Result columns of the summary CSV, after the per-option counts (docs/GUIDE.md, "Results by kind" and "Exports").
    public static let resultColumns = ["kind", "true", "false", "minimum", "lower_quartile", "median", "upper_quartile",
                                       "maximum", "histogram", "combinations", "rounds", "outcome", "winner"]

    /// Columns of the rounds CSV: one row per option in the race in each round of each ranked question.
    public static let roundColumns = ["poll", "question", "round", "option", "votes", "active", "exhausted", "eliminated"]

    /// The results of one summarised question.
    public static func results(_ s: QuestionSummary) -> KindResults {
        KindResults(spec: QuestionSpec(s.question), counts: s.answers)
    }

    /// The per-option counts of the summary CSV's letter columns: single choice and multi-select
    /// counts, a ranked question's first preferences (its first round); nil for the other kinds.
    public static func optionCounts(_ r: KindResults) -> [Int]? {
        switch r {
        case .choice(let c): c.options.map(\.count)
        case .multiSelect(let m): m.options.map(\.count)
        case .ranked(let r): r.count.rounds.first.map { $0.votes.map { $0 ?? 0 } }
        case .trueFalse, .numeric: nil
        }
    }

    /// The values of ``resultColumns`` for one question. Lists inside a cell are `label: count`
    /// pairs joined by `; `.
    public static func resultCells(_ r: KindResults) -> [String] {
        var cells = [String](repeating: "", count: resultColumns.count)
        func set(_ column: String, _ value: String) {
            if let i = resultColumns.firstIndex(of: column) { cells[i] = value }
        }
        set("kind", r.kind.rawValue)
        switch r {
        case .choice:
            break
        case .trueFalse(let c):
            for o in c.options { set(o.option, String(o.count)) }
        case .multiSelect(let m):
            set("combinations", m.combinations.map { "\($0.answer): \($0.count)" }.joined(separator: "; "))
        case .numeric(let n):
            for (column, value) in [("minimum", n.minimum), ("lower_quartile", n.lowerQuartile), ("median", n.median),
                                    ("upper_quartile", n.upperQuartile), ("maximum", n.maximum)] {
                set(column, value.map(n.text(halfUnits:)) ?? "")
            }
            set("histogram", n.bins.map { "\(n.label($0)): \($0.count)" }.joined(separator: "; "))
        case .ranked(let rr):
            set("rounds", String(rr.rounds.count))
            set("outcome", rr.outcome.rawValue)
            set("winner", rr.leaders.joined(separator: " "))
        }
        return cells
    }

    /// Rows of the rounds CSV (header included) for the ranked questions; nil when there is none.
    public static func roundsCSV(poll: Int64, summaries: [QuestionSummary]) -> String? {
        var rows = [roundColumns]
        for s in summaries {
            guard case .ranked(let r) = results(s) else { continue }
            for round in r.rounds {
                for v in round.votes {
                    rows.append([String(poll), String(s.question.number), String(round.number), v.option, String(v.count),
                                 String(round.active), String(round.exhausted), round.eliminated ?? ""])
                }
            }
        }
        return rows.count > 1 ? csv(rows) : nil
    }
}
