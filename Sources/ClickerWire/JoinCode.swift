/// The code the instructor's screen shows and every student types: vote ID and poll secret,
/// printed `4821-K7QXM-3PF9A`.
///
/// The vote ID (decimal, 1…65535; the tally picks 1000…9999 so it always has four digits) is sent
/// in clear in every ballot. The secret is 50 random bits written as 10 Crockford base32
/// characters in two groups of five; it never leaves the room's screen. Keys are derived from both
/// (see ``PollSecret``). See docs/PROTOCOL.md §2 for why the secret is 50 bits.
public struct JoinCode: Sendable, Hashable, CustomStringConvertible, LosslessStringConvertible {
    /// Number of random bits in the secret.
    public static let secretBits = 50
    /// Number of base32 characters in the secret.
    public static let secretCharacters = 10

    /// The poll's vote ID, sent in clear in every ballot.
    public let voteID: UInt16
    /// The secret, a value below 2^50.
    public let secret: UInt64

    /// Creates a join code. Throws when `voteID` is 0 or `secret` has more than 50 bits.
    public init(voteID: UInt16, secret: UInt64) throws(JoinCodeError) {
        guard voteID != 0 else { throw .voteIDOutOfRange("0") }
        guard secret >> UInt64(Self.secretBits) == 0 else { throw .secretOutOfRange }
        self.voteID = voteID
        self.secret = secret
    }

    /// A fresh code: vote ID in 1000…9999, secret uniformly random.
    public static func random<G: RandomNumberGenerator>(using rng: inout G) -> JoinCode {
        let v = UInt16.random(in: 1000...9999, using: &rng)
        let s = UInt64.random(in: 0..<(1 << UInt64(secretBits)), using: &rng)
        // Both values are in range by construction.
        return JoinCode(unchecked: v, s)
    }

    /// A fresh code from the system's secure random generator.
    public static func random() -> JoinCode {
        var g = SystemRandomNumberGenerator()
        return random(using: &g)
    }

    init(unchecked voteID: UInt16, _ secret: UInt64) {
        self.voteID = voteID
        self.secret = secret
    }

    /// Parses `4821-K7QXM-3PF9A`. Surrounding white space is ignored, letters may be lower case
    /// and the look-alikes O/I/L read as 0/1/1; anything else is an error saying what is wrong.
    public init(parsing text: some StringProtocol) throws(JoinCodeError) {
        let trimmed = text.trimmingWhitespace()
        guard !trimmed.isEmpty else { throw .empty }
        let parts = trimmed.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .wrongShape(trimmed) }
        let idText = parts[0]
        guard !idText.isEmpty, idText.count <= 5, idText.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw .badVoteID(String(idText))
        }
        guard let id = UInt16(idText), id != 0 else { throw .voteIDOutOfRange(String(idText)) }
        for (n, g) in [(2, parts[1]), (3, parts[2])] where g.count != 5 {
            throw .wrongGroupLength(group: n, String(g))
        }
        var value: UInt64 = 0
        for ch in parts[1] + parts[2] {
            guard ch.isASCII, let a = ch.asciiValue, let v = Crockford.value(of: a) else {
                throw .badSecretCharacter(ch)
            }
            value = value << 5 | UInt64(v)
        }
        self.init(unchecked: id, value)
    }

    /// `LosslessStringConvertible`: nil when `description` does not parse.
    public init?(_ description: String) {
        guard let c = try? JoinCode(parsing: description) else { return nil }
        self = c
    }

    /// The 10 upper-case base32 characters of the secret after look-alike substitution (ASCII): the
    /// scrypt password of ``PollSecret``.
    public var secretText: String {
        var chars: [UInt8] = []
        for i in stride(from: Self.secretCharacters - 1, through: 0, by: -1) {
            chars.append(Crockford.alphabet[Int((secret >> UInt64(5 * i)) & 31)])
        }
        return String(decoding: chars, as: UTF8.self)
    }

    /// `4821-K7QXM-3PF9A`.
    public var description: String {
        let s = secretText
        return "\(voteID)-\(s.prefix(5))-\(s.suffix(5))"
    }
}

/// Why a join code did not parse.
public enum JoinCodeError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    /// Not three dash-separated groups `NNNN-XXXXX-XXXXX`.
    case wrongShape(String)
    /// The second or third group (`group` 2 or 3) does not have 5 characters.
    case wrongGroupLength(group: Int, String)
    /// The first group is not 1–5 decimal digits.
    case badVoteID(String)
    /// The vote ID is 0 or above 65535.
    case voteIDOutOfRange(String)
    /// A character in the secret is not Crockford base32.
    case badSecretCharacter(Character)
    /// The secret has more than 50 bits.
    case secretOutOfRange

    public var description: String {
        switch self {
        case .empty: "the join code is empty; type the code shown on the instructor's screen, like 4821-K7QXM-3PF9A"
        case .wrongShape(let t):
            "'\(t)' is not a join code: it has \(t.split(separator: "-", omittingEmptySubsequences: false).count) "
                + "dash-separated groups, expected three like 4821-K7QXM-3PF9A"
        case .wrongGroupLength(let n, let g):
            "the \(n == 2 ? "second" : "third") group '\(g)' has \(g.count) characters, expected 5 (like 4821-K7QXM-3PF9A)"
        case .badVoteID(let t): "'\(t)' is not a vote ID; the first group must be 1 to 5 digits"
        case .voteIDOutOfRange(let t): "vote ID \(t) is out of range (1 to 65535)"
        case .badSecretCharacter(let c): "'\(c)' cannot appear in a join code; use digits and letters except U"
        case .secretOutOfRange: "the secret has more than 50 bits"
        }
    }
}

extension StringProtocol {
    /// The text without white space at either end: the package's one trimmer of typed input.
    public func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
