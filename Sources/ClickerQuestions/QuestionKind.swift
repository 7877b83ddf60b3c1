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

/// The texts of a numeric question's values: a number in the units the students type (`9.81`),
/// carried on the wire as an integer count of 10^-decimals (`981` with two decimals).
public enum NumericText {
    /// The wire value of `text` (an optional minus, digits, optionally a point and at most
    /// `decimals` digits), or why not.
    public static func wire(_ text: some StringProtocol, decimals: Int) -> Result<Int16, NumericTextError> {
        let t = text.trimmingWhitespace()
        var digits = t.first == "-" ? Substring(t.dropFirst()) : Substring(t)
        let negative = digits.count != t.count
        let parts = digits.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            return .failure(.notANumber(String(t)))
        }
        let fraction = parts.count > 1 ? parts[1] : ""
        guard parts.count == 1 || (!fraction.isEmpty && fraction.allSatisfy({ $0.isASCII && $0.isNumber })) else {
            return .failure(.notANumber(String(t)))
        }
        guard fraction.count <= decimals else { return .failure(.tooManyDecimals(String(t), decimals: decimals)) }
        digits = whole + fraction + String(repeating: "0", count: decimals - fraction.count)
        // Leading zeros do not count towards the size.
        let significant = digits.drop { $0 == "0" }
        guard significant.count <= 5, let magnitude = Int(significant.isEmpty ? "0" : significant),
              let v = Int16(exactly: negative ? -magnitude : magnitude) else {
            return .failure(.outOfRange(String(t), decimals: decimals))
        }
        return .success(v)
    }

    /// The text of a wire value: `981` with two decimals is `9.81`.
    public static func text(_ value: Int16, decimals: Int) -> String {
        guard decimals > 0 else { return String(value) }
        let magnitude = String(abs(Int(value)))
        let padded = String(repeating: "0", count: max(0, decimals + 1 - magnitude.count)) + magnitude
        let cut = padded.index(padded.endIndex, offsetBy: -decimals)
        return (value < 0 ? "-" : "") + padded[..<cut] + "." + padded[cut...]
    }

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

    /// Digits after the point in `text` (`0.25..10` has 2).
    public static func decimals(in text: some StringProtocol) -> Int {
        String(text).components(separatedBy: "..").map { bound in
            let t = bound.trimmingWhitespace()
            return t.firstIndex(of: ".").map { t.distance(from: $0, to: t.endIndex) - 1 } ?? 0
        }.max() ?? 0
    }
}

/// Why a number or range did not read.
public enum NumericTextError: Error, Sendable, Equatable, CustomStringConvertible {
    case notANumber(String)
    case tooManyDecimals(String, decimals: Int)
    case outOfRange(String, decimals: Int)
    case notARange(String)
    case emptyRange(String)

    public var description: String {
        switch self {
        case .notANumber(let t): "'\(t)' is not a number (digits, an optional minus and decimal point, like -2.5)"
        case let .tooManyDecimals(t, d): "'\(t)' has more than \(d) decimal\(d == 1 ? "" : "s")"
        case let .outOfRange(t, d):
            "'\(t)' does not fit the 16 bits a ballot carries (\(NumericText.text(.min, decimals: d)) to \(NumericText.text(.max, decimals: d)) with \(d) decimal\(d == 1 ? "" : "s"))"
        case .notARange(let t): "'\(t)' is not a range LOW..HIGH, like 0..100 or -2.5..2.5"
        case .emptyRange(let t): "'\(t)' is empty: its low end is above its high end"
        }
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
