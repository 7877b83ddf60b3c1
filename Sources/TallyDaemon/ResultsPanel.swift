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
        case .multiSelect(let m):
            bars = m.options.map { .init(label: $0.option, count: $0.count, text: $0.text) }
            caption = "Each option (a ballot may select several) · \(Self.ballots(m.ballots))"
        case .numeric(let n):
            bars = n.bins.map { .init(label: n.label($0), count: $0.count) }
            caption = "Histogram · \(Self.ballots(n.ballots))"
        case .ranked(let r):
            bars = r.rounds.last?.votes.map { .init(label: $0.option, count: $0.count, text: $0.text) } ?? []
            caption = "Round \(r.rounds.count) of instant-runoff · \(Self.ballots(r.ballots))"
        }
        // The bars draw the histogram; without a ballot a numeric question has no line (the caption says so).
        if case .numeric(let n) = results, n.ballots == 0 {
            details = []
        } else {
            details = results.lines(combinationsShown: Self.combinationsShown, histogram: false).map(ResultLines.sentence)
        }
    }

    static func ballots(_ n: Int) -> String { n == 1 ? "1 ballot" : "\(n) ballots" }
}
