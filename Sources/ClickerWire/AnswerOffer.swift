/// What a question offers, checked the same way by the voter (before it advertises) and the tally
/// (before it counts): an accepted kind, only offered options, a number within the range.
extension Answer {
    /// Whether a question that takes `kinds`, options A… up to `options`, and (for numbers) wire
    /// values in `range` offers this answer. A nil `range` takes any 16-bit value.
    @inline(__always)
    public func isOffered(kinds: Set<Kind>, options: Int, range: ClosedRange<Int16>?) -> Bool {
        guard kinds.contains(kind), fits(options: options) else { return false }
        if case .numeric(let v) = self, let range { return range.contains(v) }
        return true
    }
}

/// The texts of a numeric question's values: a number in the units the students type (`9.81`),
/// carried on the wire as an integer count of 10^-decimals (`981` with two decimals; docs/PROTOCOL.md
/// §4). The one reader and writer of such numbers: the question file and flags, the voter, the
/// results (statistics, histogram labels) and the views use it. Pure.
public enum NumericText {
    /// Most digits after the decimal point a question may declare.
    public static let maxDecimals = 4

    /// The wire value of `text` (an optional minus, digits, optionally a point and at most
    /// `decimals` digits), or why not: `3.5` with 1 decimal is 35, `3` is 30. A negative `decimals`
    /// counts as 0 (as ``NumericRange`` takes it).
    public static func wire(_ text: some StringProtocol, decimals: Int) -> Result<Int16, NumericTextError> {
        let decimals = max(0, decimals)
        let t = String(text).trimmingWhitespace()
        var digits = t.first == "-" ? Substring(t.dropFirst()) : Substring(t)
        let negative = digits.count != t.count
        let parts = digits.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            return .failure(.notANumber(t))
        }
        let fraction = parts.count > 1 ? parts[1] : ""
        guard parts.count == 1 || (!fraction.isEmpty && fraction.allSatisfy({ $0.isASCII && $0.isNumber })) else {
            return .failure(.notANumber(t))
        }
        guard fraction.count <= decimals else { return .failure(.tooManyDecimals(t, decimals: decimals)) }
        digits = whole + fraction + String(repeating: "0", count: decimals - fraction.count)
        // Leading zeros do not count towards the size.
        let significant = digits.drop { $0 == "0" }
        guard significant.count <= 5, let magnitude = Int(significant.isEmpty ? "0" : significant),
              let v = Int16(exactly: negative ? -magnitude : magnitude) else {
            return .failure(.outOfRange(t, decimals: decimals))
        }
        return .success(v)
    }

    /// The text of `value / 10^decimals` with exactly `decimals` digits after the point: `981` with
    /// two decimals is `9.81`, 5 with 2 is `0.05`, -15 with 1 is `-1.5`. Any integer (a wire value, or
    /// a statistic scaled by one more decimal); a negative `decimals` counts as 0.
    public static func text(_ value: some BinaryInteger, decimals: Int) -> String {
        let sign = value < 0 ? "-" : ""
        let magnitude = String(value.magnitude)
        guard decimals > 0 else { return sign + magnitude }
        let padded = String(repeating: "0", count: max(0, decimals + 1 - magnitude.count)) + magnitude
        let cut = padded.index(padded.endIndex, offsetBy: -decimals)
        return sign + padded[..<cut] + "." + padded[cut...]
    }

    /// Digits after the point in `text` (`0.25..10` has 2).
    public static func decimals(in text: some StringProtocol) -> Int {
        String(text).split(separator: "..", omittingEmptySubsequences: false).map { bound in
            let t = String(bound).trimmingWhitespace()
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
            "'\(t)' does not fit the 16 bits a ballot carries (\(NumericText.text(Int16.min, decimals: d)) to \(NumericText.text(Int16.max, decimals: d)) with \(d) decimal\(d == 1 ? "" : "s"))"
        case .notARange(let t): "'\(t)' is not a range LOW..HIGH, like 0..100 or -2.5..2.5"
        case .emptyRange(let t): "'\(t)' is empty: its low end is above its high end"
        }
    }
}

extension NumericText {
    /// `LOW..HIGH` in the students' units (`-5..5`, `0..10.5`), as wire values in `decimals`
    /// (`0..10.5` with 1 decimal is 0...105), or why not.
    public static func bounds(_ text: some StringProtocol, decimals: Int) -> Result<ClosedRange<Int16>, NumericTextError> {
        let t = text.trimmingWhitespace()
        let ends = t.split(separator: "..", maxSplits: 1, omittingEmptySubsequences: false)
        guard ends.count == 2 else { return .failure(.notARange(t)) }
        let low: Int16, high: Int16
        switch wire(ends[0], decimals: decimals) {
        case .success(let v): low = v
        case .failure(let e): return .failure(e)
        }
        switch wire(ends[1], decimals: decimals) {
        case .success(let v): high = v
        case .failure(let e): return .failure(e)
        }
        guard low <= high else { return .failure(.emptyRange(t)) }
        return .success(low...high)
    }
}
