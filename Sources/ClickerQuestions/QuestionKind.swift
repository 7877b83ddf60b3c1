import ClickerTally
import ClickerWire
import Foundation

extension QuestionKind {
    /// The kind of a question the tally asks (nil for a mix of answer kinds, which no file or flag makes).
    public init?(_ spec: QuestionSpec) {
        guard spec.kinds.count == 1, let k = spec.kinds.first,
              let kind = Self.allCases.first(where: { $0.answerKind == k }) else { return nil }
        self = kind
    }
}

/// Ranges of a numeric question, read with ClickerWire's ``NumericText`` (the one reader of numbers).
extension NumericText {
    /// `LOW..HIGH` in the students' units, as a wire range.
    public static func range(_ text: some StringProtocol, decimals: Int) -> Result<NumericRange, NumericTextError> {
        bounds(text, decimals: decimals).map { NumericRange(decimals: decimals, lowest: $0.lowerBound, highest: $0.upperBound) }
    }
}
