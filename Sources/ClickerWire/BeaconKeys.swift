import Crypto

/// The two keys of a poll's beacon (docs/PROTOCOL.md §11.2): the *frame key* that tags every
/// beacon frame and keys the question-text digest, and the *ack key* that makes acknowledgement
/// fingerprints.
///
/// Derived from the poll secret S alone, so every voter of the poll (anonymous or roster) can
/// check a beacon, and separate from every ballot key (another HKDF label). Holds HMAC-SHA256
/// states with the keys already absorbed; build one per poll, never per frame.
public struct BeaconKey: @unchecked Sendable {
    // @unchecked: HMAC<SHA256> wraps class-backed digest contexts and is not marked Sendable.
    // These values are never mutated after init; every use copies them into a local `var`, and
    // swift-crypto's digest contexts are copy-on-write (`isKnownUniquelyReferenced` before each
    // update), so the shared contexts are only ever read, from any thread.
    let frame: HMAC<SHA256>
    let ack: HMAC<SHA256>
    /// The poll's vote ID, which STATE frames carry in clear and the key is bound to.
    public let voteID: UInt16
    /// The keystream that hides the poll's public key in a signed STATE (``KeyDerivation/beaconKeyMask(_:)``);
    /// nil when built from key material alone.
    public let keyMask: [UInt8]?
    /// The join code the key was derived from, whose secret a version-4 tally's public key commits
    /// to (``BeaconAnchor``); nil when built from key material alone.
    public let joinCode: JoinCode?

    /// The beacon key of the poll whose secret is `secret`:
    /// HKDF-SHA256(ikm = S, salt = "clicker-v2", info = "beacon" ‖ voteID, L = 64).
    public init(_ secret: PollSecret) {
        self.init(KeyDerivation.beaconKeyMaterial(secret), voteID: secret.voteID,
                  keyMask: KeyDerivation.beaconKeyMask(secret), joinCode: secret.joinCode)
    }

    /// The public key a signed STATE's hidden key reveals (pk = hidden ⊕ mask); nil without a mask,
    /// or when it is not a curve point.
    public func revealKey(_ hidden: [UInt8]) -> BeaconPublicKey? {
        guard let keyMask, hidden.count == keyMask.count else { return nil }
        return BeaconPublicKey(bytes: zip(hidden, keyMask).map { $0 ^ $1 })
    }

    /// The hidden key a signed STATE carries for `pk`; nil without a mask.
    public func hide(_ pk: BeaconPublicKey) -> [UInt8]? {
        keyMask.map { zip(pk.bytes, $0).map { $0 ^ $1 } }
    }

    /// From 64 bytes of beacon key material: bytes 0..<32 are the frame key, 32..<64 the ack key.
    /// Nil for any other length.
    public init?(keyMaterial: some Collection<UInt8>, voteID: UInt16) {
        let m = Array(keyMaterial)
        guard m.count == 64 else { return nil }
        self.init(m, voteID: voteID)
    }

    init(_ m: [UInt8], voteID: UInt16, keyMask: [UInt8]? = nil, joinCode: JoinCode? = nil) {
        frame = HMAC<SHA256>(key: SymmetricKey(data: m[0..<32]))
        ack = HMAC<SHA256>(key: SymmetricKey(data: m[32..<64]))
        self.voteID = voteID
        self.keyMask = keyMask
        self.joinCode = joinCode
    }

    /// HMAC-SHA256(frame key, bytes): the full tag of a frame's authenticated bytes.
    @inline(__always)
    func tag(_ bytes: UnsafeRawBufferPointer) -> HashedAuthenticationCode<SHA256> {
        var h = frame
        h.update(data: bytes)
        return h.finalize()
    }

    /// The acknowledgement fingerprint of one ballot:
    /// HMAC-SHA256(ack key, voterID(4) ‖ question(1) ‖ sequence(2))[0‥3].
    public func fingerprint(voterID: UInt32, question: UInt8, sequence: UInt16) -> AckFingerprint {
        AckFingerprint(value: KeyDerivation.be32(fingerprintMAC(voterID: voterID, question: question, sequence: sequence)))
    }

    /// The whole 32-byte HMAC a fingerprint is cut from (for the analysis of narrower fingerprints).
    public func fingerprintMAC(voterID: UInt32, question: UInt8, sequence: UInt16) -> [UInt8] {
        var h = ack
        let input: [UInt8] = [UInt8(voterID >> 24), UInt8(truncatingIfNeeded: voterID >> 16),
                              UInt8(truncatingIfNeeded: voterID >> 8), UInt8(truncatingIfNeeded: voterID),
                              question, UInt8(sequence >> 8), UInt8(truncatingIfNeeded: sequence)]
        h.update(data: input)
        return Array(h.finalize())
    }

    /// The digest of a question's text block (``QuestionText/block``) that STATE frames carry and
    /// TEXT pages name: HMAC-SHA256(frame key, "text" ‖ block)[0‥3], big-endian.
    public func textDigest(_ block: some Collection<UInt8>) -> UInt32 {
        KeyDerivation.be32(strongTextDigest(block))
    }

    /// The 16-byte digest a signed STATE carries: HMAC-SHA256(frame key, "text" ‖ block)[0‥15]. Its
    /// first 4 bytes are ``textDigest(_:)``.
    public func strongTextDigest(_ block: some Collection<UInt8>) -> [UInt8] {
        var h = frame
        h.update(data: Array("text".utf8))
        h.update(data: Array(block))
        return Array(Array(h.finalize()).prefix(BeaconFormat.strongDigestLength))
    }
}

extension KeyDerivation {
    /// 64 bytes of beacon key material: HKDF(ikm = S, info = "beacon" ‖ voteID). Frame key ‖ ack key.
    public static func beaconKeyMaterial(_ s: PollSecret) -> [UInt8] {
        hkdf(ikm: s.bytes, info: Array("beacon".utf8) + be16(s.voteID))
    }
}
