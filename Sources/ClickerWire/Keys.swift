import Crypto

/// The two keys that protect ballots: one for the answer's keystream, one for the tag.
///
/// Holds HMAC-SHA256 states with the key already absorbed, so sealing or opening a ballot costs
/// two short HMACs and no key setup. Derive one per poll (``anonymous(_:)``) or per enrolled
/// student and poll (``roster(deviceKey:joinCode:)``), never per report.
public struct BallotKey: @unchecked Sendable {
    // @unchecked: HMAC<SHA256> wraps class-backed digest contexts and is not marked Sendable.
    // These two values are never mutated after init; every use copies them into a local `var`,
    // and swift-crypto's digest contexts are copy-on-write (`isKnownUniquelyReferenced` before
    // each update), so the shared contexts are only ever read, from any thread.
    let encryption: HMAC<SHA256>
    let authentication: HMAC<SHA256>

    /// From 64 bytes of key material: bytes 0..<32 key the keystream, 32..<64 the tag.
    /// Returns nil for any other length.
    public init?(keyMaterial: some Collection<UInt8>) {
        let m = Array(keyMaterial)
        guard m.count == 64 else { return nil }
        encryption = HMAC<SHA256>(key: SymmetricKey(data: m[0..<32]))
        authentication = HMAC<SHA256>(key: SymmetricKey(data: m[32..<64]))
    }

    init(_ m: [UInt8]) {
        encryption = HMAC<SHA256>(key: SymmetricKey(data: m[0..<32]))
        authentication = HMAC<SHA256>(key: SymmetricKey(data: m[32..<64]))
    }

    /// The poll key of anonymous mode, shared by everyone who knows the join code.
    /// HKDF-SHA256(ikm = secret text, salt = "clicker-v1", info = "poll" ‖ voteID, L = 64).
    public static func anonymous(_ code: JoinCode) -> BallotKey {
        BallotKey(KeyDerivation.pollKeyMaterial(code))
    }

    /// One enrolled student's key for one poll (roster mode).
    /// HKDF-SHA256(ikm = device key ‖ secret text, salt = "clicker-v1", info = "roster" ‖ voteID, L = 64).
    public static func roster(deviceKey: DeviceKey, joinCode: JoinCode) -> BallotKey {
        BallotKey(KeyDerivation.rosterKeyMaterial(deviceKey: deviceKey, code: joinCode))
    }

    /// HMAC-SHA256 under the keystream key.
    @inline(__always)
    func keystream(_ message: UnsafeRawBufferPointer) -> HashedAuthenticationCode<SHA256> {
        var h = encryption
        h.update(data: message)
        return h.finalize()
    }

    /// HMAC-SHA256 under the tag key.
    @inline(__always)
    func tag(_ message: UnsafeRawBufferPointer) -> HashedAuthenticationCode<SHA256> {
        var h = authentication
        h.update(data: message)
        return h.finalize()
    }
}

/// The key derivations of docs/PROTOCOL.md §3, as bytes (for vectors and tests).
public enum KeyDerivation {
    /// HKDF salt for every derivation.
    public static let salt: [UInt8] = Array("clicker-v1".utf8)

    static func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(truncatingIfNeeded: v)] }

    static func hkdf(ikm: [UInt8], info: [UInt8]) -> [UInt8] {
        let k = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: ikm), salt: salt, info: info,
                                       outputByteCount: 64)
        return k.withUnsafeBytes { Array($0) }
    }

    /// 64 bytes of anonymous-mode key material for a join code.
    public static func pollKeyMaterial(_ code: JoinCode) -> [UInt8] {
        hkdf(ikm: Array(code.secretText.utf8), info: Array("poll".utf8) + be16(code.voteID))
    }

    /// 64 bytes of roster-mode key material for one device and one join code.
    public static func rosterKeyMaterial(deviceKey: DeviceKey, code: JoinCode) -> [UInt8] {
        hkdf(ikm: deviceKey.bytes + Array(code.secretText.utf8), info: Array("roster".utf8) + be16(code.voteID))
    }

    /// First four bytes (big-endian) of HMAC-SHA256(device key, label ‖ voteID ‖ secret text).
    static func voterID(deviceKey: DeviceKey, label: String, code: JoinCode) -> UInt32 {
        var h = HMAC<SHA256>(key: SymmetricKey(data: deviceKey.bytes))
        h.update(data: Array(label.utf8) + be16(code.voteID) + Array(code.secretText.utf8))
        let mac = h.finalize()
        return mac.withUnsafeBytes { b in
            UInt32(b[0]) << 24 | UInt32(b[1]) << 16 | UInt32(b[2]) << 8 | UInt32(b[3])
        }
    }
}

/// A device's own 32-byte secret. In anonymous mode it only derives per-poll voter IDs; in
/// roster mode it is also the student's key, handed to the instructor as an ``EnrollmentCode``.
/// The voter stores ``encoded`` in a file readable only by its owner (0600).
public struct DeviceKey: Sendable, Hashable {
    /// The 32 key bytes.
    public let bytes: [UInt8]

    /// From exactly 32 bytes; nil otherwise.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        self.bytes = Array(bytes)
    }

    /// A new key from `rng` (use the system generator outside tests).
    public static func generate<G: RandomNumberGenerator>(using rng: inout G) -> DeviceKey {
        var b: [UInt8] = []
        b.reserveCapacity(32)
        for _ in 0..<4 {
            let v = rng.next()
            for s in stride(from: 56, through: 0, by: -8) { b.append(UInt8(truncatingIfNeeded: v >> UInt64(s))) }
        }
        return DeviceKey(unchecked: b)
    }

    /// A new key from the system's secure random generator.
    public static func generate() -> DeviceKey {
        var g = SystemRandomNumberGenerator()
        return generate(using: &g)
    }

    init(unchecked b: [UInt8]) { bytes = b }

    /// The storage form: `clicker-device-key-v1 ` followed by 64 lower-case hex digits and a newline.
    public var encoded: String {
        "clicker-device-key-v1 " + bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() + "\n"
    }

    /// Parses ``encoded`` (surrounding white space ignored).
    public init(encoded text: some StringProtocol) throws(DeviceKeyError) {
        let t = text.trimmingWhitespace()
        let prefix = "clicker-device-key-v1 "
        guard t.hasPrefix(prefix) else { throw .notADeviceKey }
        let hex = Array(t.dropFirst(prefix.count).utf8)
        guard hex.count == 64 else { throw .wrongLength(hex.count) }
        var out: [UInt8] = []
        for i in stride(from: 0, to: 64, by: 2) {
            guard let h = hexValue(hex[i]), let l = hexValue(hex[i + 1]) else { throw .badHex }
            out.append(h << 4 | l)
        }
        bytes = out
    }

    /// This device's voter ID in an anonymous poll: unlinkable across polls without the device key.
    /// First 4 bytes of HMAC-SHA256(key, "anon-id" ‖ voteID ‖ secret text).
    public func anonymousVoterID(for code: JoinCode) -> UInt32 {
        KeyDerivation.voterID(deviceKey: self, label: "anon-id", code: code)
    }

    /// This device's voter ID in a roster poll; the tally computes the same from the enrollment code.
    /// First 4 bytes of HMAC-SHA256(key, "roster-id" ‖ voteID ‖ secret text).
    public func rosterVoterID(for code: JoinCode) -> UInt32 {
        KeyDerivation.voterID(deviceKey: self, label: "roster-id", code: code)
    }

    /// The code a student hands the instructor to be put on the roster.
    public var enrollmentCode: EnrollmentCode { EnrollmentCode(deviceKey: self) }
}

@inline(__always)
func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
    default: nil
    }
}

/// Why a stored device key did not parse.
public enum DeviceKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    case notADeviceKey
    case wrongLength(Int)
    case badHex

    public var description: String {
        switch self {
        case .notADeviceKey: "not a clicker device key (it must start with 'clicker-device-key-v1 ')"
        case .wrongLength(let n): "device key has \(n) hex digits, expected 64"
        case .badHex: "device key contains a character that is not a hex digit"
        }
    }
}
