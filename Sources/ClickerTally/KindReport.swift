/// A question's results by kind as plain data: what `--json`, the D-Bus `Results` call, the JSON
/// export and the projector page carry (docs/GUIDE.md, "Results by kind", gives the shape). Fields that do
/// not apply to the kind are absent.
public struct KindReport: Codable, Sendable, Hashable {
    /// A histogram bin: values `from…to` (inclusive) in the question's units.
    public struct Bin: Codable, Sendable, Hashable {
        public var from: Double
        public var to: Double
        /// `4` or `10–19`, with the question's decimals.
        public var label: String
        public var count: Int

        public init(from: Double, to: Double, label: String, count: Int) {
            self.from = from
            self.to = to
            self.label = label
            self.count = count
        }
    }

    /// One instant-runoff round.
    public struct Round: Codable, Sendable, Hashable {
        public var round: Int
        /// Votes of the options still in the race.
        public var votes: [OptionCount]
        public var active: Int
        public var exhausted: Int
        public var eliminated: String?

        public init(round: Int, votes: [OptionCount], active: Int, exhausted: Int, eliminated: String? = nil) {
            self.round = round
            self.votes = votes
            self.active = active
            self.exhausted = exhausted
            self.eliminated = eliminated
        }
    }

    public var kind: ResultKind
    /// Counted ballots (ranked: cast, active or exhausted).
    public var ballots: Int
    /// choice, trueFalse, multiSelect: every offered option's count.
    public var options: [OptionCount]?
    /// multiSelect: exact combinations, most chosen first.
    public var combinations: [MultiSelectResults.Combination]?
    /// numeric: the question's decimals, the statistics in its units (absent without ballots), the bins.
    public var decimals: Int?
    public var minimum: Double?
    public var lowerQuartile: Double?
    public var median: Double?
    public var upperQuartile: Double?
    public var maximum: Double?
    public var bins: [Bin]?
    /// ranked: every round, the outcome, and the winner or the tied options.
    public var rounds: [Round]?
    public var outcome: RankedResults.Outcome?
    public var winner: String?
    public var tied: [String]?

    public init(_ results: KindResults) {
        kind = results.kind
        switch results {
        case .choice(let c), .trueFalse(let c):
            ballots = c.ballots
            options = c.options
        case .multiSelect(let m):
            ballots = m.ballots
            options = m.options
            combinations = m.combinations
        case .numeric(let n):
            ballots = n.ballots
            decimals = n.decimals
            minimum = n.minimum.map(n.number(halfUnits:))
            lowerQuartile = n.lowerQuartile.map(n.number(halfUnits:))
            median = n.median.map(n.number(halfUnits:))
            upperQuartile = n.upperQuartile.map(n.number(halfUnits:))
            maximum = n.maximum.map(n.number(halfUnits:))
            bins = n.bins.map {
                Bin(from: n.number(halfUnits: 2 * $0.lowest), to: n.number(halfUnits: 2 * $0.highest), label: n.label($0),
                    count: $0.count)
            }
        case .ranked(let r):
            ballots = r.ballots
            rounds = r.rounds.map {
                Round(round: $0.number, votes: $0.votes, active: $0.active, exhausted: $0.exhausted, eliminated: $0.eliminated)
            }
            outcome = r.outcome
            switch r.outcome {
            case .winner: winner = r.leaders.first
            case .tie: tied = r.leaders
            case .noWinner: break
            }
        }
    }
}
