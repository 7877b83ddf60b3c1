/// An answer, as carried (encrypted) in three bytes of a ballot: one kind byte and a big-endian
/// 16-bit value. See docs/PROTOCOL.md §4.
///
/// | kind | meaning        | value                                                        |
/// |------|----------------|--------------------------------------------------------------|
/// | 0x01 | single choice  | option index 0…7 (A…H)                                        |
/// | 0x02 | true/false     | 0 = false, 1 = true                                           |
/// | 0x03 | multi-select   | bitmask, bit 0 = A … bit 7 = H; high byte 0; at least one bit |
/// | 0x05 | numeric        | signed 16-bit two's complement (the question gives its scale)  |
/// | 0x41…0x48 | ranking of k = kind − 0x40 options | index of the ordered arrangement (``Ranking``) |
public enum Answer: Sendable, Hashable, Comparable, CustomStringConvertible, LosslessStringConvertible {
    /// One option: 0 = A … 7 = H.
    case choice(UInt8)
    case trueFalse(Bool)
    /// A non-empty set of options as a bitmask: bit 0 = A … bit 7 = H.
    case multiSelect(UInt8)
    /// A number, signed 16 bits; the question says how many decimals it has and which range it takes.
    case numeric(Int16)
    /// An order of preference over k of the options, most preferred first.
    case ranking(Ranking)

    /// Highest number of options any answer kind can refer to.
    public static let maxOptions = 8

    /// Answer kinds, with their kind byte on the wire; a ranking of k options is sent as
    /// `ranking.rawValue + k` (0x41…0x48).
    public enum Kind: UInt8, Sendable, CaseIterable {
        case choice = 0x01, trueFalse = 0x02, multiSelect = 0x03, numeric = 0x05, ranking = 0x40
    }

    public var kind: Kind {
        switch self {
        case .choice: .choice
        case .trueFalse: .trueFalse
        case .multiSelect: .multiSelect
        case .numeric: .numeric
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
        case .numeric(let v): (Kind.numeric.rawValue, UInt8(truncatingIfNeeded: UInt16(bitPattern: v) >> 8),
                               UInt8(truncatingIfNeeded: UInt16(bitPattern: v)))
        case .ranking(let r): (Kind.ranking.rawValue + UInt8(r.order.count), UInt8(truncatingIfNeeded: r.code >> 8),
                               UInt8(truncatingIfNeeded: r.code))
        }
    }

    /// Decodes the three plaintext bytes; nil when they are not a well-formed answer.
    public init?(wire k: UInt8, _ hi: UInt8, _ lo: UInt8) {
        if k > Kind.ranking.rawValue, k <= Kind.ranking.rawValue + 8 {
            guard let r = Ranking(count: Int(k - Kind.ranking.rawValue), code: UInt16(hi) << 8 | UInt16(lo)) else { return nil }
            self = .ranking(r)
            return
        }
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
        case .numeric?:
            self = .numeric(Int16(bitPattern: UInt16(hi) << 8 | UInt16(lo)))
        case .ranking?, nil:
            return nil
        }
    }

    /// Whether the decoder would accept this answer (a choice is 0…7, a multi-select is non-empty).
    public var isWellFormed: Bool {
        let (k, h, l) = wireBytes
        return Answer(wire: k, h, l) != nil
    }

    /// Whether this answer only names options a question with `options` options offers (letters A…
    /// up to `options`). True/false and numeric answers name no option.
    public func fits(options: Int) -> Bool {
        switch self {
        case .choice(let i): return Int(i) < options
        case .trueFalse, .numeric: return true
        case .multiSelect(let m): return options >= 8 || Int(m) >> options == 0
        case .ranking(let r): return r.order.allSatisfy { Int($0) < options }
        }
    }

    /// Letters: `B`, `true`, `A+C` (one option alone: `D+`), `42`, `B>A>C` (one option alone: `C>`).
    public var description: String {
        switch self {
        case .choice(let i): return Self.letterText(i)
        case .trueFalse(let b): return b ? "true" : "false"
        case .multiSelect(let m):
            let letters = (0..<8).filter { m & (1 << $0) != 0 }.map { Self.letterText(UInt8($0)) }
            // A one-option selection prints `D+`, so that it does not read as the single choice `D`.
            return letters.count == 1 ? letters[0] + "+" : letters.joined(separator: "+")
        case .numeric(let v): return String(v)
        case .ranking(let r): return r.description
        }
    }

    static func letterText(_ i: UInt8) -> String {
        i < 26 ? String(UnicodeScalar(65 + i)) : "?\(i)"
    }

    /// Parses `B`, `true`/`false` (also `yes`/`no`), `A+C` or `D+` (multi-select), `42` or `-3`
    /// (numeric), or `B>A>C` or `C>` (ranking).
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
        if let first = t.unicodeScalars.first, first == "-" || ("0"..."9").contains(first) {
            let digits = first == "-" ? t.dropFirst() : Substring(t)
            guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                // `9.81`: a ballot carries whole numbers; only the question's form scales a decimal.
                let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
                if parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }) {
                    throw .decimalNeedsForm(t, decimals: parts[1].count)
                }
                throw .badNumber(t)
            }
            guard let v = Int16(t) else { throw .numberOutOfRange(t) }
            self = .numeric(v)
        } else if t.contains(">") {
            let body = t.count == 2 && t.hasSuffix(">") ? Substring(t.dropLast()) : Substring(t)
            var order: [UInt8] = []
            for part in body.split(separator: ">", omittingEmptySubsequences: false) {
                let i = try letterIndex(part)
                guard !order.contains(i) else { throw .repeatedLetter(String(part)) }
                order.append(i)
            }
            guard let r = Ranking(order: order) else { throw .notARanking(t) }
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
    case notARanking(String)
    case badNumber(String)
    /// A decimal number, read without the question's form (its decimals): `decimals` is how many it has.
    case decimalNeedsForm(String, decimals: Int)
    case numberOutOfRange(String)

    public var description: String {
        switch self {
        case .empty: "no answer given; type a letter A to H, true/false, A+C, a number or B>A>C"
        case .badLetter(let s): "'\(s)' is not an option letter (A to H)"
        case .repeatedLetter(let s): "option \(s) appears twice"
        case .notARanking(let s): "'\(s)' is not a ranking; list up to 8 different options, like B>A>C (one alone: C>)"
        case .badNumber(let s): "'\(s)' is not a number; type digits with an optional minus, like 42 or -3"
        case let .decimalNeedsForm(s, d):
            "'\(s)' has decimals: a decimal answer needs the question's decimals, --kind numeric --decimals \(d) (or more)"
        case .numberOutOfRange(let s): "\(s) is out of range (-32768 to 32767)"
        }
    }
}

