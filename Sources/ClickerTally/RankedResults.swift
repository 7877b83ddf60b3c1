import ClickerWire

/// Ranked results: the instant-runoff count (``InstantRunoff``), every round of it, in letters.
public struct RankedResults: Sendable, Hashable {
    /// One round as shown and exported.
    public struct Round: Sendable, Hashable {
        /// 1 for the first round.
        public var number: Int
        /// Votes of each option still in the race, A first.
        public var votes: [OptionCount]
        /// Ballots that still count for an option in the race.
        public var active: Int
        /// Ballots whose ranked options have all been eliminated, by the start of this round.
        public var exhausted: Int
        /// The option eliminated at the end of this round (nil in the last round).
        public var eliminated: String?
    }

    /// How the count ended.
    public enum Outcome: String, Sendable, Hashable, Codable {
        /// One option holds a majority of the active ballots.
        case winner
        /// Every option still in the race has the same votes.
        case tie
        /// No active ballot: none was cast, or all are exhausted.
        case noWinner
    }

    /// The count itself (option indices).
    public let count: InstantRunoff
    /// Ballots cast (active and exhausted).
    public var ballots: Int { count.ballots }
    public let rounds: [Round]
    public let outcome: Outcome
    /// The winner's letter, or the tied options' letters; empty for no winner.
    public let leaders: [String]

    public init(count: InstantRunoff, optionTexts: [String] = []) {
        self.count = count
        func letter(_ i: Int) -> String { Answer.choice(UInt8(i)).description }
        rounds = count.rounds.enumerated().map { i, r in
            Round(number: i + 1,
                  votes: r.votes.indices.compactMap { o in
                      r.votes[o].map { OptionCount(option: letter(o), text: o < optionTexts.count ? optionTexts[o] : nil, count: $0) }
                  },
                  active: r.active, exhausted: r.exhausted, eliminated: r.eliminated.map { letter(Int($0)) })
        }
        switch count.outcome {
        case .winner(let w):
            outcome = .winner
            leaders = [letter(Int(w))]
        case .tie(let tied):
            outcome = .tie
            leaders = tied.map { letter(Int($0)) }
        case .noWinner:
            outcome = .noWinner
            leaders = []
        }
    }

    /// One line for the outcome: `winner B (6 of 10 active ballots, round 3)`, `tie A, C (3 each,
    /// round 2)`, `no winner (no active ballot)` (written by ``ResultLines/outcome(_:leaders:last:rounds:)``).
    public var summary: String {
        ResultLines.outcome(outcome, leaders: leaders, last: rounds.last.map { ($0.votes, $0.active) }, rounds: rounds.count)
    }
}
