import ClickerTally
import ClickerWire

/// What the projector page shows at one moment, and what `/results.json` and each server-sent event
/// carry: the join code and how to vote, the question, the poll's state and the results in the form
/// that fits the question's kind. Built from the counts every live consumer shows (the terminal view's:
/// moved in epochs while a question is open, exact once it is closed), so the page never tells more
/// than the instructor's screen.
///
/// It never carries a per-voter row, a voter ID, an address or a student's name; while the results are
/// hidden it carries no count at all (`results` is absent), so hiding them also keeps them from the
/// browser.
public struct ProjectorSnapshot: Codable, Sendable, Equatable {
    /// The vote ID (the join code's first group), as `IDText.vote` writes it.
    public var vote: String
    /// The whole join code, shown large on the page.
    public var joinCode: String
    /// One line on how to vote, with the join code in it.
    public var howToVote: String
    /// A roster (graded) poll: students vote with `--roster`.
    public var roster: Bool
    public var question: Question
    /// `open` while the current question takes votes, else `closed`.
    public var state: State
    /// The instructor hid the counts (the `h` key or D-Bus `ShowCounts`): `results` is absent.
    public var hidden: Bool
    /// Voters counted on the current question (as the terminal view shows it, hidden or not).
    public var voters: Int
    /// The results of the current question; absent while hidden.
    public var results: Results?

    public enum State: String, Codable, Sendable {
        case open, closed
    }

    public struct Question: Codable, Sendable, Equatable {
        public var number: Int
        public var title: String?
        /// The kind of answer the question takes: `choice`, `trueFalse`, `multiSelect`, `numeric` or
        /// `ranking` (the page and the results follow it).
        public var kind: Kind
        /// The offered options, A first (none for true/false and numeric questions).
        public var options: [Option]
    }

    public struct Option: Codable, Sendable, Equatable {
        /// `A`…`H`.
        public var label: String
        public var text: String?
    }

    public enum Kind: String, Codable, Sendable {
        case choice, trueFalse, multiSelect, numeric, ranking
    }

    /// The results in the form that fits the question's kind. Today every kind is shown as bars
    /// (`kind: "bars"`); instant-runoff rounds (`"rounds"`, ranked questions) and a histogram
    /// (`"histogram"`, numeric questions) add their own fields here and their own case in the page's
    /// `render` switch.
    public struct Results: Codable, Sendable, Equatable {
        public var kind: ResultsKind
        public var bars: [Bar]
    }

    public enum ResultsKind: String, Codable, Sendable {
        case bars
    }

    /// One bar: an option (or an answer, for kinds without options) and its count. For a
    /// multi-select question, the voters whose selection includes the option.
    public struct Bar: Codable, Sendable, Equatable {
        /// The option's letter, `true`/`false`, or the answer as `Answer.description` writes it.
        public var option: String
        public var text: String?
        public var count: Int
    }

    public init(vote: String, joinCode: String, howToVote: String, roster: Bool, question: Question, state: State,
                hidden: Bool, voters: Int, results: Results?) {
        self.vote = vote
        self.joinCode = joinCode
        self.howToVote = howToVote
        self.roster = roster
        self.question = question
        self.state = state
        self.hidden = hidden
        self.voters = voters
        self.results = results
    }
}

extension ProjectorSnapshot {
    /// The snapshot of a poll's current question.
    /// - Parameters:
    ///   - counts: count per answer, keyed as `Answer.description` writes it (the live counts); ignored
    ///     when `hidden`.
    ///   - voters: voters counted on the question.
    public init(joinCode: JoinCode, roster: Bool, spec: QuestionSpec, open: Bool, hidden: Bool, voters: Int,
                counts: [String: Int]) {
        let kind = Kind(spec)
        let options: [Option] = switch kind {
        case .trueFalse, .numeric: []
        case .choice, .multiSelect, .ranking:
            (0..<spec.options).map { i in
                Option(label: Answer.choice(UInt8(i)).description,
                       text: i < spec.optionTexts.count ? spec.optionTexts[i] : nil)
            }
        }
        let code = joinCode.description
        self.init(vote: IDText.vote(joinCode.voteID), joinCode: code,
                  howToVote: "Vote: clicker-vote \(roster ? "--roster " : "")\(code) \(Self.exampleAnswer(kind))",
                  roster: roster,
                  question: Question(number: Int(spec.number), title: spec.title, kind: kind, options: options),
                  state: open ? .open : .closed, hidden: hidden, voters: voters,
                  results: hidden ? nil : Self.results(kind: kind, options: options, counts: counts))
    }

    /// The results of a question of `kind` from its counts per answer.
    static func results(kind: Kind, options: [Option], counts: [String: Int]) -> Results {
        switch kind {
        case .choice:
            return Results(kind: .bars, bars: options.map { Bar(option: $0.label, text: $0.text, count: counts[$0.label] ?? 0) })
        case .trueFalse:
            return Results(kind: .bars, bars: ["true", "false"].map { Bar(option: $0, text: nil, count: counts[$0] ?? 0) })
        case .multiSelect:
            // Each option's bar counts the voters whose selection includes it.
            var selected = [Int](repeating: 0, count: options.count)
            for (text, n) in counts {
                guard case .multiSelect(let mask)? = Answer(text) else { continue }
                for i in selected.indices where mask & (1 << i) != 0 { selected[i] += n }
            }
            return Results(kind: .bars, bars: options.enumerated().map { i, o in
                Bar(option: o.label, text: o.text, count: selected[i])
            })
        case .numeric, .ranking:
            // Until numeric questions get their histogram and ranked ones their instant-runoff rounds:
            // one bar per answer given, numbers in order, rankings in wire order.
            let given = counts.compactMap { text, n in Answer(text).map { ($0, n) } }.filter { $0.1 > 0 }.sorted {
                if case .numeric(let a) = $0.0, case .numeric(let b) = $1.0 { return a < b }
                return $0.0 < $1.0
            }
            return Results(kind: .bars, bars: given.map { Bar(option: $0.0.description, text: nil, count: $0.1) })
        }
    }

    /// An answer of `kind` for the page's line on how to vote.
    static func exampleAnswer(_ kind: Kind) -> String {
        switch kind {
        case .choice: "A"
        case .trueFalse: "true"
        case .multiSelect: "A+C"
        case .numeric: "42"
        case .ranking: "B>A>C"
        }
    }
}

extension ProjectorSnapshot.Kind {
    /// The kind a question takes (the first of its kinds in this order, when it takes several).
    public init(_ spec: QuestionSpec) {
        let k = spec.kinds
        if k.contains(.choice) { self = .choice }
        else if k.contains(.trueFalse) { self = .trueFalse }
        else if k.contains(.multiSelect) { self = .multiSelect }
        else if k.contains(.ranking) { self = .ranking }
        else if k.contains(.numeric) { self = .numeric }
        else { self = .choice }
    }
}
