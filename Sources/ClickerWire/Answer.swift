/// An answer, as carried (encrypted) in three bytes of a ballot: one kind byte and a big-endian
/// 16-bit value. See docs/PROTOCOL.md §4.
///
/// | kind | meaning        | value                                                        |
/// |------|----------------|--------------------------------------------------------------|
/// | 0x01 | single choice  | option index 0…7 (A…H)                                        |
/// | 0x02 | true/false     | 0 = false, 1 = true                                           |
/// | 0x03 | multi-select   | bitmask, bit 0 = A … bit 7 = H; high byte 0; at least one bit |
/// | 0x04 | ranking        | Lehmer code (< 40320) of a permutation of the 8 options       |
public enum Answer: Sendable, Hashable, Comparable, CustomStringConvertible, LosslessStringConvertible {
    /// One option: 0 = A … 7 = H.
    case choice(UInt8)
    case trueFalse(Bool)
    /// A non-empty set of options as a bitmask: bit 0 = A … bit 7 = H.
    case multiSelect(UInt8)
    /// An order of preference over options.
    case ranking(Ranking)

    /// Highest number of options any answer kind can refer to.
    public static let maxOptions = 8

    /// Kind bytes on the wire.
    public enum Kind: UInt8, Sendable, CaseIterable {
        case choice = 0x01, trueFalse = 0x02, multiSelect = 0x03, ranking = 0x04
    }

    public var kind: Kind {
        switch self {
        case .choice: .choice
        case .trueFalse: .trueFalse
        case .multiSelect: .multiSelect
        case .ranking: .ranking
        }
    }

    /// A single choice from its letter (`A`…`H`, any case).
    public static func letter(_ c: Character) -> Answer? {
        guard let a = c.uppercased().first?.asciiValue, a >= 65, a < 65 + 8 else { return nil }
        return .choice(a - 65)
    }

    /// The three plaintext bytes: kind, value high byte, value low byte.
    /// Values out of range (a choice above 7, an empty multi-select) are encoded as given and
    /// will be rejected by the decoder; use ``isWellFormed`` to check first.
    public var wireBytes: (UInt8, UInt8, UInt8) {
        switch self {
        case .choice(let i): (Kind.choice.rawValue, 0, i)
        case .trueFalse(let b): (Kind.trueFalse.rawValue, 0, b ? 1 : 0)
        case .multiSelect(let m): (Kind.multiSelect.rawValue, 0, m)
        case .ranking(let r): (Kind.ranking.rawValue, UInt8(truncatingIfNeeded: r.lehmerCode >> 8),
                               UInt8(truncatingIfNeeded: r.lehmerCode))
        }
    }

    /// Decodes the three plaintext bytes; nil when they are not a well-formed answer.
    public init?(wire k: UInt8, _ hi: UInt8, _ lo: UInt8) {
        switch Kind(rawValue: k) {
        case .choice?:
            guard hi == 0, lo < 8 else { return nil }
            self = .choice(lo)
        case .trueFalse?:
            guard hi == 0, lo <= 1 else { return nil }
            self = .trueFalse(lo == 1)
        case .multiSelect?:
            guard hi == 0, lo != 0 else { return nil }
            self = .multiSelect(lo)
        case .ranking?:
            guard let r = Ranking(lehmerCode: UInt16(hi) << 8 | UInt16(lo)) else { return nil }
            self = .ranking(r)
        case nil:
            return nil
        }
    }

    /// Whether the decoder would accept this answer (a choice is 0…7, a multi-select is non-empty).
    public var isWellFormed: Bool {
        let (k, h, l) = wireBytes
        return Answer(wire: k, h, l) != nil
    }

    /// Whether this answer fits a question with `options` options (letters A… up to `options`).
    public func fits(options: Int) -> Bool {
        switch self {
        case .choice(let i): return Int(i) < options
        case .trueFalse: return true
        case .multiSelect(let m): return options >= 8 || Int(m) >> options == 0
        case .ranking(let r): return r.order(count: options) != nil
        }
    }

    /// Letters: `B`, `true`, `A+C` (one option alone: `D+`), `B>A>C`.
    public var description: String {
        switch self {
        case .choice(let i): return Self.letterText(i)
        case .trueFalse(let b): return b ? "true" : "false"
        case .multiSelect(let m):
            let letters = (0..<8).filter { m & (1 << $0) != 0 }.map { Self.letterText(UInt8($0)) }
            // A one-option selection prints `D+`, so that it does not read as the single choice `D`.
            return letters.count == 1 ? letters[0] + "+" : letters.joined(separator: "+")
        case .ranking(let r): return r.description
        }
    }

    static func letterText(_ i: UInt8) -> String {
        i < 26 ? String(UnicodeScalar(65 + i)) : "?\(i)"
    }

    /// Parses `B`, `true`/`false` (also `yes`/`no`), `A+C` or `D+` (multi-select) or `B>A>C` (ranking).
    public init(parsing text: some StringProtocol) throws(AnswerParseError) {
        let t = text.trimmingWhitespace()
        guard !t.isEmpty else { throw .empty }
        switch t.lowercased() {
        case "true", "yes": self = .trueFalse(true); return
        case "false", "no": self = .trueFalse(false); return
        default: break
        }
        func letterIndex(_ s: Substring) throws(AnswerParseError) -> UInt8 {
            guard s.count == 1, let c = s.first, case .choice(let i)? = Answer.letter(c) else {
                throw .badLetter(String(s))
            }
            return i
        }
        if t.contains(">") {
            var order: [UInt8] = []
            for part in t.split(separator: ">", omittingEmptySubsequences: false) {
                order.append(try letterIndex(part))
            }
            guard let r = Ranking(order: order) else { throw .notAPermutation(t) }
            self = .ranking(r)
        } else if t.contains("+") {
            var mask: UInt8 = 0
            let body = t.count == 2 && t.hasSuffix("+") ? Substring(t.dropLast()) : Substring(t)
            for part in body.split(separator: "+", omittingEmptySubsequences: false) {
                let i = try letterIndex(part)
                guard mask & (1 << i) == 0 else { throw .repeatedLetter(String(part)) }
                mask |= 1 << i
            }
            self = .multiSelect(mask)
        } else {
            self = .choice(try letterIndex(Substring(t)))
        }
    }

    public init?(_ description: String) {
        guard let a = try? Answer(parsing: description) else { return nil }
        self = a
    }

    public static func < (a: Answer, b: Answer) -> Bool {
        let x = a.wireBytes, y = b.wireBytes
        return (x.0, x.1, x.2) < (y.0, y.1, y.2)
    }
}

/// Why an answer did not parse.
public enum AnswerParseError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case badLetter(String)
    case repeatedLetter(String)
    case notAPermutation(String)

    public var description: String {
        switch self {
        case .empty: "no answer given; type a letter A to H, true/false, A+C or B>A>C"
        case .badLetter(let s): "'\(s)' is not an option letter (A to H)"
        case .repeatedLetter(let s): "option \(s) appears twice"
        case .notAPermutation(let s): "'\(s)' is not a ranking; list each of the first options once, like B>A>C"
        }
    }
}

/// An order of preference over up to 8 options, carried as the Lehmer code of a permutation of
/// all 8. A ranking of the first n options is extended with the remaining options in their
/// natural order, so `B>A>C` and `B>A` are the same ranking (C … H stay in place).
public struct Ranking: Sendable, Hashable, CustomStringConvertible {
    /// The Lehmer code, 0 ..< 8! = 40320.
    public let lehmerCode: UInt16

    static let factorials: [Int] = [5040, 720, 120, 24, 6, 2, 1, 1]

    /// From a Lehmer code; nil when it is 40320 or more.
    public init?(lehmerCode: UInt16) {
        guard lehmerCode < 40320 else { return nil }
        self.lehmerCode = lehmerCode
    }

    /// From the option indices in order of preference; must be a permutation of 0..<n, n ≤ 8.
    public init?(order: [UInt8]) {
        guard !order.isEmpty, order.count <= 8 else { return nil }
        var seen: UInt8 = 0
        for i in order {
            guard Int(i) < order.count, seen & (1 << i) == 0 else { return nil }
            seen |= 1 << i
        }
        var full = order
        for i in order.count..<8 { full.append(UInt8(i)) }
        var code = 0
        for i in 0..<8 {
            var smaller = 0
            for j in (i + 1)..<8 where full[j] < full[i] { smaller += 1 }
            code += smaller * Self.factorials[i]
        }
        lehmerCode = UInt16(code)
    }

    /// The permutation of all 8 option indices, most preferred first.
    public var fullOrder: [UInt8] {
        var remaining: [UInt8] = [0, 1, 2, 3, 4, 5, 6, 7]
        var code = Int(lehmerCode)
        var out: [UInt8] = []
        out.reserveCapacity(8)
        for i in 0..<8 {
            let d = code / Self.factorials[i]
            code %= Self.factorials[i]
            out.append(remaining.remove(at: d))
        }
        return out
    }

    /// The order over the first `count` options, or nil if this ranking moves a later option.
    public func order(count: Int) -> [UInt8]? {
        guard count >= 1 else { return nil }
        let full = fullOrder
        guard count < 8 else { return full }
        for i in count..<8 where full[i] != UInt8(i) { return nil }
        return Array(full.prefix(count))
    }

    /// The shortest order that identifies this ranking (trailing options in natural order dropped),
    /// at least two options long so that it never reads as a single choice.
    public var shortOrder: [UInt8] {
        let full = fullOrder
        var n = 8
        while n > 2 && full[n - 1] == UInt8(n - 1) { n -= 1 }
        return Array(full.prefix(n))
    }

    /// `B>A`.
    public var description: String {
        shortOrder.map { Answer.letterText($0) }.joined(separator: ">")
    }
}
