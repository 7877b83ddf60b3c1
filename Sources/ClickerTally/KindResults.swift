import ClickerWire

/// The kind of results a question gets: one per answer kind it takes.
public enum ResultKind: String, Sendable, Hashable, Codable, CaseIterable {
    case choice, trueFalse, multiSelect, numeric, ranked

    /// The kind for a question's accepted answer kinds. A question takes one kind; should it take
    /// several, the first of ranked, numeric, multi-select, true/false, single choice wins (answers of
    /// the others are left out of its results, though they stay counted in `QuestionResults.counts`).
    public init(kinds: Set<Answer.Kind>) {
        if kinds.contains(.ranking) { self = .ranked }
        else if kinds.contains(.numeric) { self = .numeric }
        else if kinds.contains(.multiSelect) { self = .multiSelect }
        else if kinds.contains(.trueFalse) { self = .trueFalse }
        else { self = .choice }
    }
}

/// One option's count: a letter (`A`…`H`) or `true`/`false`, with the option's text when the question
/// has one.
public struct OptionCount: Sendable, Hashable, Codable {
    public var option: String
    public var text: String?
    public var count: Int

    public init(option: String, text: String? = nil, count: Int) {
        self.option = option
        self.text = text
        self.count = count
    }
}

/// Single choice and true/false: the count of every offered option (those with no vote included).
public struct ChoiceResults: Sendable, Hashable, Codable {
    public var options: [OptionCount]
    /// Counted ballots.
    public var ballots: Int { options.reduce(0) { $0 + $1.count } }

    public init(options: [OptionCount]) { self.options = options }
}

/// Multi-select: how many ballots selected each option, and how many chose each exact combination.
public struct MultiSelectResults: Sendable, Hashable, Codable {
    /// One exact set of options and the ballots that selected exactly it.
    public struct Combination: Sendable, Hashable, Codable {
        /// As a voter types it: `A+C`, or `D+` for one option alone.
        public var answer: String
        /// Its options' letters, in letter order.
        public var options: [String]
        public var count: Int
    }

    /// Counted ballots (each selects one or more options, so the per-option counts add up to more).
    public var ballots: Int
    /// Every offered option, A first.
    public var options: [OptionCount]
    /// Every combination chosen at least once: most chosen first, then in letter order.
    public var combinations: [Combination]
}

/// Results of one question, by its kind (``ResultKind``). Pure: computed from the counted answers
/// (``QuestionTally/counts``, or the counts a closed anonymous question keeps) and the question.
public enum KindResults: Sendable, Hashable {
    case choice(ChoiceResults)
    case trueFalse(ChoiceResults)
    case multiSelect(MultiSelectResults)
    case numeric(NumericResults)
    case ranked(RankedResults)

    public var kind: ResultKind {
        switch self {
        case .choice: .choice
        case .trueFalse: .trueFalse
        case .multiSelect: .multiSelect
        case .numeric: .numeric
        case .ranked: .ranked
        }
    }

    /// The results of `spec` from its counted answers (answer → ballots). Answers of another kind
    /// than the question's, or naming options it does not offer, are left out. `ranked`: for a ranked
    /// question, the instant-runoff count of those same answers when the caller keeps one
    /// (``QuestionTally/rankedCount``); without it the answers are counted here, from scratch.
    public init(spec: QuestionSpec, counts: [Answer: Int], ranked: InstantRunoff? = nil) {
        let n = spec.options
        func text(_ i: Int) -> String? { i < spec.optionTexts.count ? spec.optionTexts[i] : nil }
        switch ResultKind(kinds: spec.kinds) {
        case .choice:
            self = .choice(ChoiceResults(options: (0..<n).map { i in
                OptionCount(option: Answer.choice(UInt8(i)).description, text: text(i),
                            count: counts[.choice(UInt8(i))] ?? 0)
            }))
        case .trueFalse:
            self = .trueFalse(ChoiceResults(options: [true, false].map { b in
                OptionCount(option: b ? "true" : "false", count: counts[.trueFalse(b)] ?? 0)
            }))
        case .multiSelect:
            var perOption = [Int](repeating: 0, count: n)
            var combinations: [(mask: UInt8, count: Int)] = []
            var ballots = 0
            for (answer, c) in counts where c > 0 {
                guard case .multiSelect(let mask) = answer, answer.fits(options: n) else { continue }
                ballots += c
                combinations.append((mask, c))
                for i in 0..<n where mask & (1 << i) != 0 { perOption[i] += c }
            }
            combinations.sort { $0.count != $1.count ? $0.count > $1.count : Self.letterOrder($0.mask, $1.mask) }
            self = .multiSelect(MultiSelectResults(
                ballots: ballots,
                options: (0..<n).map { OptionCount(option: Answer.choice(UInt8($0)).description, text: text($0), count: perOption[$0]) },
                combinations: combinations.map { m, c in
                    MultiSelectResults.Combination(
                        answer: Answer.multiSelect(m).description,
                        options: (0..<8).filter { m & (1 << $0) != 0 }.map { Answer.choice(UInt8($0)).description },
                        count: c)
                }))
        case .numeric:
            var values: [(value: Int16, count: Int)] = []
            for (answer, c) in counts where c > 0 {
                if case .numeric(let v) = answer, spec.numeric?.contains(v) ?? true { values.append((v, c)) }
            }
            self = .numeric(NumericResults(values: values, decimals: spec.numeric?.decimals ?? 0))
        case .ranked:
            if let ranked, ranked.options == n {
                self = .ranked(RankedResults(count: ranked, optionTexts: spec.optionTexts))
                return
            }
            var grouped = InstantRunoff.Grouped(options: n)
            for (answer, c) in counts where c > 0 {
                if case .ranking(let r) = answer, answer.fits(options: n) { grouped.add(r, count: c) }
            }
            self = .ranked(RankedResults(count: grouped.count(), optionTexts: spec.optionTexts))
        }
    }

    /// Whether mask `a` comes before `b` in letter order: `A+B` < `A+C` < `B`, as their texts sort.
    static func letterOrder(_ a: UInt8, _ b: UInt8) -> Bool {
        Answer.multiSelect(a).description < Answer.multiSelect(b).description
    }
}
