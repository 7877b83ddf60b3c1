import ClickerTally
import ClickerWire

/// The one mapping between the tally's `QuestionSpec` and the definition the store keeps with each
/// question: what one holds, the other holds (the question number is the store's key).
extension QuestionDefinition {
    /// What the store keeps of `spec`.
    public init(_ spec: QuestionSpec) {
        self.init(kinds: spec.kinds.sorted { $0.rawValue < $1.rawValue }, options: spec.options,
                  optionTexts: spec.optionTexts.isEmpty ? nil : spec.optionTexts, title: spec.title,
                  numeric: spec.numeric.map { Numeric(decimals: $0.decimals, lowest: $0.lowest, highest: $0.highest) },
                  correct: spec.correct, points: spec.points)
    }
}

extension QuestionSpec {
    /// Question `number` as the store defined it.
    public init(number: UInt8, definition d: QuestionDefinition) {
        self.init(number: number, options: d.options, kinds: Set(d.kinds), title: d.title,
                  optionTexts: d.optionTexts ?? [],
                  numeric: d.numeric.map { NumericRange(decimals: $0.decimals, lowest: $0.lowest, highest: $0.highest) },
                  correct: d.correct, points: d.points)
    }

    /// A stored question as the tally counts it, wherever one is read back (resume, exports,
    /// gradebook): its definition; a question stored before definitions were kept is a single
    /// choice of `options` letters (A–D unless the poll said otherwise).
    public init(_ q: QuestionRecord, optionsIfUndefined options: Int = 4) {
        let number = UInt8(clamping: q.number)
        if let d = q.definition { self.init(number: number, definition: d) } else { self = .choice(number, options: options) }
    }
}
