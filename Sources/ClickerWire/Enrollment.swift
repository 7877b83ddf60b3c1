import Crypto

/// What a student hands the instructor to be put on the roster: the device key and a checksum,
/// written `CE1-` and 7 groups of 8 Crockford base32 characters (35 bytes: 32 key bytes and the
/// first 3 bytes of SHA-256("clicker-enroll" ‖ key)). It is as secret as the device key: whoever
/// holds it can vote as that student.
public struct EnrollmentCode: Sendable, Hashable, CustomStringConvertible, LosslessStringConvertible {
    public static let prefix = "CE1-"
    /// The device key it carries.
    public let deviceKey: DeviceKey

    public init(deviceKey: DeviceKey) { self.deviceKey = deviceKey }

    static func checksum(_ key: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: Array("clicker-enroll".utf8) + key).prefix(3))
    }

    /// `CE1-XXXXXXXX-XXXXXXXX-…` (7 groups).
    public var description: String {
        let text = Array(Crockford.encode(deviceKey.bytes + Self.checksum(deviceKey.bytes)).utf8)
        var groups: [String] = []
        for i in stride(from: 0, to: text.count, by: 8) {
            groups.append(String(decoding: text[i..<min(i + 8, text.count)], as: UTF8.self))
        }
        return Self.prefix + groups.joined(separator: "-")
    }

    /// Parses an enrollment code; dashes and spaces between groups are optional, case is ignored.
    public init(parsing text: some StringProtocol) throws(EnrollmentCodeError) {
        let t = text.trimmingWhitespace()
        guard !t.isEmpty else { throw .empty }
        guard t.uppercased().hasPrefix(Self.prefix) else { throw .notAnEnrollmentCode(t) }
        let body = Array(t.dropFirst(Self.prefix.count).utf8).filter { $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: " ") }
        guard body.count == 56 else { throw .wrongLength(body.count) }
        for c in body where Crockford.value(of: c) == nil {
            throw .badCharacter(Character(UnicodeScalar(c)))
        }
        guard let bytes = Crockford.decode(body, byteCount: 35) else { throw .checksumMismatch }
        let key = Array(bytes[0..<32])
        guard Array(bytes[32..<35]) == Self.checksum(key) else { throw .checksumMismatch }
        deviceKey = DeviceKey(unchecked: key)
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
    case wrongLength(Int)
    case badCharacter(Character)
    case checksumMismatch

    public var description: String {
        switch self {
        case .empty: "the enrollment code is empty"
        case .notAnEnrollmentCode(let t): "'\(t.prefix(12))…' is not an enrollment code (it must start with CE1-)"
        case .wrongLength(let n): "the enrollment code has \(n) characters after CE1-, expected 56"
        case .badCharacter(let c): "'\(c)' cannot appear in an enrollment code"
        case .checksumMismatch: "the enrollment code is mistyped (its checksum does not match)"
        }
    }
}
