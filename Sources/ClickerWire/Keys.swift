import ClickerTransport
import Crypto

/// The two keys that protect ballots: one for the answer's keystream, one for the tag.
///
/// Holds HMAC-SHA256 states with the key already absorbed, so sealing or opening a ballot costs
/// two short HMACs and no key setup. Derive one per poll (``anonymous(_:)``) or per enrolled
/// student and poll (``roster(_:secret:)``), never per report; both take the poll secret S
/// (``PollSecret``), so building them never re-runs scrypt.
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
    /// HKDF-SHA256(ikm = S, salt = "clicker-v2", info = "poll" ‖ voteID, L = 64).
    public static func anonymous(_ secret: PollSecret) -> BallotKey {
        BallotKey(KeyDerivation.pollKeyMaterial(secret))
    }

    /// One enrolled student's key for one poll (roster mode).
    /// HKDF-SHA256(ikm = D_roster ‖ S, salt = "clicker-v2", info = "roster" ‖ voteID, L = 64).
    public static func roster(_ rosterKey: RosterKey, secret: PollSecret) -> BallotKey {
        BallotKey(KeyDerivation.rosterKeyMaterial(rosterKey: rosterKey, secret: secret))
    }

    /// HMAC-SHA256(enc key, header ‖ tag8): the synthetic-IV keystream.
    @inline(__always)
    func keystream(header: UnsafeRawBufferPointer, tag8: UnsafeRawBufferPointer) -> HashedAuthenticationCode<SHA256> {
        var h = encryption
        h.update(data: header)
        h.update(data: tag8)
        return h.finalize()
    }

    /// HMAC-SHA256(tag key, header ‖ plaintext answer).
    @inline(__always)
    func tag(header: UnsafeRawBufferPointer, answer: UnsafeRawBufferPointer) -> HashedAuthenticationCode<SHA256> {
        var h = authentication
        h.update(data: header)
        h.update(data: answer)
        return h.finalize()
    }
}

/// The key derivations of docs/PROTOCOL.md §3 and §5, as bytes (for vectors and tests).
public enum KeyDerivation {
    /// HKDF salt for every derivation, and the prefix of the scrypt salt.
    public static let salt: [UInt8] = Array("clicker-v2".utf8)

    static func be16(_ v: UInt16) -> [UInt8] { [UInt8(v >> 8), UInt8(truncatingIfNeeded: v)] }

    static func hkdf(ikm: [UInt8], info: [UInt8]) -> [UInt8] {
        let k = HKDF<SHA256>.deriveKey(inputKeyMaterial: SymmetricKey(data: ikm), salt: salt, info: info,
                                       outputByteCount: 64)
        return k.withUnsafeBytes { Array($0) }
    }

    static func hmac(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }

    static func be32(_ b: some Collection<UInt8>) -> UInt32 {
        b.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// 64 bytes of anonymous-mode key material: HKDF(ikm = S, info = "poll" ‖ voteID).
    public static func pollKeyMaterial(_ s: PollSecret) -> [UInt8] {
        hkdf(ikm: s.bytes, info: Array("poll".utf8) + be16(s.voteID))
    }

    /// 64 bytes of roster-mode key material: HKDF(ikm = D_roster ‖ S, info = "roster" ‖ voteID).
    public static func rosterKeyMaterial(rosterKey: RosterKey, secret s: PollSecret) -> [UInt8] {
        hkdf(ikm: rosterKey.bytes + s.bytes, info: Array("roster".utf8) + be16(s.voteID))
    }

    /// Roster voter ID: first 4 bytes (big-endian) of HMAC(D_roster, "roster-id" ‖ voteID ‖ S).
    public static func rosterVoterID(rosterKey: RosterKey, secret s: PollSecret) -> UInt32 {
        be32(hmac(rosterKey.bytes, Array("roster-id".utf8) + be16(s.voteID) + s.bytes))
    }

    /// The 32-byte Ed25519 seed of a device's per-poll signing key:
    /// HMAC(D_anon, "sign" ‖ mode ‖ voteID ‖ S).
    public static func signingSeed(deviceKey: DeviceKey, mode: BallotMode, secret s: PollSecret) -> [UInt8] {
        hmac(deviceKey.anonymousKey, Array("sign".utf8) + [mode.rawValue] + be16(s.voteID) + s.bytes)
    }

    /// The self-certifying anonymous voter ID of a public key: first 4 bytes (big-endian) of
    /// SHA-256("clicker-v2 voter-id" ‖ pk).
    public static func anonymousVoterID(publicKey pk: some Collection<UInt8>) -> UInt32 {
        var h = SHA256()
        h.update(data: Array("clicker-v2 voter-id".utf8))
        h.update(data: Array(pk))
        return be32(Array(h.finalize()))
    }
}

/// What the enrollment code carries and the tally's roster holds: D_roster = HMAC(D, "clicker-v2
/// roster-key"), 32 bytes. It keys roster ballots and roster voter IDs; it cannot compute anonymous
/// voter IDs (those come from D_anon, which never leaves the device).
public struct RosterKey: Sendable, Hashable {
    /// The 32 key bytes.
    public let bytes: [UInt8]

    /// From exactly 32 bytes; nil otherwise.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        self.bytes = Array(bytes)
    }

    init(unchecked b: [UInt8]) { bytes = b }

    /// This student's voter ID in a roster poll (the voter computes the same from its device key).
    public func voterID(in s: PollSecret) -> UInt32 { KeyDerivation.rosterVoterID(rosterKey: self, secret: s) }

    /// The code a student hands the instructor to be put on the roster.
    public var enrollmentCode: EnrollmentCode { EnrollmentCode(rosterKey: self) }
}

/// A device's own 32-byte master secret D. It never leaves the device; two keys are derived from it
/// by different labels: ``rosterKey`` (D_roster, handed to the instructor as an ``EnrollmentCode``)
/// and the anonymous key D_anon, which seeds the per-poll signing key and so the anonymous voter ID.
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

    /// The storage form: `clicker-device-key-v1 ` followed by 64 lower-case hex digits and one
    /// newline (the whole file).
    public var encoded: String {
        "clicker-device-key-v1 " + Hex.string(bytes) + "\n"
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

    /// D_roster = HMAC(D, "clicker-v2 roster-key"): what the enrollment code carries.
    public var rosterKey: RosterKey {
        RosterKey(unchecked: KeyDerivation.hmac(bytes, Array("clicker-v2 roster-key".utf8)))
    }

    /// D_anon = HMAC(D, "clicker-v2 anon-key"): seeds the per-poll signing keys; never leaves the device.
    var anonymousKey: [UInt8] { KeyDerivation.hmac(bytes, Array("clicker-v2 anon-key".utf8)) }

    /// This device's per-poll Ed25519 signing key for ballots of `mode` (docs/PROTOCOL.md §5).
    public func signingKey(mode: BallotMode, secret: PollSecret) -> Curve25519.Signing.PrivateKey {
        let seed = KeyDerivation.signingSeed(deviceKey: self, mode: mode, secret: secret)
        do { return try Curve25519.Signing.PrivateKey(rawRepresentation: seed) } catch {
            // Any 32 bytes are an Ed25519 seed; the seed is an HMAC-SHA256 output, always 32 bytes.
            fatalError("Ed25519 refused a 32-byte seed: \(error)")
        }
    }

    /// This device's voter ID in an anonymous poll: the hash of its per-poll public key, so a
    /// signature by that key proves the ballot came from the holder of this voter ID.
    public func anonymousVoterID(in secret: PollSecret) -> UInt32 {
        KeyDerivation.anonymousVoterID(publicKey: signingKey(mode: .anonymous, secret: secret).publicKey.rawRepresentation)
    }

    /// This device's voter ID in a roster poll; the tally computes the same from the enrollment code.
    public func rosterVoterID(in secret: PollSecret) -> UInt32 { rosterKey.voterID(in: secret) }

    /// The code a student hands the instructor to be put on the roster (it carries D_roster only).
    public var enrollmentCode: EnrollmentCode { EnrollmentCode(rosterKey: rosterKey) }
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
