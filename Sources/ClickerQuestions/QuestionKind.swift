import ClickerTally
import ClickerWire
import Foundation

/// The kinds of question an instructor asks, by the names the question file, the command line and
/// D-Bus use.
public enum QuestionKind: String, Sendable, CaseIterable {
    case single, multi, truefalse, numeric, ranked

    /// The answer kind a ballot for this question carries.
    public var answerKind: Answer.Kind {
        switch self {
        case .single: .choice
        case .multi: .multiSelect
        case .truefalse: .trueFalse
        case .numeric: .numeric
        case .ranked: .ranking
        }
    }

    /// The kind of a question the tally asks (nil for a mix of answer kinds, which no file or flag makes).
    public init?(_ spec: QuestionSpec) {
        guard spec.kinds.count == 1, let k = spec.kinds.first,
              let kind = Self.allCases.first(where: { $0.answerKind == k }) else { return nil }
        self = kind
    }

    /// Whether the question names options (letters A…).
    public var hasOptions: Bool { self == .single || self == .multi || self == .ranked }

    /// "single, multi, truefalse, numeric, ranked".
    public static let names = allCases.map(\.rawValue).joined(separator: ", ")
}

/// Ranges of a numeric question, read with ClickerWire's ``NumericText`` (the one reader of numbers).
extension NumericText {
    /// `LOW..HIGH` in the students' units, as a wire range.
    public static func range(_ text: some StringProtocol, decimals: Int) -> Result<NumericRange, NumericTextError> {
        let t = text.trimmingWhitespace()
        guard let dots = t.range(of: "..") else { return .failure(.notARange(String(t))) }
        let low = t[..<dots.lowerBound], high = t[dots.upperBound...]
        let lowest: Int16, highest: Int16
        switch wire(low, decimals: decimals) {
        case .success(let v): lowest = v
        case .failure(let e): return .failure(e)
        }
        switch wire(high, decimals: decimals) {
        case .success(let v): highest = v
        case .failure(let e): return .failure(e)
        }
        guard lowest <= highest else { return .failure(.emptyRange(String(t))) }
        return .success(NumericRange(decimals: decimals, lowest: lowest, highest: highest))
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> Substring {
        let s = Substring(self)
        guard let first = s.firstIndex(where: { !$0.isWhitespace }), let last = s.lastIndex(where: { !$0.isWhitespace }) else {
            return s[s.endIndex...]
        }
        return s[first...last]
    }
}
