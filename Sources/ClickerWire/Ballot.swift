import ClickerTransport
import Crypto

/// Constants of the ballot format, docs/PROTOCOL.md §1.
public enum BallotFormat {
    /// Bluetooth SIG company identifier used for the manufacturer data (0xFFFF: reserved for tests
    /// and internal use; the magic byte tells our payloads apart from other users of it).
    public static let companyID: UInt16 = 0xFFFF
    /// First payload byte.
    public static let magic: UInt8 = 0xCB
    /// Format version, the high nibble of the second byte.
    public static let version: UInt8 = 1
    /// Bytes before the encrypted answer: magic, version/mode, vote ID, question, voter ID, sequence.
    public static let headerLength = 11
    /// Header plus the 3 encrypted answer bytes: what the tag covers.
    public static let authenticatedLength = 14
    /// Tag length in an advertisement (HMAC-SHA256 truncated).
    public static let shortTagLength = 8
    /// Advertisement payload length (after the company ID): 22 bytes.
    public static let advertisementLength = authenticatedLength + shortTagLength
    /// GATT ballot length (full 32-byte tag): 46 bytes.
    public static let gattLength = authenticatedLength + 32

    /// GATT primary service of a voter.
    public static let serviceUUIDString = "45b1f443-268b-4635-8595-86c78058b61c"
    /// GATT "ballot" characteristic (read): the full ballot, ``gattLength`` bytes.
    public static let ballotCharacteristicUUIDString = "f33aed3e-6ec3-497a-8148-5d4b7f15ffa5"
    /// ``serviceUUIDString`` as a ``UUID128``.
    public static let serviceUUID = UUID128(high: 0x45b1_f443_268b_4635, low: 0x8595_86c7_8058_b61c)
    /// ``ballotCharacteristicUUIDString`` as a ``UUID128``.
    public static let ballotCharacteristicUUID = UUID128(high: 0xf33a_ed3e_6ec3_497a, low: 0x8148_5d4b_7f15_ffa5)
}

/// Whose key protects a ballot: the low nibble of the second byte.
public enum BallotMode: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Keyed by the poll key everyone in the room derives from the join code.
    case anonymous = 0
    /// Keyed by the student's own enrolled device key (and the join code).
    case roster = 1

    public var description: String { self == .anonymous ? "anonymous" : "roster" }
}

/// One vote: everything a ballot carries, in clear.
public struct Ballot: Sendable, Hashable, CustomStringConvertible {
    public var mode: BallotMode
    /// The poll's vote ID (from the join code).
    public var voteID: UInt16
    /// Question number within the poll, 0…255, as the instructor numbers them.
    public var question: UInt8
    /// Who votes: per-poll random in anonymous mode, the enrolled device's ID in roster mode.
    public var voterID: UInt32
    /// Grows when the voter changes the vote; the tally keeps the highest (or, on request, the lowest).
    public var sequence: UInt16
    public var answer: Answer

    public init(mode: BallotMode = .anonymous, voteID: UInt16, question: UInt8, voterID: UInt32, sequence: UInt16,
                answer: Answer) {
        self.mode = mode
        self.voteID = voteID
        self.question = question
        self.voterID = voterID
        self.sequence = sequence
        self.answer = answer
    }

    public var description: String {
        "ballot(\(mode) vote \(voteID) q\(question) voter \(hex32(voterID)) seq \(sequence): \(answer))"
    }
}

func hex32(_ v: UInt32) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: 8 - s.count) + s
}

/// Why a report was not counted. Wire-level reasons come from ``BallotCodec``; the tally and the
/// ingest pipeline add the rest. Every report that is not counted gets exactly one reason.
public enum Rejection: String, Error, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    // Wire level, in the order they are checked (cheap first).
    /// Wrong company ID, empty, or wrong magic byte: someone else's advertisement.
    case notOurs
    /// Our magic with a format version this build does not know.
    case unknownVersion
    /// A mode nibble this build does not know.
    case unknownMode
    /// Shorter than the format requires.
    case truncated
    /// Longer than the format allows.
    case trailingBytes
    /// A ballot for another poll (different vote ID).
    case otherVoteID
    /// Roster mode, but the voter ID is not on this poll's roster: no key to check it with.
    case unknownVoter
    /// The tag does not verify: forged, corrupted, or made with another join secret.
    case badTag
    /// Authentic, but the decrypted answer is not a well-formed answer.
    case malformedAnswer
    // Tally level.
    /// For a question that is not open (an earlier or later question).
    case otherQuestion
    /// An answer the question does not offer (E in an A–D question, true/false in a choice question).
    case answerNotOffered
    /// An older sequence number than one already counted for this voter and question.
    case staleSequence
    /// Same voter, question and sequence as a counted ballot but a different answer.
    case conflictingSequence
    /// A later ballot from a voter when the poll counts first responses only.
    case changeIgnored
    // Ingest level.
    /// Not verified because the sender exceeded its verification budget (flood protection).
    case rateLimited

    public var description: String { rawValue }
}

/// The keys for one poll: the anonymous poll key and, in roster mode, each enrolled device's key.
/// Build it once per poll; decoding looks keys up, it never derives them.
public struct PollKeyring: Sendable {
    public let joinCode: JoinCode
    public var voteID: UInt16 { joinCode.voteID }
    /// Anonymous-mode key derived from the join code.
    public let anonymousKey: BallotKey
    /// Roster voter ID → (key, index of the device in the list given to `init`).
    let rosterKeys: [UInt32: (key: BallotKey, index: Int)]
    /// Indices of devices whose roster voter ID collides with an earlier one (2^-32 per pair);
    /// they cannot vote in this poll in roster mode. Pick a new join code if this is not empty.
    public let rosterCollisions: [Int]

    /// Derives the poll key and one key per enrolled device (a few microseconds each).
    public init(joinCode: JoinCode, roster devices: [DeviceKey] = []) {
        self.joinCode = joinCode
        anonymousKey = BallotKey.anonymous(joinCode)
        var keys: [UInt32: (key: BallotKey, index: Int)] = [:]
        var collisions: [Int] = []
        for (i, d) in devices.enumerated() {
            let id = d.rosterVoterID(for: joinCode)
            if keys[id] != nil { collisions.append(i) } else {
                keys[id] = (BallotKey.roster(deviceKey: d, joinCode: joinCode), i)
            }
        }
        rosterKeys = keys
        rosterCollisions = collisions
    }

    /// Number of enrolled devices with a usable key.
    public var rosterCount: Int { rosterKeys.count }

    /// The roster index (position in the device list) of a roster-mode voter ID.
    public func rosterIndex(ofVoter id: UInt32) -> Int? { rosterKeys[id]?.index }

    /// The key for a ballot of `mode` from `voterID`; nil for a roster voter not on the roster.
    @inline(__always)
    public func key(mode: BallotMode, voterID: UInt32) -> BallotKey? {
        switch mode {
        case .anonymous: anonymousKey
        case .roster: rosterKeys[voterID]?.key
        }
    }
}

/// Fields of a ballot readable without any key, after the cheap checks passed.
public struct BallotHeader: Sendable, Hashable {
    public var mode: BallotMode
    public var voteID: UInt16
    public var question: UInt8
    public var voterID: UInt32
    public var sequence: UInt16
}

/// Sealing and opening ballots. Opening is total: any bytes give a ballot or a ``Rejection``.
public enum BallotCodec {
    /// The 22-byte advertisement payload (manufacturer data after the company ID).
    public static func sealAdvertisement(_ ballot: Ballot, key: BallotKey) -> [UInt8] {
        Array(seal(ballot, key: key).prefix(BallotFormat.advertisementLength))
    }

    /// The 46-byte GATT ballot value (same fields, full 32-byte tag).
    public static func sealGATT(_ ballot: Ballot, key: BallotKey) -> [UInt8] {
        seal(ballot, key: key)
    }

    static func seal(_ b: Ballot, key: BallotKey) -> [UInt8] {
        var out: [UInt8] = [
            BallotFormat.magic, BallotFormat.version << 4 | b.mode.rawValue,
            UInt8(b.voteID >> 8), UInt8(truncatingIfNeeded: b.voteID), b.question,
            UInt8(b.voterID >> 24), UInt8(truncatingIfNeeded: b.voterID >> 16),
            UInt8(truncatingIfNeeded: b.voterID >> 8), UInt8(truncatingIfNeeded: b.voterID),
            UInt8(b.sequence >> 8), UInt8(truncatingIfNeeded: b.sequence),
        ]
        let ks = out.withUnsafeBytes { key.keystream($0) }
        let a = b.answer.wireBytes
        ks.withUnsafeBytes { k in
            out.append(a.0 ^ k[0])
            out.append(a.1 ^ k[1])
            out.append(a.2 ^ k[2])
        }
        let tag = out.withUnsafeBytes { key.tag($0) }
        tag.withUnsafeBytes { out.append(contentsOf: $0) }
        return out
    }

    /// The cheap checks, in order: magic, version, mode, length, vote ID. No cryptography.
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
        let voter = UInt32(p[5]) << 24 | UInt32(p[6]) << 16 | UInt32(p[7]) << 8 | UInt32(p[8])
        return .success(BallotHeader(mode: mode, voteID: v, question: p[4], voterID: voter,
                                     sequence: UInt16(p[9]) << 8 | UInt16(p[10])))
    }

    /// Opens an advertisement payload (manufacturer data after the company ID).
    public static func openAdvertisement(_ bytes: UnsafeRawBufferPointer, keyring: PollKeyring) -> Result<Ballot, Rejection> {
        open(bytes, length: BallotFormat.advertisementLength, keyring: keyring)
    }

    /// Opens an advertisement payload (manufacturer data after the company ID).
    public static func openAdvertisement(_ bytes: [UInt8], keyring: PollKeyring) -> Result<Ballot, Rejection> {
        bytes.withUnsafeBytes { open($0, length: BallotFormat.advertisementLength, keyring: keyring) }
    }

    /// Opens a GATT ballot value.
    public static func openGATT(_ bytes: [UInt8], keyring: PollKeyring) -> Result<Ballot, Rejection> {
        bytes.withUnsafeBytes { open($0, length: BallotFormat.gattLength, keyring: keyring) }
    }

    /// Opens a GATT ballot value.
    public static func openGATT(_ bytes: UnsafeRawBufferPointer, keyring: PollKeyring) -> Result<Ballot, Rejection> {
        open(bytes, length: BallotFormat.gattLength, keyring: keyring)
    }

    static func open(_ p: UnsafeRawBufferPointer, length: Int, keyring: PollKeyring) -> Result<Ballot, Rejection> {
        let h: BallotHeader
        switch header(p, length: length, voteID: keyring.voteID) {
        case .success(let x): h = x
        case .failure(let r): return .failure(r)
        }
        guard let key = keyring.key(mode: h.mode, voterID: h.voterID) else { return .failure(.unknownVoter) }
        return verifyAndDecrypt(p, header: h, key: key)
    }

    /// Verifies the tag (of whatever length `p` carries after the 14 authenticated bytes, 8 or 32)
    /// and decrypts the answer. `p` must have passed ``header(_:length:voteID:)`` (whose result is `h`);
    /// for split pipelines that rate-limit between the cheap checks and the cryptography.
    @inline(__always)
    public static func verifyAndDecrypt(_ p: UnsafeRawBufferPointer, header h: BallotHeader, key: BallotKey) -> Result<Ballot, Rejection> {
        let n = BallotFormat.authenticatedLength
        let tagLength = p.count - n
        guard tagLength == BallotFormat.shortTagLength || tagLength == 32 else {
            return .failure(tagLength < BallotFormat.shortTagLength ? .truncated : .trailingBytes)
        }
        let tag = key.tag(UnsafeRawBufferPointer(rebasing: p[0..<n]))
        let ok = tag.withUnsafeBytes { t -> Bool in
            var diff: UInt8 = 0
            for i in 0..<tagLength { diff |= t[i] ^ p[n + i] }
            return diff == 0
        }
        guard ok else { return .failure(.badTag) }
        let ks = key.keystream(UnsafeRawBufferPointer(rebasing: p[0..<BallotFormat.headerLength]))
        let answer = ks.withUnsafeBytes { k in
            Answer(wire: p[11] ^ k[0], p[12] ^ k[1], p[13] ^ k[2])
        }
        guard let answer else { return .failure(.malformedAnswer) }
        return .success(Ballot(mode: h.mode, voteID: h.voteID, question: h.question, voterID: h.voterID,
                               sequence: h.sequence, answer: answer))
    }
}
