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

/// Numbers as people type and read them, against the wire's fixed point: a numeric answer carries
/// `value` and means `value / 10^decimals` (docs/PROTOCOL.md §4), so with 1 decimal `3.5` is sent
/// as 35. Pure.
public enum NumericText {
    /// Most digits after the decimal point a question may declare.
    public static let maxDecimals = 4

    /// The wire value of `text` (an optional minus, digits, optionally `.` and at most `decimals`
    /// digits): `3.5` with 1 decimal is 35, `3` is 30. With no decimals only whole numbers parse.
    public static func parse(_ text: some StringProtocol, decimals: Int) throws(NumericTextError) -> Int16 {
        let decimals = max(0, min(decimals, maxDecimals))
        let t = String(text).trimmingWhitespace()
        var body = Substring(t)
        let negative = body.first == "-"
        if negative { body = body.dropFirst() }
        let parts = body.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count > 1 ? parts[1] : ""
        func digits(_ s: Substring) -> Bool { s.unicodeScalars.allSatisfy { ("0"..."9").contains($0) } }
        guard !whole.isEmpty, digits(whole), digits(fraction), parts.count == 1 || !fraction.isEmpty else {
            throw .notANumber(t)
        }
        guard fraction.count <= decimals else { throw .tooManyDecimals(t, decimals: decimals) }
        // More digits than any 16-bit value has cannot be in range (and would overflow Int).
        let significant = whole.drop { $0 == "0" }
        guard significant.count + decimals <= 9 else { throw .outOfRange(t, decimals: decimals) }
        var value = 0
        for c in significant.unicodeScalars { value = value * 10 + Int(c.value - 48) }
        let fractionDigits = fraction.unicodeScalars.map { Int($0.value - 48) }
        for i in 0..<decimals { value = value * 10 + (i < fractionDigits.count ? fractionDigits[i] : 0) }
        if negative { value = -value }
        guard let v = Int16(exactly: value) else { throw .outOfRange(t, decimals: decimals) }
        return v
    }

    /// The text of a wire value: 35 with 1 decimal is `3.5`, 5 with 2 is `0.05`, -5 with 1 is `-0.5`.
    public static func format(_ value: Int16, decimals: Int) -> String {
        let decimals = max(0, min(decimals, maxDecimals))
        guard decimals > 0 else { return String(value) }
        let magnitude = abs(Int(value))
        var scale = 1
        for _ in 0..<decimals { scale *= 10 }
        let fraction = String(magnitude % scale)
        return (value < 0 ? "-" : "") + String(magnitude / scale) + "."
            + String(repeating: "0", count: decimals - fraction.count) + fraction
    }
}

/// Why a typed number is not one a question with that many decimals takes.
public enum NumericTextError: Error, Sendable, Equatable, CustomStringConvertible {
    case notANumber(String)
    case tooManyDecimals(String, decimals: Int)
    case outOfRange(String, decimals: Int)

    public var description: String {
        switch self {
        case .notANumber(let s): "'\(s)' is not a number"
        case .tooManyDecimals(let s, 0): "\(s) is not a whole number"
        case .tooManyDecimals(let s, let d): "\(s) has more than \(d) decimal\(d == 1 ? "" : "s")"
        case .outOfRange(let s, let d):
            "\(s) is out of range (\(NumericText.format(.min, decimals: d)) to \(NumericText.format(.max, decimals: d)))"
        }
    }
}
