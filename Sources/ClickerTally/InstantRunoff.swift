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

    /// Ballots grouped by their ranking, so that a count costs one pass over the distinct rankings,
    /// not over every ballot. The rankings are kept in one flat buffer, and a count links each group
    /// into the list of its current top option, so that it allocates only its working arrays and its
    /// rounds.
    ///
    /// Once ``currentCount()`` has counted, each later ``add(_:count:)`` or ``remove(_:count:)``
    /// updates that count in place: the ballot's votes are added to (or taken from) the option it
    /// counts for in each round, then every round's decision (winner, tie, or which option goes) is
    /// taken again from the updated votes by the same rule as a full count. While every decision
    /// stands, the rounds are exactly those a full count would give (the votes of round k depend
    /// only on the options eliminated before it); when one changes, the ballots are counted again in
    /// full.
    public struct Grouped: Sendable, Hashable {
        public let options: Int
        private var index: [Ranking: Int] = [:]
        /// Every group's ranked options (those below `options`), one after the other.
        private var entries: [UInt8] = []
        /// Where each group's entries start; group g runs from `starts[g]` to `starts[g + 1]`.
        private var starts: [Int32] = [0]
        private var weights: [Int] = []
        public private(set) var ballots = 0
        /// The count of the ballots so far, once ``currentCount()`` asked for it; kept up to date.
        private var counted: InstantRunoff?

        public init(options: Int) {
            self.options = max(1, min(options, Answer.maxOptions))
        }

        public mutating func add(_ r: Ranking, count: Int = 1) {
            guard count > 0 else { return }
            ballots += count
            let i: Int
            if let known = index[r] {
                i = known
                weights[i] += count
            } else {
                i = weights.count
                index[r] = i
                for o in r.order where Int(o) < options { entries.append(o) }
                starts.append(Int32(entries.count))
                weights.append(count)
            }
            update(group: i, by: count)
        }

        /// Removes `count` ballots with ranking `r` (a voter who changed answer); no-op if absent.
        public mutating func remove(_ r: Ranking, count: Int = 1) {
            guard let i = index[r] else { return }
            let n = min(count, weights[i])
            guard n > 0 else { return }
            weights[i] -= n
            ballots -= n
            update(group: i, by: -n)
        }

        /// The count of the ballots so far (as ``count()`` gives it), kept from now on and updated
        /// by each later add or remove.
        public mutating func currentCount() -> InstantRunoff {
            if let counted { return counted }
            let c = count()
            counted = c
            return c
        }

        /// Moves the kept count by `delta` ballots of group `g`, or counts again when a decision changes.
        private mutating func update(group g: Int, by delta: Int) {
            guard let kept = counted else { return }
            counted = nil
            // The kept count's last use: its rounds are then held only here, and change in place.
            var rounds = kept.rounds
            var out: UInt16 = 0
            let end = Int(starts[g + 1])
            var p = Int(starts[g])
            for k in rounds.indices {
                while p < end, out & (1 << entries[p]) != 0 { p += 1 }
                if p < end {
                    rounds[k].votes[Int(entries[p])] = (rounds[k].votes[Int(entries[p])] ?? 0) + delta
                    rounds[k].active += delta
                } else {
                    rounds[k].exhausted += delta
                }
                if let e = rounds[k].eliminated { out |= 1 << e }
            }
            for k in rounds.indices {
                switch Race.decide(rounds[k], earlier: rounds[..<k], options: options) {
                case .eliminate(let o) where o == rounds[k].eliminated && k < rounds.count - 1:
                    continue
                case .end(let outcome) where rounds[k].eliminated == nil && k == rounds.count - 1:
                    counted = InstantRunoff(options: options, ballots: ballots, rounds: rounds, outcome: outcome)
                    return
                default:
                    counted = count()
                    return
                }
            }
            counted = count()
        }

        /// The count of the ballots so far: the kept one once ``currentCount()`` asked for it (it is
        /// then up to date), else a full count.
        public func count() -> InstantRunoff {
            if let counted { return counted }
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
        /// What a round decides: the count ends, or an option goes.
        enum Step {
            case end(Outcome)
            case eliminate(UInt8)
        }

        /// The rule, from a round's votes and the rounds before it (see ``InstantRunoff``).
        /// Sets of options are bit masks (bit 0 = A), so that deciding allocates nothing.
        static func decide(_ round: Round, earlier: ArraySlice<Round>, options n: Int) -> Step {
            let active = round.active
            if active == 0 { return .end(.noWinner) }
            var racing: UInt16 = 0
            var fewest = Int.max
            var lowest: UInt16 = 0
            for o in 0..<n {
                guard let v = round.votes[o] else { continue }
                racing |= 1 << o
                if 2 * v > active { return .end(.winner(UInt8(o))) }
                if v < fewest {
                    fewest = v
                    lowest = 1 << o
                } else if v == fewest {
                    lowest |= 1 << o
                }
            }
            if lowest == racing { return .end(.tie((0..<UInt8(n)).filter { racing & (1 << $0) != 0 })) }
            // Back through earlier rounds while the tie lasts, then the latest letter.
            for before in earlier.reversed() where lowest.nonzeroBitCount > 1 {
                var least = Int.max
                for o in 0..<n where lowest & (1 << o) != 0 { least = min(least, before.votes[o] ?? 0) }
                var kept: UInt16 = 0
                for o in 0..<n where lowest & (1 << o) != 0 && (before.votes[o] ?? 0) == least { kept |= 1 << o }
                lowest = kept
            }
            return .eliminate(UInt8(UInt16.bitWidth - 1 - lowest.leadingZeroBitCount))
        }

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
                let out: Int
                switch Self.decide(round, earlier: rounds[...], options: n) {
                case .end(let o):
                    rounds.append(round)
                    outcome = o
                    return
                case .eliminate(let o):
                    out = Int(o)
                }
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
