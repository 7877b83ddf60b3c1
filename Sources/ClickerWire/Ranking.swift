/// An order of preference over k of the 8 options (1 ≤ k ≤ 8), most preferred first; options not
/// listed are unranked (nothing is implied about them). Sent with kind byte 0x40 + k and the index of
/// the ordered arrangement (docs/PROTOCOL.md §4): digit dᵢ = position of entry i among the options
/// not used before it, in letter order (0 ≤ dᵢ < 8 − i); code = Σ dᵢ · Πⱼ₌ᵢ₊₁…ₖ₋₁ (8 − j), which
/// is below 8!/(8 − k)!.
public struct Ranking: Sendable, Hashable, CustomStringConvertible {
    /// Option indices (0 = A … 7 = H), most preferred first; 1…8 distinct entries.
    public let order: [UInt8]

    /// From the option indices in order of preference: 1…8 distinct indices below 8; nil otherwise.
    public init?(order: [UInt8]) {
        guard !order.isEmpty, order.count <= 8 else { return nil }
        var seen: UInt8 = 0
        for i in order {
            guard i < 8, seen & (1 << i) == 0 else { return nil }
            seen |= 1 << i
        }
        self.order = order
    }

    /// Number of ordered arrangements of `count` of the 8 options: 8!/(8 − count)!.
    public static func arrangements(count k: Int) -> Int { (0..<k).reduce(1) { $0 * (8 - $1) } }

    /// From the wire: `count` ranked options (1…8) and the arrangement index; nil when the index is
    /// not below ``arrangements(count:)``.
    public init?(count k: Int, code: UInt16) {
        guard (1...8).contains(k), Int(code) < Self.arrangements(count: k) else { return nil }
        var rest = Int(code)
        var digits = [Int](repeating: 0, count: k)
        for i in stride(from: k - 1, through: 0, by: -1) {
            digits[i] = rest % (8 - i)
            rest /= 8 - i
        }
        var remaining: [UInt8] = [0, 1, 2, 3, 4, 5, 6, 7]
        order = digits.map { remaining.remove(at: $0) }
    }

    /// The arrangement index sent on the wire.
    public var code: UInt16 {
        var remaining: [UInt8] = [0, 1, 2, 3, 4, 5, 6, 7]
        var c = 0
        for (i, o) in order.enumerated() {
            // `order` holds distinct indices below 8 (checked by both initialisers).
            let d = remaining.firstIndex(of: o) ?? 0
            remaining.remove(at: d)
            c = c * (8 - i) + d
        }
        return UInt16(c)
    }

    /// `C>A>B`; a ranking of one option prints `C>` so that it does not read as a single choice.
    public var description: String {
        let letters = order.map { Answer.letterText($0) }
        return letters.count == 1 ? letters[0] + ">" : letters.joined(separator: ">")
    }
}
