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
    /// Votes counted that the results do not show yet (they move in steps of several voters, so that
    /// no step names one voter's answer); absent when none.
    public var notYetShown: Int?
    /// The results of the current question; absent while hidden.
    public var results: Results?

    public enum State: String, Codable, Sendable {
        case open, closed
    }

    public struct Question: Codable, Sendable, Equatable {
        public var number: Int
        public var title: String?
        /// The kind of answer the question takes: `choice`, `trueFalse`, `multiSelect`, `numeric` or
        /// `ranked`, as `--json` names its results' kind (the page and the results follow it).
        public var kind: Kind
        /// The offered options, A first (none for true/false and numeric questions).
        public var options: [Option]
    }

    public struct Option: Codable, Sendable, Equatable {
        /// `A`…`H`.
        public var label: String
        public var text: String?
    }

    /// The question's kind by the names `--json` gives its results (`ResultKind`): when a question
    /// takes several answer kinds, the first of ranked, numeric, multi-select, true/false, single choice.
    public typealias Kind = ResultKind

    /// The results in the form that fits the question's kind (`kind`, and the page's `render` switch):
    /// - `bars`: one bar per option (single choice, true/false; multi-select: the voters whose selection
    ///   includes the option, with the top `combinations`);
    /// - `rounds` (ranked questions): every instant-runoff round, the `outcome`, and `bars`, the last
    ///   round's votes;
    /// - `histogram` (numeric questions): the `bins`, and the quartiles and median in the question's units
    ///   (`bars` is empty).
    /// Fields of another kind are absent.
    public struct Results: Codable, Sendable, Equatable {
        public var kind: ResultsKind
        public var bars: [Bar]
        /// Counted ballots (multi-select, ranked, numeric).
        public var ballots: Int?
        /// Multi-select: the most chosen exact combinations, most chosen first (at most six).
        public var combinations: [Combination]?
        /// Ranked: every round, the first one first.
        public var rounds: [Round]?
        /// Ranked: `winner`, `tie` or `noWinner`.
        public var outcome: String?
        /// Ranked: the winner's letter, with `winner`.
        public var winner: String?
        /// Ranked: the tied options' letters, with `tie`.
        public var tied: [String]?
        /// Numeric: the histogram, lowest values first.
        public var bins: [Bin]?
        /// Numeric: statistics as text in the question's units (`4.5`, `-0.25`); absent without ballots.
        public var minimum: String?
        public var lowerQuartile: String?
        public var median: String?
        public var upperQuartile: String?
        public var maximum: String?

        public init(kind: ResultsKind, bars: [Bar]) {
            self.kind = kind
            self.bars = bars
        }
    }

    public enum ResultsKind: String, Codable, Sendable {
        case bars, rounds, histogram
    }

    /// One bar: an option (or an answer, for kinds without options) and its count: the results'
    /// own ``OptionCount``. For a multi-select question, the voters whose selection includes the option.
    public typealias Bar = OptionCount

    /// A multi-select combination as a voter types it (`A+C`) and its ballots.
    public struct Combination: Codable, Sendable, Equatable {
        public var answer: String
        public var count: Int

        public init(answer: String, count: Int) {
            self.answer = answer
            self.count = count
        }
    }

    /// One instant-runoff round: `--json`'s own (`KindReport.Round`): `round` (1 first), `votes` of each
    /// option still in the race, `active` and `exhausted` ballots, `eliminated` (absent in the last).
    public typealias Round = KindReport.Round

    /// One histogram bin: `--json`'s own (`KindReport.Bin`): values `from`…`to` (inclusive) in the
    /// question's units, `label` as the page prints it (`4`, `10–19`).
    public typealias Bin = KindReport.Bin

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
                counts: [String: Int], notYetShown: Int = 0) {
        let kind = ResultKind(kinds: spec.kinds)
        let options: [Option] = switch kind {
        case .trueFalse, .numeric: []
        case .choice, .multiSelect, .ranked:
            (0..<spec.options).map { i in
                Option(label: Answer.choice(UInt8(i)).description,
                       text: i < spec.optionTexts.count ? spec.optionTexts[i] : nil)
            }
        }
        let code = joinCode.description
        self.init(vote: IDText.vote(joinCode.voteID), joinCode: code,
                  howToVote: HowToVote.line(joinCode: code, roster: roster, spec: spec),
                  roster: roster,
                  question: Question(number: Int(spec.number), title: spec.title, kind: kind, options: options),
                  state: open ? .open : .closed, hidden: hidden, voters: voters,
                  results: hidden ? nil : Self.results(spec: spec, counts: counts))
        if notYetShown > 0, !hidden { self.notYetShown = notYetShown }
    }
}
