import Crypto
import _CryptoExtras

/// The poll's beacon key pair (docs/PROTOCOL.md §11.2, version 4): an Ed25519 key only the tally
/// holds, whose public key the join code commits to (``BeaconAnchor``). Signed frames carry its
/// signature, so no holder of the join code can make them.
///
/// Holds the 32-byte seed (`Curve25519.Signing.PrivateKey` is not `Sendable`; it is rebuilt per
/// signature, which costs one scalar multiplication less than the signature itself).
public struct BeaconSigner: Sendable, Hashable, CustomStringConvertible {
    /// The 32-byte Ed25519 seed (RFC 8032 private key), stored with the poll.
    public let seed: [UInt8]
    /// Its public key.
    public let publicKey: BeaconPublicKey

    /// From a stored seed; nil unless it is 32 bytes.
    public init?(seed: some Collection<UInt8>) {
        let s = Array(seed)
        guard s.count == 32, let k = try? Curve25519.Signing.PrivateKey(rawRepresentation: s) else { return nil }
        self.seed = s
        publicKey = BeaconPublicKey(unchecked: Array(k.publicKey.rawRepresentation))
    }

    /// A fresh key pair from the system's secure random generator.
    public static func random() -> BeaconSigner {
        let k = Curve25519.Signing.PrivateKey()
        // A seed of 32 bytes is always accepted.
        return BeaconSigner(seed: k.rawRepresentation) ?? BeaconSigner(unchecked: Array(k.rawRepresentation), Array(k.publicKey.rawRepresentation))
    }

    init(unchecked seed: [UInt8], _ pk: [UInt8]) {
        self.seed = seed
        publicKey = BeaconPublicKey(unchecked: pk)
    }

    /// The 64-byte Ed25519 signature of `message` (RFC 8032, deterministic).
    public func sign(_ message: [UInt8]) -> [UInt8] {
        do {
            let k = try Curve25519.Signing.PrivateKey(rawRepresentation: seed)
            return Array(try k.signature(for: message))
        } catch {
            // The seed was accepted at init; signing a byte array does not fail.
            fatalError("Ed25519 signing failed: \(error)")
        }
    }

    /// Never prints the seed.
    public var description: String { "BeaconSigner(\(publicKey))" }
}

/// A poll's beacon public key (32 bytes, RFC 8032).
public struct BeaconPublicKey: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// Nil unless 32 bytes that decode as an Ed25519 point.
    public init?(bytes: some Collection<UInt8>) {
        let b = Array(bytes)
        guard b.count == 32, (try? Curve25519.Signing.PublicKey(rawRepresentation: b)) != nil else { return nil }
        self.bytes = b
    }

    /// Whether `signature` is this key's signature of `message`.
    public func verify(_ signature: some Collection<UInt8>, of message: [UInt8]) -> Bool {
        guard signature.count == 64, let k = try? Curve25519.Signing.PublicKey(rawRepresentation: bytes) else { return false }
        return k.isValidSignature(Array(signature), for: message)
    }

    public var description: String {
        let hex = Array("0123456789abcdef")
        return String(bytes.prefix(4).flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 15)]] }) + "…"
    }
}

/// The trust anchor (docs/PROTOCOL.md §2 and §11.2, version 4): a version-4 tally draws the join
/// code's secret from its beacon public key instead of at random,
///
///     A = scrypt(password = pk, salt = "clicker-v4-anchor" ‖ voteID(2), N = 2^15, r = 8, p = 1, dkLen = 32)
///     secret = the first 50 bits of A
///
/// so a voter that learns a public key from the air accepts it only if it gives the join code it was
/// told. A holder of the join code who wants its own key accepted must find one whose 50 bits match:
/// 2^50 scrypt, the cost of guessing the secret itself.
public enum BeaconAnchor {
    /// The scrypt salt: `"clicker-v4-anchor" ‖ voteID(2)`.
    public static func salt(voteID: UInt16) -> [UInt8] { Array("clicker-v4-anchor".utf8) + KeyDerivation.be16(voteID) }

    /// A, the 32 bytes of the anchor derivation (one scrypt: tens of milliseconds).
    public static func derive(_ pk: BeaconPublicKey, voteID: UInt16) -> [UInt8] {
        do {
            let k = try KDF.Scrypt.deriveKey(from: pk.bytes, salt: salt(voteID: voteID), outputByteCount: 32,
                                             rounds: PollSecret.scryptN, blockSize: PollSecret.scryptR,
                                             parallelism: PollSecret.scryptP, maxMemory: PollSecret.scryptMaxMemory)
            return k.withUnsafeBytes { Array($0) }
        } catch {
            // As in ``PollSecret``: only a failed allocation of 32 MiB gets here.
            fatalError("scrypt failed (out of memory?): \(error)")
        }
    }

    /// The join code's 50-bit secret that `pk` commits to: the first 50 bits of A, big-endian.
    public static func secret(of pk: BeaconPublicKey, voteID: UInt16) -> UInt64 {
        let a = derive(pk, voteID: voteID)
        let top = a.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return top >> UInt64(64 - JoinCode.secretBits)
    }

    /// The join code of vote `voteID` whose secret commits to `pk`.
    public static func joinCode(voteID: UInt16, publicKey pk: BeaconPublicKey) -> JoinCode {
        JoinCode(unchecked: max(1, voteID), secret(of: pk, voteID: max(1, voteID)))
    }

    /// Whether `pk` is the key `code` commits to.
    public static func matches(_ pk: BeaconPublicKey, _ code: JoinCode) -> Bool {
        secret(of: pk, voteID: code.voteID) == code.secret
    }
}

extension KeyDerivation {
    /// The 32-byte keystream that hides the public key in a signed STATE frame:
    /// HKDF(ikm = S, salt = "clicker-v2", info = "beacon-key" ‖ voteID)[0‥31].
    public static func beaconKeyMask(_ s: PollSecret) -> [UInt8] {
        Array(hkdf(ikm: s.bytes, info: Array("beacon-key".utf8) + be16(s.voteID)).prefix(32))
    }

    /// The message a signed beacon frame's signature covers: `"clicker-v4-beacon" ‖ voteID(2) ‖ bytes`,
    /// where `bytes` are the frame's bytes before the signature.
    public static func beaconSignedMessage(voteID: UInt16, _ bytes: some Collection<UInt8>) -> [UInt8] {
        Array("clicker-v4-beacon".utf8) + be16(voteID) + Array(bytes)
    }
}
