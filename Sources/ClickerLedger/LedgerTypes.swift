import ClickerTally
import ClickerTransport
import ClickerWire
import PostgresClient

/// One ballot as a receiver heard it, ready for the ledger: authentic (its tag checked), for an
/// offered answer of a question the ledger knows, and with its verification decided by the receiver
/// (roster mode, or a GATT read signed by the voter's bound key).
public struct LedgerBallot: Sendable, Hashable {
    public var poll: Int64
    public var question: UInt8
    public var voter: VoterKey
    public var sequence: UInt16
    public var answer: Answer
    public var verified: Bool
    /// When the receiver heard it: microseconds since the Unix epoch on the receiver's clock. Receivers'
    /// clocks should agree (NTP); the result is deterministic whatever they say (docs/LEDGER.md).
    public var heardAt: Int64
    public var address: DeviceAddress

    public init(poll: Int64, question: UInt8, voter: VoterKey, sequence: UInt16, answer: Answer, verified: Bool,
                heardAt: Int64, address: DeviceAddress) {
        self.poll = poll
        self.question = question
        self.voter = voter
        self.sequence = sequence
        self.answer = answer
        self.verified = verified
        self.heardAt = heardAt
        self.address = address
    }

    /// The order of the row locks a batch takes (one order for every writer: no deadlock).
    var lockOrder: (Int64, UInt8, UInt8, UInt32) { (poll, question, voter.mode.rawValue, voter.voterID) }
}

/// A voter's counted ballot on one question, and the span of what was heard from them.
public struct CountedBallot: Sendable, Hashable {
    public var sequence: UInt16
    public var answer: Answer
    public var verified: Bool
    public var heardAt: Int64
    public var address: DeviceAddress
    /// Over every ballot written for this voter and question, counted or not.
    public var lowestSequence: UInt16
    public var highestSequence: UInt16
    public var firstHeard: Int64
    public var lastHeard: Int64
}

/// Why the ledger refused.
public enum LedgerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The database was migrated by a newer build than this one.
    case schemaTooNew(database: Int, known: Int)
    /// A poll registered again with another vote ID or change policy (its ballots would belong to
    /// another poll, or rank differently).
    case registrationConflict(poll: Int64, stored: String, asked: String)
    /// A receiver opened a database an older build migrated (the instructor's tally upgrades it).
    case schemaTooOld(database: Int, known: Int)
    /// The receiver token names no poll: it expired, or its poll was closed.
    case tokenNotValid
    /// A receiver token asked for a poll that is closed, or not in the ledger.
    case pollClosed(poll: Int64)
    /// A ballot for a poll or question not registered with ``BallotLedger/register(poll:voteID:policy:questions:)``.
    case unknownQuestion(poll: Int64, question: UInt8)
    /// The database said no, or could not be reached.
    case database(PostgresError)

    /// The server could not be reached or the connection broke: worth waiting for, unlike a refusal
    /// (credentials, schema, registration), which the same request meets again.
    public var isUnreachable: Bool {
        guard case .database(let e) = self else { return false }
        return e.kind == .unreachable || e.kind == .connectionLost
    }

    public var description: String {
        switch self {
        case .schemaTooNew(let database, let known):
            "the ballot ledger's database is at schema version \(database), newer than this build knows (version \(known)); "
                + "use a build of clicker at least as new as the one that upgraded it"
        case .schemaTooOld(let database, let known):
            "the ballot ledger's database is at schema version \(database), older than this build (version \(known)); "
                + "the instructor's clicker-tally upgrades it when it opens it"
        case .tokenNotValid:
            "this receiver token is not valid: its poll was closed or its time ran out; ask the instructor for a new one"
        case .pollClosed(let poll):
            "poll \(poll) is closed or not in the ledger: it takes no receivers"
        case .registrationConflict(let poll, let stored, let asked):
            "poll \(poll) is in the ledger with \(stored), not \(asked)"
        case .unknownQuestion(let poll, let question):
            "poll \(poll) has no question \(question) in the ledger"
        case .database(let e): e.description
        }
    }
}
