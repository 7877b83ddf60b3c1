import ClickerWire

/// Instant-runoff count of ranked answers, partial rankings included.
///
/// The rules, in order:
/// 1. Each active ballot counts for its most preferred option that is still in the race.
/// 2. An option with more than half of the active ballots wins (a majority: 50 % + 1).
/// 3. Otherwise the option with the fewest votes is eliminated from every ballot. A ballot whose
///    ranked options are all eliminated is *exhausted* and leaves the count (it is no longer active).
/// 4. Repeat until there is a winner, a tie, or no active ballot.
///
/// Ties:
/// - **Elimination.** Among the options tied for fewest votes, the one with fewer votes in the
///   previous round is eliminated, and so on back to the first round; if they are tied in every
///   round, the one latest in letter order (H before G … before A) is eliminated.
/// - **Result.** When every option still in the race has the same number of votes (two or more of
///   them), the count stops and the result is a tie between them: eliminating one would be arbitrary.
///
/// The count is pure and deterministic: the order of the ballots does not matter.
public struct InstantRunoff: Sendable, Hashable {
    /// One round: the votes of each option still in the race, and what happened at its end.
    public struct Round: Sendable, Hashable {
        /// Votes per option index (0 = A …) for the options in the race; nil for options out of it.
        public var votes: [Int?]
        /// Ballots that still count for an option in the race.
        public var active: Int
        /// Ballots whose ranked options have all been eliminated (cumulative).
        public var exhausted: Int
        /// The option eliminated at the end of this round; nil in the last round.
        public var eliminated: UInt8?

        /// Options in the race this round.
        public var inRace: [UInt8] { votes.indices.compactMap { votes[$0] == nil ? nil : UInt8($0) } }
    }

    public enum Outcome: Sendable, Hashable {
        /// One option holds a majority of the active ballots in the last round.
        case winner(UInt8)
        /// Every option still in the race has the same votes (two or more options).
        case tie([UInt8])
        /// No ballot is active: none was cast, or all are exhausted.
        case noWinner
    }

    public let options: Int
    public let ballots: Int
    public let rounds: [Round]
    public let outcome: Outcome

    /// Counts `rankings` over `options` options (1…8). Entries naming an option at or above
    /// `options` are ignored (the tally rejects such answers as `answerNotOffered` before this).
    public init(options: Int, rankings: some Sequence<Ranking>) {
        var tally = Grouped(options: options)
        for r in rankings { tally.add(r) }
        self = tally.count()
    }

    /// Ballots grouped by their ranking, so that a count after each new ballot costs one pass over
    /// the distinct rankings, not over every ballot.
    public struct Grouped: Sendable, Hashable {
        public let options: Int
        private var index: [Ranking: Int] = [:]
        private var orders: [[UInt8]] = []
        private var weights: [Int] = []
        public private(set) var ballots = 0

        public init(options: Int) {
            self.options = max(1, min(options, Answer.maxOptions))
        }

        public mutating func add(_ r: Ranking, count: Int = 1) {
            guard count > 0 else { return }
            ballots += count
            if let i = index[r] {
                weights[i] += count
            } else {
                index[r] = orders.count
                orders.append(r.order.filter { Int($0) < options })
                weights.append(count)
            }
        }

        /// Removes `count` ballots with ranking `r` (a voter who changed answer); no-op if absent.
        public mutating func remove(_ r: Ranking, count: Int = 1) {
            guard let i = index[r] else { return }
            let n = min(count, weights[i])
            weights[i] -= n
            ballots -= n
        }

        public func count() -> InstantRunoff {
            let n = options
            // Each group sits in the bucket of its current top option; eliminating an option moves
            // only the groups in its bucket, so a whole count touches each ranked entry once.
            var position = [Int](repeating: 0, count: orders.count)
            var buckets = [[Int]](repeating: [], count: n)
            var votes = [Int](repeating: 0, count: n)
            var inRace = [Bool](repeating: true, count: n)
            var exhausted = 0

            func place(_ g: Int) {
                let order = orders[g]
                var p = position[g]
                while p < order.count, !inRace[Int(order[p])] { p += 1 }
                position[g] = p
                if p < order.count {
                    let o = Int(order[p])
                    buckets[o].append(g)
                    votes[o] += weights[g]
                } else {
                    exhausted += weights[g]
                }
            }
            for g in orders.indices where weights[g] > 0 { place(g) }

            var rounds: [Round] = []
            while true {
                let active = ballots - exhausted
                var round = Round(votes: (0..<n).map { inRace[$0] ? votes[$0] : nil }, active: active,
                                  exhausted: exhausted, eliminated: nil)
                let racing = (0..<n).filter { inRace[$0] }
                if active == 0 {
                    rounds.append(round)
                    return InstantRunoff(options: n, ballots: ballots, rounds: rounds, outcome: .noWinner)
                }
                if let w = racing.first(where: { 2 * votes[$0] > active }) {
                    rounds.append(round)
                    return InstantRunoff(options: n, ballots: ballots, rounds: rounds, outcome: .winner(UInt8(w)))
                }
                let fewest = racing.map { votes[$0] }.min() ?? 0
                var lowest = racing.filter { votes[$0] == fewest }
                if lowest.count == racing.count {
                    rounds.append(round)
                    return InstantRunoff(options: n, ballots: ballots, rounds: rounds,
                                         outcome: .tie(racing.map(UInt8.init)))
                }
                // Back through earlier rounds while the tie lasts, then the latest letter.
                for earlier in rounds.reversed() where lowest.count > 1 {
                    let least = lowest.map { earlier.votes[$0] ?? 0 }.min() ?? 0
                    lowest = lowest.filter { (earlier.votes[$0] ?? 0) == least }
                }
                let out = lowest.max() ?? racing[racing.count - 1]
                round.eliminated = UInt8(out)
                rounds.append(round)
                inRace[out] = false
                votes[out] = 0
                let moving = buckets[out]
                buckets[out] = []
                for g in moving { place(g) }
            }
        }
    }

    init(options: Int, ballots: Int, rounds: [Round], outcome: Outcome) {
        self.options = options
        self.ballots = ballots
        self.rounds = rounds
        self.outcome = outcome
    }
}
