/// Seals and opens beacon frames (docs/PROTOCOL.md §11). Pure; opening is total.
public enum BeaconCodec {
    /// The frame's bytes: manufacturer data (after the company ID) to advertise under
    /// ``BallotFormat/companyID``. Throws when a value is outside what the format carries.
    public static func seal(_ frame: BeaconFrame, key: BeaconKey) throws(BeaconEncodingError) -> [UInt8] {
        switch frame {
        case .state(let s): return try seal(s, key: key)
        case .acks(let a): return try sealAcks(a, key: key)
        case .text(let t): return try sealText(t, key: key)
        }
    }

    static func be32(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)]
    }

    @inline(__always)
    static func be32(_ p: UnsafeRawBufferPointer, at i: Int) -> UInt32 {
        UInt32(p[i]) << 24 | UInt32(p[i + 1]) << 16 | UInt32(p[i + 2]) << 8 | UInt32(p[i + 3])
    }

    static func typeByte(_ kind: BeaconFrameKind) -> UInt8 { BallotFormat.version << 4 | kind.rawValue }

    /// Appends the first `length` bytes of the frame key's HMAC over `out`.
    static func appendTag(_ out: inout [UInt8], length: Int, key: BeaconKey) {
        let t = out.withUnsafeBytes { key.tag($0) }
        t.withUnsafeBytes { out.append(contentsOf: $0.prefix(length)) }
    }

    static func sealState(_ s: BeaconState, key: BeaconKey) -> [UInt8] {
        var out: [UInt8] = [BallotFormat.magic, typeByte(.state), UInt8(s.voteID >> 8), UInt8(truncatingIfNeeded: s.voteID)]
        out += be32(s.counter)
        let phase: UInt8, q: BeaconQuestion?
        switch s.poll {
        case .closed: (phase, q) = (0, nil)
        case .open(let x): (phase, q) = (1, x)
        case .questionClosed(let x): (phase, q) = (2, x)
        }
        var status = phase << 6 | (s.mode == .roster ? 0x20 : 0)
        if let q {
            status |= (q.textDigest != nil ? 0x10 : 0) | BeaconQuestion.code(of: q.kind)
        }
        out += [q?.number ?? 0, status, q?.options ?? 0, s.interval.code]
        out += be32(q?.textDigest ?? 0)
        appendTag(&out, length: BeaconFormat.stateTagLength, key: key)
        return out
    }

    static func sealAcks(_ a: BeaconAcks, key: BeaconKey) throws(BeaconEncodingError) -> [UInt8] {
        guard (1...BeaconFormat.maxFingerprints).contains(a.fingerprints.count) else {
            throw .fingerprintCount(a.fingerprints.count)
        }
        var out: [UInt8] = [BallotFormat.magic, typeByte(.acks)] + be32(a.counter) + [a.question]
        for f in a.fingerprints { out += be32(f.value) }
        appendTag(&out, length: BeaconFormat.shortTagLength, key: key)
        return out
    }

    static func sealText(_ t: BeaconTextPage, key: BeaconKey) throws(BeaconEncodingError) -> [UInt8] {
        guard (1...BeaconFormat.maxChunkLength).contains(t.chunk.count) else { throw .chunkLength(t.chunk.count) }
        guard t.count > 0, t.index < t.count else { throw .pageNumbering }
        var out: [UInt8] = [BallotFormat.magic, typeByte(.text)] + be32(t.counter) + be32(t.digest) + [t.index, t.count]
        out += t.chunk
        appendTag(&out, length: BeaconFormat.shortTagLength, key: key)
        return out
    }

    /// Seals a STATE frame after checking its question (``BeaconQuestion/isValid``).
    public static func seal(_ s: BeaconState, key: BeaconKey) throws(BeaconEncodingError) -> [UInt8] {
        switch s.poll {
        case .open(let q), .questionClosed(let q): guard q.isValid else { throw .invalidQuestion }
        case .closed: break
        }
        return sealState(s, key: key)
    }

    /// Opens manufacturer data (after the company ID) as a beacon frame of the poll of `key`.
    public static func open(_ bytes: [UInt8], key: BeaconKey) -> Result<BeaconFrame, BeaconRejection> {
        bytes.withUnsafeBytes { open($0, key: key) }
    }

    /// The cheap checks, in order (§11.6, 1–7): magic, version, frame kind, size, vote ID. No cryptography.
    public static func kind(of p: UnsafeRawBufferPointer, voteID: UInt16) -> Result<BeaconFrameKind, BeaconRejection> {
        guard p.count >= 1, p[0] == BallotFormat.magic else { return .failure(.notOurs) }
        guard p.count >= 2 else { return .failure(.truncated) }
        guard p[1] >> 4 == BallotFormat.version else { return .failure(.unknownVersion) }
        guard BallotMode(rawValue: p[1] & 0x0F) == nil else { return .failure(.notABeacon) }
        guard let kind = BeaconFrameKind(rawValue: p[1] & 0x0F) else { return .failure(.unknownFrame) }
        guard p.count <= BeaconFormat.maxFrameLength else { return .failure(.oversized) }
        switch kind {
        case .state:
            guard p.count >= BeaconFormat.stateLength else { return .failure(.truncated) }
            guard p.count == BeaconFormat.stateLength else { return .failure(.trailingBytes) }
            guard UInt16(p[2]) << 8 | UInt16(p[3]) == voteID else { return .failure(.otherVoteID) }
        case .acks:
            let body = p.count - BeaconFormat.acksHeaderLength - BeaconFormat.shortTagLength
            guard body >= AckFingerprint.length else { return .failure(.truncated) }
            guard body % AckFingerprint.length == 0 else { return .failure(.badLength) }
        case .text:
            guard p.count > BeaconFormat.textHeaderLength + BeaconFormat.shortTagLength else { return .failure(.truncated) }
        }
        return .success(kind)
    }

    /// Opens manufacturer data (after the company ID) as a beacon frame of the poll of `key`: the
    /// cheap checks (``kind(of:voteID:)``), the tag (constant-time), then the fields.
    public static func open(_ p: UnsafeRawBufferPointer, key: BeaconKey) -> Result<BeaconFrame, BeaconRejection> {
        let kind: BeaconFrameKind
        switch self.kind(of: p, voteID: key.voteID) {
        case .success(let k): kind = k
        case .failure(let r): return .failure(r)
        }
        let tagLength = kind == .state ? BeaconFormat.stateTagLength : BeaconFormat.shortTagLength
        let n = p.count - tagLength
        let tag = key.tag(UnsafeRawBufferPointer(rebasing: p[0..<n]))
        let ok = tag.withUnsafeBytes { t -> Bool in
            var diff: UInt8 = 0
            for i in 0..<tagLength { diff |= t[i] ^ p[n + i] }
            return diff == 0
        }
        guard ok else { return .failure(.badTag) }
        switch kind {
        case .state: return state(p, counter: be32(p, at: 4), voteID: key.voteID).map(BeaconFrame.state)
        case .acks:
            var fps: [AckFingerprint] = []
            var i = BeaconFormat.acksHeaderLength
            while i < n {
                fps.append(AckFingerprint(value: be32(p, at: i)))
                i += AckFingerprint.length
            }
            return .success(.acks(BeaconAcks(counter: be32(p, at: 2), question: p[6], fingerprints: fps)))
        case .text:
            guard p[11] > 0, p[10] < p[11] else { return .failure(.malformed) }
            return .success(.text(BeaconTextPage(counter: be32(p, at: 2), digest: be32(p, at: 6), index: p[10], count: p[11],
                                                 chunk: Array(p[BeaconFormat.textHeaderLength..<n]))))
        }
    }

    /// The fields of an authentic 24-byte STATE frame (§11.3).
    static func state(_ p: UnsafeRawBufferPointer, counter: UInt32, voteID: UInt16) -> Result<BeaconState, BeaconRejection> {
        let number = p[8], status = p[9], options = p[10]
        let digest = be32(p, at: 12)
        guard let interval = BeaconInterval(code: p[11]) else { return .failure(.malformed) }
        let mode: BallotMode = status & 0x20 != 0 ? .roster : .anonymous
        let hasText = status & 0x10 != 0
        let poll: BeaconPoll
        switch status >> 6 {
        case 0:
            // Poll closed: no question, so every question field is zero.
            guard number == 0, status & 0x1F == 0, options == 0, digest == 0 else { return .failure(.malformed) }
            poll = .closed
        case 1, 2:
            guard let kind = BeaconQuestion.kind(code: status & 0x0F), hasText || digest == 0 else { return .failure(.malformed) }
            let q = BeaconQuestion(number: number, kind: kind, options: options, textDigest: hasText ? digest : nil)
            guard q.isValid else { return .failure(.malformed) }
            poll = status >> 6 == 1 ? .open(q) : .questionClosed(q)
        default:
            return .failure(.malformed)
        }
        return .success(BeaconState(voteID: voteID, counter: counter, mode: mode, poll: poll, interval: interval))
    }
}
