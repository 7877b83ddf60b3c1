import Crypto

/// What a student hands the instructor to be put on the roster: the roster key D_roster (not the
/// device key) and a checksum, written `CE2-` and 7 groups of 8 Crockford base32 characters (35
/// bytes: 32 key bytes and the first 3 bytes of SHA-256("clicker-enroll" ‖ D_roster)). Whoever holds
/// it can vote as that student in roster polls, but cannot compute the student's anonymous voter IDs.
public struct EnrollmentCode: Sendable, Hashable, CustomStringConvertible, LosslessStringConvertible {
    public static let prefix = "CE2-"
    /// The roster key it carries.
    public let rosterKey: RosterKey

    public init(rosterKey: RosterKey) { self.rosterKey = rosterKey }

    static func checksum(_ key: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: Array("clicker-enroll".utf8) + key).prefix(3))
    }

    /// `CE2-XXXXXXXX-XXXXXXXX-…` (7 groups).
    public var description: String {
        let text = Array(Crockford.encode(rosterKey.bytes + Self.checksum(rosterKey.bytes)).utf8)
        var groups: [String] = []
        for i in stride(from: 0, to: text.count, by: 8) {
            groups.append(String(decoding: text[i..<min(i + 8, text.count)], as: UTF8.self))
        }
        return Self.prefix + groups.joined(separator: "-")
    }

    /// Parses an enrollment code. Case, dashes and spaces are ignored anywhere (so `CE2-…`, `CE2 …`
    /// and `ce2…` all parse), and the look-alikes O/I/L read as 0/1/1. A version-1 code (`CE1`) is
    /// refused with a message saying how to get a new one.
    public init(parsing text: some StringProtocol) throws(EnrollmentCodeError) {
        let t = text.trimmingWhitespace()
        guard !t.isEmpty else { throw .empty }
        let all = Array(t.utf8).filter { $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: " ") }
            .map { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z") ? $0 - 32 : $0 }
        if all.starts(with: Array("CE1".utf8)) { throw .versionOne }
        guard all.starts(with: Array("CE2".utf8)) else { throw .notAnEnrollmentCode(t) }
        let body = Array(all.dropFirst(3))
        guard body.count == 56 else { throw .wrongLength(body.count) }
        for c in body where Crockford.value(of: c) == nil {
            throw .badCharacter(Character(UnicodeScalar(c)))
        }
        guard let bytes = Crockford.decode(body, byteCount: 35) else { throw .checksumMismatch }
        let key = Array(bytes[0..<32])
        guard Array(bytes[32..<35]) == Self.checksum(key) else { throw .checksumMismatch }
        rosterKey = RosterKey(unchecked: key)
    }

    public init?(_ description: String) {
        guard let c = try? EnrollmentCode(parsing: description) else { return nil }
        self = c
    }
}

/// Why an enrollment code did not parse.
public enum EnrollmentCodeError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case notAnEnrollmentCode(String)
    /// A `CE1` code: version 1 carried the device key itself and is no longer accepted.
    case versionOne
    case wrongLength(Int)
    case badCharacter(Character)
    case checksumMismatch

    public var description: String {
        switch self {
        case .empty: "the enrollment code is empty"
        case .notAnEnrollmentCode(let t): "'\(t.prefix(12))…' is not an enrollment code (it must start with CE2)"
        case .versionOne:
            "this is a version-1 enrollment code (CE1), which carried the device key itself; "
                + "run `clicker-vote enroll` again and hand in the new CE2 code"
        case .wrongLength(let n): "the enrollment code has \(n) characters after CE2, expected 56"
        case .badCharacter(let c): "'\(c)' cannot appear in an enrollment code"
        case .checksumMismatch: "the enrollment code is mistyped (its checksum does not match)"
        }
    }
}
