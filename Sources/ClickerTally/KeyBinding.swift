import ClickerTransport

/// A voter's per-poll Ed25519 public key, as a signed GATT ballot carries it (32 bytes).
public struct VoterPublicKey: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Nil unless `bytes` holds exactly 32 bytes.
    public init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        self.bytes = Array(bytes)
    }

    public var description: String {
        "pk:" + Hex.string(bytes.prefix(4)) + "…"
    }
}

/// How the tally got a ballot, which decides whether it may outrank others (PROTOCOL.md, "Takeover rule").
public enum BallotProof: Sendable, Hashable {
    /// Heard in an advertisement. An anonymous-mode advertisement can be made by anyone who knows the
    /// join code, so it is unverified; a roster-mode one is verified by its tag (the student's own key).
    case advertised
    /// Read over GATT, its signature checked by the wire decoder with `key` (whose hash is the voter ID).
    /// It is verified when `key` is the key bound to the voter ID in this poll, or when none is bound yet.
    case signed(VoterPublicKey)
}

/// What checking a signed ballot's key against the poll's bindings found.
public enum KeyCheck: Sendable, Hashable {
    /// No key was bound to this voter ID: this one will be, if its ballot is taken (trust on first use).
    case unbound
    /// The key bound to this voter ID.
    case bound
    /// Another key than the bound one: the ballot is rejected as `keyMismatch`.
    case mismatch
}

/// Voter ID → public key, per poll: trust on first use. The first verified GATT read of an anonymous
/// voter ID binds it; after that only ballots signed by that key are verified for that ID.
public struct KeyBindings: Sendable, Hashable {
    public private(set) var keys: [UInt32: VoterPublicKey] = [:]

    public init() {}

    /// Number of bound voter IDs.
    public var count: Int { keys.count }

    /// The key bound to `voterID`, if any.
    public subscript(voterID: UInt32) -> VoterPublicKey? { keys[voterID] }

    public func check(_ key: VoterPublicKey, voterID: UInt32) -> KeyCheck {
        guard let bound = keys[voterID] else { return .unbound }
        return bound == key ? .bound : .mismatch
    }

    /// Binds `key` to `voterID` unless another key is bound already. Returns true if this added a binding.
    @discardableResult
    public mutating func bind(_ key: VoterPublicKey, voterID: UInt32) -> Bool {
        guard keys[voterID] == nil else { return false }
        keys[voterID] = key
        return true
    }
}
