/// Seals and opens beacon frames (docs/PROTOCOL.md §11). Pure; opening is total.
///
/// Every frame has a *tagged* form (`4B`, `4C`, `4D`: the HMAC tag of a key every holder of the join
/// code derives) and a *signed* form (`43`, `44`, `45`: the same fields, the tag, then the Ed25519
/// signature of the poll's key, which only the tally holds). A signed STATE also carries the
/// 16-byte text digest and the hidden public key.
public enum BeaconCodec {
    /// The frame's bytes: manufacturer data (after the company ID) to advertise under
    /// ``BallotFormat/companyID``; signed by `signer` when given. Throws when a value is outside what
    /// the format carries.
    public static func seal(_ frame: BeaconFrame, key: BeaconKey, signer: BeaconSigner? = nil) throws(BeaconEncodingError) -> [UInt8] {
        var out: [UInt8]
        switch frame {
        case .state(let s): out = try sealState(s, key: key, signed: signer != nil)
        case .acks(let a): out = try sealAcks(a, key: key, signed: signer != nil)
        case .text(let t): out = try sealText(t, key: key, signed: signer != nil)
        }
        if let signer { out += signer.sign(KeyDerivation.beaconSignedMessage(voteID: key.voteID, out)) }
        return out
    }

    /// A signed frame's bytes before its signature (the signed type byte, the fields, the tag): what
    /// ``sign(draft:signer:voteID:)`` completes. For a tally that signs off the path that composes.
    public static func draft(_ frame: BeaconFrame, key: BeaconKey) throws(BeaconEncodingError) -> [UInt8] {
        switch frame {
        case .state(let s): try sealState(s, key: key, signed: true)
        case .acks(let a): try sealAcks(a, key: key, signed: true)
        case .text(let t): try sealText(t, key: key, signed: true)
        }
    }

    /// A draft (``draft(_:key:)``) with its signature appended.
    public static func sign(draft: [UInt8], signer: BeaconSigner, voteID: UInt16) -> [UInt8] {
        draft + signer.sign(KeyDerivation.beaconSignedMessage(voteID: voteID, draft))
    }

    static func be32(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)]
    }

    @inline(__always)
    static func be32(_ p: UnsafeRawBufferPointer, at i: Int) -> UInt32 {
        UInt32(p[i]) << 24 | UInt32(p[i + 1]) << 16 | UInt32(p[i + 2]) << 8 | UInt32(p[i + 3])
    }

    /// Appends the first `length` bytes of the frame key's HMAC over `out`.
    static func appendTag(_ out: inout [UInt8], length: Int, key: BeaconKey) {
        let t = out.withUnsafeBytes { key.tag($0) }
        t.withUnsafeBytes { out.append(contentsOf: $0.prefix(length)) }
    }

    static func sealState(_ s: BeaconState, key: BeaconKey, signed: Bool) throws(BeaconEncodingError) -> [UInt8] {
        var out: [UInt8] = [BallotFormat.magic, BeaconFrameKind.state.typeByte(signed: signed),
                            UInt8(s.voteID >> 8), UInt8(truncatingIfNeeded: s.voteID)]
        out += be32(s.counter)
        let phase: UInt8, q: BeaconQuestion?
        switch s.poll {
        case .closed: (phase, q) = (0, nil)
        case .open(let x): (phase, q) = (1, x)
        case .questionClosed(let x): (phase, q) = (2, x)
        }
        if let q { guard q.isValid else { throw .invalidQuestion } }
        var status = phase << 6 | (s.mode == .roster ? 0x20 : 0)
        if let q {
            status |= (q.textDigest != nil ? 0x10 : 0) | BeaconQuestion.code(of: q.kind)
        }
        out += [q?.number ?? 0, status, q?.options ?? 0, s.interval.code]
        if signed {
            var digest = [UInt8](repeating: 0, count: BeaconFormat.strongDigestLength)
            if let d = q?.textDigest {
                guard let strong = q?.strongDigest, strong.count == BeaconFormat.strongDigestLength,
                      KeyDerivation.be32(strong) == d else { throw .missingSignedField }
                digest = strong
            }
            guard let hidden = s.hiddenKey, hidden.count == BeaconFormat.keyLength else { throw .missingSignedField }
            out += digest + hidden
        } else {
            out += be32(q?.textDigest ?? 0)
        }
        appendTag(&out, length: BeaconFormat.stateTagLength, key: key)
        return out
    }

    static func sealAcks(_ a: BeaconAcks, key: BeaconKey, signed: Bool) throws(BeaconEncodingError) -> [UInt8] {
        let most = signed ? BeaconFormat.signedFingerprints(fitting: BeaconFormat.maxFrameLength) : BeaconFormat.maxFingerprints
        guard (1...most).contains(a.fingerprints.count) else { throw .fingerprintCount(a.fingerprints.count) }
        var out: [UInt8] = [BallotFormat.magic, BeaconFrameKind.acks.typeByte(signed: signed)] + be32(a.counter) + [a.question]
        for f in a.fingerprints { out += be32(f.value) }
        appendTag(&out, length: BeaconFormat.shortTagLength, key: key)
        return out
    }

    static func sealText(_ t: BeaconTextPage, key: BeaconKey, signed: Bool) throws(BeaconEncodingError) -> [UInt8] {
        let most = signed ? BeaconFormat.signedChunkLength(fitting: BeaconFormat.maxFrameLength) : BeaconFormat.maxChunkLength
        guard (1...most).contains(t.chunk.count) else { throw .chunkLength(t.chunk.count) }
        guard t.count > 0, t.index < t.count else { throw .pageNumbering }
        var out: [UInt8] = [BallotFormat.magic, BeaconFrameKind.text.typeByte(signed: signed)] + be32(t.counter) + be32(t.digest)
        out += [t.index, t.count] + t.chunk
        appendTag(&out, length: BeaconFormat.shortTagLength, key: key)
        return out
    }

    /// Seals a tagged STATE frame after checking its question (``BeaconQuestion/isValid``).
    public static func seal(_ s: BeaconState, key: BeaconKey) throws(BeaconEncodingError) -> [UInt8] {
        try sealState(s, key: key, signed: false)
    }

    /// Opens manufacturer data (after the company ID) as a beacon frame of the poll of `key`. A signed
    /// frame's signature is **not** checked here: use ``open(_:key:publicKey:)`` or ``BeaconEnvelope``.
    public static func open(_ bytes: [UInt8], key: BeaconKey) -> Result<BeaconFrame, BeaconRejection> {
        bytes.withUnsafeBytes { open($0, key: key).map(\.frame) }
    }

    /// Opens a frame as a voter that holds the poll's public key `publicKey` does: a signed frame must
    /// carry its signature (else `badSignature`); a tagged frame is opened as ``open(_:key:)`` does
    /// (whether to take it is the voter's rule, §11.7).
    public static func open(_ bytes: [UInt8], key: BeaconKey, publicKey: BeaconPublicKey) -> Result<BeaconFrame, BeaconRejection> {
        envelope(bytes, key: key).flatMap { e in
            e.signature == nil || e.verify(publicKey) ? .success(e.frame) : .failure(.badSignature)
        }
    }

    /// Opens a frame and keeps what its signature needs (nothing for a tagged frame).
    public static func envelope(_ bytes: [UInt8], key: BeaconKey) -> Result<BeaconEnvelope, BeaconRejection> {
        bytes.withUnsafeBytes { p in
            open(p, key: key).map { r in
                guard r.signed else { return BeaconEnvelope(frame: r.frame, signature: nil, message: []) }
                let n = p.count - BeaconFormat.signatureLength
                return BeaconEnvelope(frame: r.frame, signature: Array(p[n...]),
                                      message: KeyDerivation.beaconSignedMessage(voteID: key.voteID, p[0..<n]))
            }
        }
    }

    /// Whether `bytes` look like a beacon frame of this format, of any poll (the magic, the beacon version, a
    /// frame kind; nothing checked that needs the join code): what `clicker-vote doctor` listens for.
    public static func isBeaconFrame(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes[0] == BallotFormat.magic && bytes[1] >> 4 == BeaconFormat.version
            && BeaconFrameKind(typeNibble: bytes[1] & 0x0F) != nil
    }

    /// The cheap checks, in order (§11.6, 1–8): magic, ballot, version, frame kind, size, vote ID. No
    /// cryptography. The kind, and whether the frame is signed.
    public static func kind(of p: UnsafeRawBufferPointer, voteID: UInt16) -> Result<(BeaconFrameKind, signed: Bool), BeaconRejection> {
        guard p.count >= 1, p[0] == BallotFormat.magic else { return .failure(.notOurs) }
        guard p.count >= 2 else { return .failure(.truncated) }
        guard !(p[1] >> 4 == BallotFormat.version && BallotMode(rawValue: p[1] & 0x0F) != nil) else { return .failure(.notABeacon) }
        guard p[1] >> 4 == BeaconFormat.version else { return .failure(.unknownVersion) }
        guard let kind = BeaconFrameKind(typeNibble: p[1] & 0x0F) else { return .failure(.unknownFrame) }
        let signed = p[1] & 0x08 == 0
        guard p.count <= BeaconFormat.maxFrameLength else { return .failure(.oversized) }
        let extra = signed ? BeaconFormat.signatureLength : 0
        switch kind {
        case .state:
            let length = signed ? BeaconFormat.signedStateLength : BeaconFormat.stateLength
            guard p.count >= length else { return .failure(.truncated) }
            guard p.count == length else { return .failure(.trailingBytes) }
            guard UInt16(p[2]) << 8 | UInt16(p[3]) == voteID else { return .failure(.otherVoteID) }
        case .acks:
            let body = p.count - BeaconFormat.acksHeaderLength - BeaconFormat.shortTagLength - extra
            guard body >= AckFingerprint.length else { return .failure(.truncated) }
            guard body % AckFingerprint.length == 0 else { return .failure(.badLength) }
        case .text:
            guard p.count > BeaconFormat.textHeaderLength + BeaconFormat.shortTagLength + extra else { return .failure(.truncated) }
        }
        return .success((kind, signed))
    }

    /// Opens manufacturer data (after the company ID) as a beacon frame of the poll of `key`: the
    /// cheap checks (``kind(of:voteID:)``), the tag (constant-time), then the fields. The signature of
    /// a signed frame is not checked.
    public static func open(_ p: UnsafeRawBufferPointer, key: BeaconKey) -> Result<(frame: BeaconFrame, signed: Bool), BeaconRejection> {
        let kind: BeaconFrameKind, signed: Bool
        switch self.kind(of: p, voteID: key.voteID) {
        case .success(let k): (kind, signed) = (k.0, k.signed)
        case .failure(let r): return .failure(r)
        }
        let tagLength = kind == .state ? BeaconFormat.stateTagLength : BeaconFormat.shortTagLength
        let end = p.count - (signed ? BeaconFormat.signatureLength : 0)
        let n = end - tagLength
        let tag = key.tag(UnsafeRawBufferPointer(rebasing: p[0..<n]))
        let ok = tag.withUnsafeBytes { t -> Bool in
            var diff: UInt8 = 0
            for i in 0..<tagLength { diff |= t[i] ^ p[n + i] }
            return diff == 0
        }
        guard ok else { return .failure(.badTag) }
        let frame: Result<BeaconFrame, BeaconRejection>
        switch kind {
        case .state: frame = state(p, counter: be32(p, at: 4), voteID: key.voteID, signed: signed).map(BeaconFrame.state)
        case .acks:
            var fps: [AckFingerprint] = []
            var i = BeaconFormat.acksHeaderLength
            while i < n {
                fps.append(AckFingerprint(value: be32(p, at: i)))
                i += AckFingerprint.length
            }
            frame = .success(.acks(BeaconAcks(counter: be32(p, at: 2), question: p[6], fingerprints: fps)))
        case .text:
            guard p[11] > 0, p[10] < p[11] else { return .failure(.malformed) }
            frame = .success(.text(BeaconTextPage(counter: be32(p, at: 2), digest: be32(p, at: 6), index: p[10], count: p[11],
                                                  chunk: Array(p[BeaconFormat.textHeaderLength..<n]))))
        }
        return frame.map { ($0, signed) }
    }

    /// The fields of an authentic STATE frame (§11.3): 24 bytes tagged, 132 signed.
    static func state(_ p: UnsafeRawBufferPointer, counter: UInt32, voteID: UInt16, signed: Bool) -> Result<BeaconState, BeaconRejection> {
        let number = p[8], status = p[9], options = p[10]
        let digest = be32(p, at: 12)
        var strong: [UInt8]?, hidden: [UInt8]?
        if signed {
            strong = Array(p[12..<28])
            hidden = Array(p[28..<60])
        }
        let digestIsZero = signed ? strong?.allSatisfy({ $0 == 0 }) ?? true : digest == 0
        guard let interval = BeaconInterval(code: p[11]) else { return .failure(.malformed) }
        let mode: BallotMode = status & 0x20 != 0 ? .roster : .anonymous
        let hasText = status & 0x10 != 0
        let poll: BeaconPoll
        switch status >> 6 {
        case 0:
            // Poll closed: no question, so every question field is zero.
            guard number == 0, status & 0x1F == 0, options == 0, digestIsZero else { return .failure(.malformed) }
            poll = .closed
        case 1, 2:
            guard let kind = BeaconQuestion.kind(code: status & 0x0F), hasText || digestIsZero else { return .failure(.malformed) }
            let q = BeaconQuestion(number: number, kind: kind, options: options, textDigest: hasText ? digest : nil,
                                   strongDigest: hasText ? strong : nil)
            guard q.isValid else { return .failure(.malformed) }
            poll = status >> 6 == 1 ? .open(q) : .questionClosed(q)
        default:
            return .failure(.malformed)
        }
        return .success(BeaconState(voteID: voteID, counter: counter, mode: mode, poll: poll, interval: interval, hiddenKey: hidden))
    }
}

/// An opened frame with what its signature needs: the signature and the message it covers
/// (docs/PROTOCOL.md §11.2). A tagged frame has neither.
public struct BeaconEnvelope: Sendable, Hashable {
    public var frame: BeaconFrame
    /// The 64-byte signature of a signed frame; nil for a tagged one.
    public var signature: [UInt8]?
    /// `"clicker-v4-beacon" ‖ voteID(2) ‖ the frame's bytes before the signature`; empty when tagged.
    public var message: [UInt8]

    public var isSigned: Bool { signature != nil }

    /// Whether the frame is signed by `publicKey`.
    public func verify(_ publicKey: BeaconPublicKey) -> Bool {
        guard let signature else { return false }
        return publicKey.verify(signature, of: message)
    }
}
