/// Constants of the beacon frames the tally sends to voters, docs/PROTOCOL.md §11.
///
/// A beacon frame is manufacturer data under ``BallotFormat/companyID`` like a ballot, with the same
/// magic byte; the high nibble of byte 1 is the beacon's version (4) and the low nibble names the
/// frame: ``BeaconFrameKind`` (B, C, D: tagged; 3, 4, 5: signed). A ballot decoder rejects every
/// beacon frame (`unknownVersion`).
public enum BeaconFormat {
    /// The version nibble of beacon frames (byte 1, high nibble): protocol version 4.
    public static let version: UInt8 = 4
    /// The version nibble of version-3 beacon frames (`2B`, `2C`, `2D`), which this version ignores.
    public static let legacyVersion: UInt8 = 2
    /// Bytes of an Ed25519 signature.
    public static let signatureLength = 64
    /// Bytes of the text digest a signed STATE carries.
    public static let strongDigestLength = 16
    /// Bytes of the hidden public key a signed STATE carries.
    public static let keyLength = 32
    /// A signed STATE: magic, type, vote ID, counter, question, status, options, interval, digest (16),
    /// hidden key (32), tag (8), signature (64).
    public static let signedStateLength = 132
    /// Bytes of a signed STATE the tag covers.
    public static let signedStateAuthenticatedLength = 60
    /// Largest frame (manufacturer data after the company ID) a decoder accepts: one extended
    /// advertisement of 251 bytes (the most one HCI LE Set Extended Advertising Data command, and
    /// Linux, carry) minus the manufacturer AD header (2) and the company ID (2).
    public static let maxFrameLength = 247
    /// Manufacturer data that fits a legacy advertisement (31 bytes) after the AD header (2) and
    /// the company ID (2), when the advertisement carries no Flags AD structure.
    public static let legacyBudget = 27
    /// The same with a Flags AD structure (3 bytes) in the advertisement: what always fits.
    public static let legacyBudgetWithFlags = 24
    /// The same for an extended advertisement that also carries a Flags AD structure.
    public static let extendedBudgetWithFlags = 244

    /// STATE: magic, type, vote ID, counter, question, status, options, interval, text digest, tag.
    public static let stateLength = 24
    /// Bytes of STATE the tag covers.
    public static let stateAuthenticatedLength = 16
    /// Tag length of a STATE frame.
    public static let stateTagLength = 8
    /// ACKS bytes before the fingerprints: magic, type, counter, question.
    public static let acksHeaderLength = 7
    /// TEXT bytes before the chunk: magic, type, counter, digest, page index, page count.
    public static let textHeaderLength = 12
    /// Tag length of ACKS and TEXT frames.
    public static let shortTagLength = 4
    /// Most fingerprints one ACKS frame holds (59, in ``maxFrameLength``).
    public static let maxFingerprints = fingerprints(fitting: maxFrameLength)
    /// Longest chunk one TEXT page holds (231, in ``maxFrameLength``).
    public static let maxChunkLength = chunkLength(fitting: maxFrameLength)

    /// How many fingerprints an ACKS frame of at most `budget` bytes holds: 3 in a legacy
    /// advertisement with flags, 4 without, 58 in an extended one with flags, at most 59.
    public static func fingerprints(fitting budget: Int) -> Int {
        max(0, min(budget, maxFrameLength) - acksHeaderLength - shortTagLength) / AckFingerprint.length
    }

    /// The same for a signed ACKS frame (64 bytes more): 42 in an extended advertisement with flags, at most 43.
    public static func signedFingerprints(fitting budget: Int) -> Int {
        fingerprints(fitting: budget - signatureLength)
    }

    /// The same for a signed TEXT page: 164 in an extended advertisement with flags, at most 167.
    public static func signedChunkLength(fitting budget: Int) -> Int {
        chunkLength(fitting: budget - signatureLength)
    }

    /// The longest chunk a TEXT page of at most `budget` bytes holds: 8 in a legacy advertisement with
    /// flags, 11 without, 228 in an extended one with flags, at most 231.
    public static func chunkLength(fitting budget: Int) -> Int {
        max(0, min(budget, maxFrameLength) - textHeaderLength - shortTagLength)
    }

    /// Whether manufacturer data is a beacon frame (magic, then `4B`, `4C`, `4D`, `43`, `44`, `45`, or a
    /// version-3 frame `2B`, `2C`, `2D`), by its first two bytes only: what a tally drops before its
    /// ballot decoder.
    public static func isBeacon(_ payload: some Collection<UInt8>) -> Bool {
        var i = payload.makeIterator()
        guard i.next() == BallotFormat.magic, let b = i.next() else { return false }
        switch b >> 4 {
        case version: return BeaconFrameKind(typeNibble: b & 0x0F) != nil
        case legacyVersion: return BeaconFrameKind(rawValue: b & 0x0F) != nil
        default: return false
        }
    }
}

/// The three beacon frames: the low nibble of byte 1 of a tagged frame (byte 1 is `4B`, `4C` or `4D`);
/// a signed frame's low nibble is 8 less (`43`, `44`, `45`).
public enum BeaconFrameKind: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The poll's state: open question, its kind and options, mode, interval, text digest.
    case state = 0xB
    /// Acknowledgement fingerprints of counted ballots of one question.
    case acks = 0xC
    /// One page of a question's title and option texts.
    case text = 0xD

    /// The kind and form of a type byte's low nibble: B, C, D tagged; 3, 4, 5 signed.
    public init?(typeNibble n: UInt8) {
        if let k = BeaconFrameKind(rawValue: n) { self = k } else if let k = BeaconFrameKind(rawValue: n | 8), n & 8 == 0 { self = k } else { return nil }
    }

    /// The type byte of this kind, tagged or signed.
    public func typeByte(signed: Bool) -> UInt8 { BeaconFormat.version << 4 | (signed ? rawValue & 0x7 : rawValue) }

    public var description: String {
        switch self {
        case .state: "STATE"
        case .acks: "ACKS"
        case .text: "TEXT"
        }
    }
}

/// The advertising interval a STATE frame asks voters to use: one byte, 0 = stop advertising,
/// n = 2…255 = n × 10 ms (20 ms to 2.55 s); 1 is reserved.
public struct BeaconInterval: Sendable, Hashable, CustomStringConvertible {
    /// The byte on the wire.
    public let code: UInt8

    /// Stop advertising.
    public static let stop = BeaconInterval(unchecked: 0)

    /// The interval of a voter whose current ballot the tally has acknowledged (docs/PROTOCOL.md
    /// §11.8): 10.24 s, the longest BLE allows. Not on the wire: an acknowledgement slows a voter to
    /// this keep-alive and never stops it, so a false acknowledgement costs time, never the vote.
    public static let keepAlive: Duration = .milliseconds(10_240)

    init(unchecked code: UInt8) { self.code = code }

    /// From the wire byte; nil for the reserved value 1.
    public init?(code: UInt8) {
        guard code != 1 else { return nil }
        self.code = code
    }

    /// An interval of `milliseconds`, a multiple of 10 from 20 to 2550; nil otherwise.
    public init?(milliseconds: Int) {
        guard milliseconds % 10 == 0, (20...2550).contains(milliseconds) else { return nil }
        code = UInt8(milliseconds / 10)
    }

    /// The interval in milliseconds; nil for ``stop``.
    public var milliseconds: Int? { code == 0 ? nil : Int(code) * 10 }

    public var description: String { milliseconds.map { "\($0) ms" } ?? "stop" }
}

/// The question a STATE frame describes.
public struct BeaconQuestion: Sendable, Hashable {
    /// The question number, as ballots carry it.
    public var number: UInt8
    public var kind: QuestionKind
    /// Options offered (A… up to this many): 1…8 for single, multi and ranked; 0 for true/false
    /// and numeric, whose answers take no letters.
    public var options: UInt8
    /// The digest of the question's text block (``BeaconKey/textDigest(_:)``), or nil when the
    /// tally sends no text for it.
    public var textDigest: UInt32?
    /// In a signed STATE: the 16-byte digest (``BeaconKey/strongTextDigest(_:)``), whose first 4 bytes
    /// are ``textDigest``. Nil in a tagged STATE, or without text.
    public var strongDigest: [UInt8]?

    public init(number: UInt8, kind: QuestionKind, options: UInt8, textDigest: UInt32? = nil, strongDigest: [UInt8]? = nil) {
        self.number = number
        self.kind = kind
        self.options = options
        self.textDigest = textDigest
        self.strongDigest = strongDigest
    }

    /// Whether ``options`` is what the kind allows.
    public var isValid: Bool {
        kind.hasOptions ? (1...UInt8(Answer.maxOptions)).contains(options) : options == 0
    }

    /// The kind's 4-bit code in a STATE frame: the answer kind byte for single (1), true/false (2),
    /// multi (3) and numeric (5); 4 for ranked (whose answer kind bytes are 0x41…0x48).
    public static func code(of kind: QuestionKind) -> UInt8 {
        switch kind {
        case .single: 1
        case .truefalse: 2
        case .multi: 3
        case .ranked: 4
        case .numeric: 5
        }
    }

    /// The kind of a 4-bit code; nil for 0 and 6…15.
    public static func kind(code: UInt8) -> QuestionKind? {
        switch code {
        case 1: .single
        case 2: .truefalse
        case 3: .multi
        case 4: .ranked
        case 5: .numeric
        default: nil
        }
    }
}

/// Where the poll stands, as a STATE frame says it.
public enum BeaconPoll: Sendable, Hashable {
    /// The question is open: voters answer it.
    case open(BeaconQuestion)
    /// The question has closed and no other is open yet; the poll goes on.
    case questionClosed(BeaconQuestion)
    /// The poll is over.
    case closed
}

/// A STATE frame.
public struct BeaconState: Sendable, Hashable {
    public var voteID: UInt16
    /// The frame's counter (see ``BeaconReplayGuard``).
    public var counter: UInt32
    /// Whether the poll counts anonymous or roster ballots.
    public var mode: BallotMode
    public var poll: BeaconPoll
    /// The advertising interval voters should use now.
    public var interval: BeaconInterval
    /// A signed STATE's hidden public key: pk ⊕ the key mask (``KeyDerivation/beaconKeyMask(_:)``),
    /// 32 bytes. Nil in a tagged STATE.
    public var hiddenKey: [UInt8]?

    public init(voteID: UInt16, counter: UInt32, mode: BallotMode, poll: BeaconPoll, interval: BeaconInterval,
                hiddenKey: [UInt8]? = nil) {
        self.voteID = voteID
        self.counter = counter
        self.mode = mode
        self.poll = poll
        self.interval = interval
        self.hiddenKey = hiddenKey
    }
}

/// An ACKS frame: fingerprints of ballots of one question that the tally counted.
public struct BeaconAcks: Sendable, Hashable {
    public var counter: UInt32
    public var question: UInt8
    /// 1 to ``BeaconFormat/maxFingerprints``, in the order the tally chose.
    public var fingerprints: [AckFingerprint]

    public init(counter: UInt32, question: UInt8, fingerprints: [AckFingerprint]) {
        self.counter = counter
        self.question = question
        self.fingerprints = fingerprints
    }
}

/// A TEXT frame: page `index` (from 0) of `count` of the text block whose digest is `digest`.
public struct BeaconTextPage: Sendable, Hashable {
    public var counter: UInt32
    public var digest: UInt32
    public var index: UInt8
    public var count: UInt8
    /// 1 to ``BeaconFormat/maxChunkLength`` bytes of the text block.
    public var chunk: [UInt8]

    public init(counter: UInt32, digest: UInt32, index: UInt8, count: UInt8, chunk: [UInt8]) {
        self.counter = counter
        self.digest = digest
        self.index = index
        self.count = count
        self.chunk = chunk
    }
}

/// Any beacon frame.
public enum BeaconFrame: Sendable, Hashable {
    case state(BeaconState)
    case acks(BeaconAcks)
    case text(BeaconTextPage)

    public var kind: BeaconFrameKind {
        switch self {
        case .state: .state
        case .acks: .acks
        case .text: .text
        }
    }

    public var counter: UInt32 {
        switch self {
        case .state(let s): s.counter
        case .acks(let a): a.counter
        case .text(let t): t.counter
        }
    }
}

/// Why bytes are not a beacon frame the holder of a poll's beacon key accepts. Decoding is total:
/// any bytes give a frame or exactly one of these, the first failing check of docs/PROTOCOL.md §11.6.
public enum BeaconRejection: String, Error, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Empty, or not our magic byte: someone else's manufacturer data.
    case notOurs
    /// Shorter than the frame requires.
    case truncated
    /// Our magic with a format version this build does not know.
    case unknownVersion
    /// A ballot (low nibble 0 or 1), not a beacon frame.
    case notABeacon
    /// A low nibble that is neither a ballot mode nor a beacon frame kind.
    case unknownFrame
    /// Longer than any advertisement carries (``BeaconFormat/maxFrameLength``).
    case oversized
    /// A STATE frame longer than 24 bytes.
    case trailingBytes
    /// An ACKS frame whose fingerprints are not a whole number of 4-byte fingerprints.
    case badLength
    /// A STATE frame of another poll (different vote ID).
    case otherVoteID
    /// The tag does not verify: forged, corrupted, or made with another join code.
    case badTag
    /// Authentic, but a field holds a value this version does not define (reserved bits set, an
    /// unknown question kind, options the kind does not allow, interval code 1, a page beyond the count).
    case malformed
    /// A signed frame whose signature is not the poll key's (checked only by a voter that holds it).
    case badSignature

    public var description: String { rawValue }
}

/// Why a frame could not be sealed: its values are outside what the format carries.
public enum BeaconEncodingError: Error, Sendable, Hashable {
    /// Options not allowed for the question's kind (``BeaconQuestion/isValid``).
    case invalidQuestion
    /// No fingerprints, or more than ``BeaconFormat/maxFingerprints``.
    case fingerprintCount(Int)
    /// An empty chunk or one longer than ``BeaconFormat/maxChunkLength``.
    case chunkLength(Int)
    /// Page count 0, or an index not below the count.
    case pageNumbering
    /// A signed STATE needs the text's 16-byte digest when it has text, and the key mask.
    case missingSignedField
}
