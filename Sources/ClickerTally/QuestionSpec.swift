import ClickerWire

/// The range of a numeric question, in wire units: a ballot carries `value` and means
/// `value / 10^decimals` (docs/PROTOCOL.md §4), so `decimals: 1, lowest: 0, highest: 100` takes
/// 0.0 to 10.0 in steps of 0.1.
public struct NumericRange: Sendable, Hashable {
    /// Digits after the decimal point, 0…4.
    public var decimals: Int
    /// Smallest and largest wire value accepted, inclusive.
    public var lowest: Int16
    public var highest: Int16

    public init(decimals: Int = 0, lowest: Int16 = .min, highest: Int16 = .max) {
        self.decimals = max(0, min(decimals, 4))
        self.lowest = min(lowest, highest)
        self.highest = max(lowest, highest)
    }

    /// Whether a wire value is in range.
    public func contains(_ value: Int16) -> Bool { value >= lowest && value <= highest }
}

/// A question as the instructor poses it: which answers it offers, and what the screen, the
/// projector and the gradebook say about it.
public struct QuestionSpec: Sendable, Hashable {
    /// The number ballots carry.
    public var number: UInt8
    /// Number of options (letters A… ); 1…8.
    public var options: Int
    /// Answer kinds accepted.
    public var kinds: Set<Answer.Kind>
    /// The question's title, when it has one.
    public var title: String?
    /// The options' texts (A first), when the question has them; empty otherwise.
    public var optionTexts: [String]
    /// For a numeric question: its scale and range (any 16-bit value when nil).
    public var numeric: NumericRange?
    /// The correct answers of a graded question (any of them scores); empty when ungraded.
    public var correct: [Answer]
    /// Points a correct answer scores in a graded question.
    public var points: Double?

    public init(number: UInt8, options: Int = 4, kinds: Set<Answer.Kind> = [.choice], title: String? = nil,
                optionTexts: [String] = [], numeric: NumericRange? = nil, correct: [Answer] = [],
                points: Double? = nil) {
        self.number = number
        self.options = max(1, min(options, Answer.maxOptions))
        self.kinds = kinds
        self.title = title
        self.optionTexts = optionTexts
        self.numeric = numeric
        self.correct = correct
        self.points = points
    }

    /// A single-choice question with `options` letters (A–D by default).
    public static func choice(_ number: UInt8, options: Int = 4) -> QuestionSpec {
        QuestionSpec(number: number, options: options, kinds: [.choice])
    }

    /// Whether `answer` is one this question offers: an accepted kind, only offered options, and a
    /// number within the question's range. The voter checks the same (``Answer/isOffered(kinds:options:range:)``).
    public func offers(_ answer: Answer) -> Bool {
        answer.isOffered(kinds: kinds, options: options, range: numeric.map { $0.lowest...$0.highest })
    }
}
