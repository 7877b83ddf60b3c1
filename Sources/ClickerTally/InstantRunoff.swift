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
    /// the distinct rankings, not over every ballot. The rankings are kept in one flat buffer, and a
    /// count links each group into the list of its current top option, so that it allocates only its
    /// working arrays and its rounds.
    public struct Grouped: Sendable, Hashable {
        public let options: Int
        private var index: [Ranking: Int] = [:]
        /// Every group's ranked options (those below `options`), one after the other.
        private var entries: [UInt8] = []
        /// Where each group's entries start; group g runs from `starts[g]` to `starts[g + 1]`.
        private var starts: [Int32] = [0]
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
                index[r] = weights.count
                for o in r.order where Int(o) < options { entries.append(o) }
                starts.append(Int32(entries.count))
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
            var race = Race(groups: weights.count, options: n)
            entries.withUnsafeBufferPointer { entries in
                starts.withUnsafeBufferPointer { starts in
                    weights.withUnsafeBufferPointer { weights in
                        race.run(entries: entries, starts: starts, weights: weights, ballots: ballots)
                    }
                }
            }
            return InstantRunoff(options: n, ballots: ballots, rounds: race.rounds, outcome: race.outcome)
        }
    }

    /// The working state of one count: each group sits in the list of its current top option;
    /// eliminating an option moves only the groups in its list, so a whole count touches each ranked
    /// entry once.
    private struct Race {
        let n: Int
        /// Next entry of each group to look at.
        var position: [Int32]
        /// Singly linked lists of groups by current top option: `head[o]`, then `next[g]`; -1 ends.
        var next: [Int32]
        var head: [Int32]
        var votes: [Int]
        var inRace: [Bool]
        var exhausted = 0
        var rounds: [Round] = []
        var outcome: Outcome = .noWinner

        init(groups: Int, options n: Int) {
            self.n = n
            position = [Int32](repeating: 0, count: groups)
            next = [Int32](repeating: -1, count: groups)
            head = [Int32](repeating: -1, count: n)
            votes = [Int](repeating: 0, count: n)
            inRace = [Bool](repeating: true, count: n)
        }

        /// Puts group `g` on the list of its most preferred option still in the race, or counts it
        /// exhausted.
        @inline(__always)
        mutating func place(_ g: Int, entries: UnsafeBufferPointer<UInt8>, end: Int, weight: Int) {
            var p = Int(position[g])
            while p < end, !inRace[Int(entries[p])] { p += 1 }
            position[g] = Int32(p)
            if p < end {
                let o = Int(entries[p])
                next[g] = head[o]
                head[o] = Int32(g)
                votes[o] += weight
            } else {
                exhausted += weight
            }
        }

        mutating func run(entries: UnsafeBufferPointer<UInt8>, starts: UnsafeBufferPointer<Int32>,
                          weights: UnsafeBufferPointer<Int>, ballots: Int) {
            for g in 0..<weights.count where weights[g] > 0 {
                position[g] = starts[g]
                place(g, entries: entries, end: Int(starts[g + 1]), weight: weights[g])
            }
            while true {
                let active = ballots - exhausted
                var round = Round(votes: (0..<n).map { inRace[$0] ? votes[$0] : nil }, active: active,
                                  exhausted: exhausted, eliminated: nil)
                let racing = (0..<n).filter { inRace[$0] }
                if active == 0 {
                    rounds.append(round)
                    outcome = .noWinner
                    return
                }
                if let w = racing.first(where: { 2 * votes[$0] > active }) {
                    rounds.append(round)
                    outcome = .winner(UInt8(w))
                    return
                }
                let fewest = racing.map { votes[$0] }.min() ?? 0
                var lowest = racing.filter { votes[$0] == fewest }
                if lowest.count == racing.count {
                    rounds.append(round)
                    outcome = .tie(racing.map(UInt8.init))
                    return
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
                var g = Int(head[out])
                head[out] = -1
                while g >= 0 {
                    let following = Int(next[g])
                    place(g, entries: entries, end: Int(starts[g + 1]), weight: weights[g])
                    g = following
                }
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
