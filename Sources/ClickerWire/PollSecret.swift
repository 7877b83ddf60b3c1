import Crypto
import _CryptoExtras

/// S, the poll secret of docs/PROTOCOL.md §2: the memory-hard derivation of a join code.
///
/// `S = scrypt(password = secret text, salt = "clicker-v2" ‖ voteID, N = 2^15, r = 8, p = 1, 32 bytes)`.
/// Deriving it costs tens of milliseconds and 32 MiB of memory on purpose: that is what makes
/// guessing the 50-bit secret from a recorded ballot take years. Derive it once per poll (the
/// tally when a poll opens or resumes, the voter once at start) and pass it around; every other key
/// (``PollKeyring``, ``BallotSealer``) is built from this value, never from the join code.
public struct PollSecret: Sendable, Hashable, CustomStringConvertible {
    /// scrypt cost parameter N (`rounds` in swift-crypto).
    public static let scryptN = 1 << 15
    /// scrypt block size r.
    public static let scryptR = 8
    /// scrypt parallelism p.
    public static let scryptP = 1
    /// Memory scrypt needs (128 · r · (N + p + 1) bytes, about 32 MiB) rounded up; BoringSSL's
    /// default cap is 32 MiB, just too little.
    public static let scryptMaxMemory = 64 << 20

    /// The join code it was derived from (its vote ID is sent in clear in every ballot).
    public let joinCode: JoinCode
    /// The 32 bytes of S.
    public let bytes: [UInt8]

    /// The poll's vote ID.
    public var voteID: UInt16 { joinCode.voteID }

    /// Runs scrypt on the join code's secret text (tens of milliseconds in a release build; call it
    /// once per poll, off any latency-sensitive path).
    public init(deriving code: JoinCode) {
        joinCode = code
        bytes = Self.scrypt(code)
    }

    /// A value derived earlier (by ``init(deriving:)`` or an independent implementation).
    /// Nil unless `bytes` holds exactly 32 bytes. Nothing checks that it belongs to `joinCode`.
    public init?(joinCode: JoinCode, derived bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        self.joinCode = joinCode
        self.bytes = Array(bytes)
    }

    /// The scrypt salt: `"clicker-v2" ‖ voteID(2, big-endian)`.
    public static func salt(voteID: UInt16) -> [UInt8] { KeyDerivation.salt + KeyDerivation.be16(voteID) }

    static func scrypt(_ code: JoinCode) -> [UInt8] {
        do {
            let k = try KDF.Scrypt.deriveKey(from: Array(code.secretText.utf8), salt: salt(voteID: code.voteID),
                                             outputByteCount: 32, rounds: scryptN, blockSize: scryptR,
                                             parallelism: scryptP, maxMemory: scryptMaxMemory)
            return k.withUnsafeBytes { Array($0) }
        } catch {
            // Only a failed allocation of 32 MiB gets here (the parameters are constants that
            // BoringSSL accepts); no key can be made without it.
            fatalError("scrypt failed (out of memory?): \(error)")
        }
    }

    /// Never prints the secret.
    public var description: String { "PollSecret(vote \(joinCode.voteID))" }
}
