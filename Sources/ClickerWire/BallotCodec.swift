import Crypto

/// A ballot read over GATT, with the per-poll Ed25519 public key that signed it (32 bytes). In
/// anonymous mode the ballot's voter ID is the hash of this key (checked by the decoder).
public struct SignedBallot: Sendable, Hashable {
    public var ballot: Ballot
    /// The voter's per-poll Ed25519 public key, 32 bytes.
    public var publicKey: [UInt8]

    public init(ballot: Ballot, publicKey: [UInt8]) {
        self.ballot = ballot
        self.publicKey = publicKey
    }
}

/// Sealing and opening ballots (docs/PROTOCOL.md §1, §6, §7). Opening is total: any bytes give a
/// ballot or exactly one ``Rejection``.
public enum BallotCodec {
    /// The 22-byte advertisement payload (manufacturer data after the company ID).
    public static func sealAdvertisement(_ ballot: Ballot, key: BallotKey) -> [UInt8] {
        Array(sealFull(ballot, key: key).prefix(BallotFormat.advertisementLength))
    }

    /// The 46-byte full ballot: bytes 0‥13 and the full 32-byte tag.
    public static func sealFull(_ b: Ballot, key: BallotKey) -> [UInt8] {
        var out: [UInt8] = [
            BallotFormat.magic, BallotFormat.version << 4 | b.mode.rawValue,
            UInt8(b.voteID >> 8), UInt8(truncatingIfNeeded: b.voteID), b.question,
            UInt8(b.voterID >> 24), UInt8(truncatingIfNeeded: b.voterID >> 16),
            UInt8(truncatingIfNeeded: b.voterID >> 8), UInt8(truncatingIfNeeded: b.voterID),
            UInt8(b.sequence >> 8), UInt8(truncatingIfNeeded: b.sequence),
        ]
        let a = b.answer.wireBytes
        let plain = [a.0, a.1, a.2]
        // Synthetic IV: the tag over header ‖ plaintext picks the keystream.
        let tag = out.withUnsafeBytes { h in plain.withUnsafeBytes { key.tag(header: h, answer: $0) } }
        let ks = out.withUnsafeBytes { h in
            tag.withUnsafeBytes { key.keystream(header: h, tag8: UnsafeRawBufferPointer(rebasing: $0[0..<8])) }
        }
        ks.withUnsafeBytes { k in
            for i in 0..<3 { out.append(plain[i] ^ k[i]) }
        }
        tag.withUnsafeBytes { out.append(contentsOf: $0) }
        return out
    }

    /// The 142-byte GATT ballot value: full ballot ‖ public key ‖ Ed25519 signature over
    /// "clicker-v2 ballot" ‖ full ballot. `signingKey` is the voter's per-poll key
    /// (``DeviceKey/signingKey(mode:secret:)``).
    public static func sealGATT(_ ballot: Ballot, key: BallotKey, signingKey: Curve25519.Signing.PrivateKey) -> [UInt8] {
        let full = sealFull(ballot, key: key)
        let signature: [UInt8]
        do { signature = Array(try signingKey.signature(for: BallotFormat.signatureContext + full)) } catch {
            // BoringSSL's Ed25519 signing cannot fail for a valid key; swift-crypto declares it throwing.
            fatalError("Ed25519 signing failed: \(error)")
        }
        return full + Array(signingKey.publicKey.rawRepresentation) + signature
    }

    /// The cheap checks, in order: magic, version, mode, length, vote ID, sequence. No cryptography.
    @inline(__always)
    public static func header(_ p: UnsafeRawBufferPointer, length: Int, voteID: UInt16) -> Result<BallotHeader, Rejection> {
        guard p.count >= 1, p[0] == BallotFormat.magic else { return .failure(.notOurs) }
        guard p.count >= 2 else { return .failure(.truncated) }
        guard p[1] >> 4 == BallotFormat.version else { return .failure(.unknownVersion) }
        guard let mode = BallotMode(rawValue: p[1] & 0x0F) else { return .failure(.unknownMode) }
        guard p.count >= length else { return .failure(.truncated) }
        guard p.count == length else { return .failure(.trailingBytes) }
        let v = UInt16(p[2]) << 8 | UInt16(p[3])
        guard v == voteID else { return .failure(.otherVoteID) }
        let sequence = UInt16(p[9]) << 8 | UInt16(p[10])
        guard sequence != 0 else { return .failure(.badSequence) }
        let voter = UInt32(p[5]) << 24 | UInt32(p[6]) << 16 | UInt32(p[7]) << 8 | UInt32(p[8])
        return .success(BallotHeader(mode: mode, voteID: v, question: p[4], voterID: voter, sequence: sequence))
    }

    /// Every check before cryptography (PROTOCOL.md §8.1, 1–7): ``header(_:length:voteID:)``, then the
    /// key for the ballot's mode and voter ID (`unknownVoter` for a roster voter not on the roster).
    @inline(__always)
    public static func headerAndKey(_ p: UnsafeRawBufferPointer, length: Int,
                                    keyring: PollKeyring) -> Result<(BallotHeader, BallotKey), Rejection> {
        header(p, length: length, voteID: keyring.voteID).flatMap { h in
            keyring.key(mode: h.mode, voterID: h.voterID).map { .success((h, $0)) } ?? .failure(.unknownVoter)
        }
    }

    /// Opens an advertisement payload (manufacturer data after the company ID).
    public static func openAdvertisement(_ bytes: UnsafeRawBufferPointer, keyring: PollKeyring) -> Result<Ballot, Rejection> {
        headerAndKey(bytes, length: BallotFormat.advertisementLength, keyring: keyring).flatMap { h, key in
            verifyAndDecrypt(bytes, header: h, key: key)
        }
    }

    /// Opens an advertisement payload (manufacturer data after the company ID).
    public static func openAdvertisement(_ bytes: [UInt8], keyring: PollKeyring) -> Result<Ballot, Rejection> {
        bytes.withUnsafeBytes { openAdvertisement($0, keyring: keyring) }
    }

    /// Opens a GATT ballot value: the ballot and the public key that signed it.
    public static func openGATT(_ bytes: [UInt8], keyring: PollKeyring) -> Result<SignedBallot, Rejection> {
        bytes.withUnsafeBytes { openGATT($0, keyring: keyring) }
    }

    /// Opens a GATT ballot value: the ballot and the public key that signed it.
    public static func openGATT(_ p: UnsafeRawBufferPointer, keyring: PollKeyring) -> Result<SignedBallot, Rejection> {
        headerAndKey(p, length: BallotFormat.gattLength, keyring: keyring).flatMap { h, key in
            verifyGATT(p, header: h, key: key)
        }
    }

    /// Verifies a 142-byte GATT value that passed ``header(_:length:voteID:)`` (whose result is `h`):
    /// the full tag and answer (``verifyAndDecrypt(_:header:key:)``), then, in anonymous mode, that
    /// the voter ID is the hash of the carried public key, then the signature. For split pipelines.
    public static func verifyGATT(_ p: UnsafeRawBufferPointer, header h: BallotHeader, key: BallotKey) -> Result<SignedBallot, Rejection> {
        guard p.count == BallotFormat.gattLength else {
            return .failure(p.count < BallotFormat.gattLength ? .truncated : .trailingBytes)
        }
        let fullLength = BallotFormat.fullBallotLength
        let ballot: Ballot
        switch verifyAndDecrypt(UnsafeRawBufferPointer(rebasing: p[0..<fullLength]), header: h, key: key) {
        case .success(let b): ballot = b
        case .failure(let r): return .failure(r)
        }
        let pk = Array(p[fullLength..<(fullLength + BallotFormat.publicKeyLength)])
        if h.mode == .anonymous, KeyDerivation.anonymousVoterID(publicKey: pk) != h.voterID {
            return .failure(.badSignature)
        }
        let signature = Array(p[(fullLength + BallotFormat.publicKeyLength)...])
        guard let publicKey = try? Curve25519.Signing.PublicKey(rawRepresentation: pk),
              publicKey.isValidSignature(signature, for: BallotFormat.signatureContext + Array(p[0..<fullLength]))
        else { return .failure(.badSignature) }
        return .success(SignedBallot(ballot: ballot, publicKey: pk))
    }

    /// Decrypts the answer and verifies the tag (of whatever length `p` carries after the 14
    /// authenticated bytes, 8 or 32). `p` must have passed ``header(_:length:voteID:)`` (whose result
    /// is `h`); for split pipelines that rate-limit between the cheap checks and the cryptography.
    @inline(__always)
    public static func verifyAndDecrypt(_ p: UnsafeRawBufferPointer, header h: BallotHeader, key: BallotKey) -> Result<Ballot, Rejection> {
        let n = BallotFormat.authenticatedLength
        let tagLength = p.count - n
        guard tagLength == BallotFormat.shortTagLength || tagLength == 32 else {
            return .failure(tagLength < BallotFormat.shortTagLength ? .truncated : .trailingBytes)
        }
        let header = UnsafeRawBufferPointer(rebasing: p[0..<BallotFormat.headerLength])
        let ks = key.keystream(header: header, tag8: UnsafeRawBufferPointer(rebasing: p[n..<(n + 8)]))
        var plain: (UInt8, UInt8, UInt8) = ks.withUnsafeBytes { k in (p[11] ^ k[0], p[12] ^ k[1], p[13] ^ k[2]) }
        let tag = withUnsafeBytes(of: &plain) { key.tag(header: header, answer: $0) }
        let ok = tag.withUnsafeBytes { t -> Bool in
            var diff: UInt8 = 0
            for i in 0..<tagLength { diff |= t[i] ^ p[n + i] }
            return diff == 0
        }
        guard ok else { return .failure(.badTag) }
        guard let answer = Answer(wire: plain.0, plain.1, plain.2) else { return .failure(.malformedAnswer) }
        return .success(Ballot(mode: h.mode, voteID: h.voteID, question: h.question, voterID: h.voterID,
                               sequence: h.sequence, answer: answer))
    }
}
