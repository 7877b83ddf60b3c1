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
    public static let version: UInt8 = 2
    /// Bytes before the encrypted answer: magic, version/mode, vote ID, question, voter ID, sequence.
    public static let headerLength = 11
    /// Header plus the 3 encrypted answer bytes: what the tag covers.
    public static let authenticatedLength = 14
    /// Tag length in an advertisement (HMAC-SHA256 truncated).
    public static let shortTagLength = 8
    /// Advertisement payload length (after the company ID): 22 bytes.
    public static let advertisementLength = authenticatedLength + shortTagLength
    /// Full ballot (the 14 authenticated bytes and the full 32-byte tag): 46 bytes.
    public static let fullBallotLength = authenticatedLength + 32
    /// Ed25519 public key length.
    public static let publicKeyLength = 32
    /// Ed25519 signature length.
    public static let signatureLength = 64
    /// GATT ballot value: full ballot ‖ public key ‖ signature, 142 bytes.
    public static let gattLength = fullBallotLength + publicKeyLength + signatureLength
    /// What the signature covers before the full ballot (ASCII).
    public static let signatureContext: [UInt8] = Array("clicker-v2 ballot".utf8)

    /// GATT primary service of a voter.
    public static let serviceUUIDString = "45b1f443-268b-4635-8595-86c78058b61c"
    /// GATT "ballot" characteristic (read): the signed ballot, ``gattLength`` bytes.
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
    /// Per poll, from 1: every new ballot the voter seals takes the next number; the tally keeps the
    /// highest (or, on request, the lowest). 0 is invalid (``Rejection/badSequence``).
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
        "ballot(\(mode) vote \(voteID) q\(question) voter \(IDText.voter(voterID)) seq \(sequence): \(answer))"
    }
}

/// The one text form of each identifier, used on screen, in `--json`, in CSV and in logs alike.
public enum IDText {
    /// A voter ID: eight lowercase hex digits, `0f67dfd0`. The poll's mode says whose key it is, so
    /// no prefix is added.
    public static func voter(_ id: UInt32) -> String {
        let s = String(id, radix: 16)
        return String(repeating: "0", count: 8 - s.count) + s
    }
    /// A vote ID: decimal, as the join code's first group shows it (`2285`).
    public static func vote(_ id: UInt16) -> String { String(id) }
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
    /// Sequence number 0, which no voter sends (sequences start at 1).
    case badSequence
    /// Roster mode, but the voter ID is not on this poll's roster: no key to check it with.
    case unknownVoter
    /// The tag does not verify: forged, corrupted, or made with another join secret.
    case badTag
    /// Authentic, but the decrypted answer is not a well-formed answer.
    case malformedAnswer
    /// A GATT value whose signature does not verify with the public key it carries, or (anonymous
    /// mode) whose voter ID is not the hash of that key: not signed by this voter's key.
    case badSignature
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
    /// An unverified ballot (an anonymous-mode advertisement, which anyone with the join code can
    /// make) that would replace the voter's verified ballot; read over GATT, it may still count.
    case unverifiedChange
    /// A GATT ballot signed by another key than the one bound to its voter ID in this poll.
    case keyMismatch
    /// A new voter beyond the tally's limit (`Tally.Limits`): the question holds as many voters as it
    /// keeps, or the poll as many unregistered devices. Voters already held keep their ballots.
    case voterLimit
    // Ingest level.
    /// Not verified because the sender exceeded its verification budget (flood protection).
    case rateLimited

    public var description: String { rawValue }
}

/// The keys for one poll: the anonymous poll key and, in roster mode, each enrolled student's key.
/// Build it once per poll from the poll secret S; decoding looks keys up, it never derives them.
public struct PollKeyring: Sendable {
    /// The poll secret the keys come from.
    public let secret: PollSecret
    public var joinCode: JoinCode { secret.joinCode }
    public var voteID: UInt16 { secret.voteID }
    /// Anonymous-mode key derived from S.
    public let anonymousKey: BallotKey
    /// Roster voter ID → (key, index of the student in the list given to `init`).
    let rosterKeys: [UInt32: (key: BallotKey, index: Int)]

    /// Derives the poll key and one key per enrolled student (a few microseconds each; no scrypt).
    public init(secret: PollSecret, roster: [RosterKey] = []) {
        self.secret = secret
        anonymousKey = BallotKey.anonymous(secret)
        var keys: [UInt32: (key: BallotKey, index: Int)] = [:]
        // A student whose roster voter ID collides with an earlier one's (2^-32 per pair) keeps no
        // key: the earlier student's ballots stay readable.
        for (i, r) in roster.enumerated() {
            let id = r.voterID(in: secret)
            if keys[id] == nil { keys[id] = (BallotKey.roster(r, secret: secret), i) }
        }
        rosterKeys = keys
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

