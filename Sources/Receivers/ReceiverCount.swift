import ClickerLedger
import ClickerTally
import ClickerTransport
import ClickerWire

/// What one receiver counts, pure: the poll's ingest pipeline (decode → verify → tally, the same
/// `IngestPipeline` the instructor's tally runs) over what this receiver hears, and, for each report,
/// the ballot the ledger gets when it changed this receiver's count of its voter: a new or changed
/// answer, or the same answer under a new sequence. Repeats of the counted ballot give nothing.
///
/// The receiver counts anonymous polls: it holds no roster (a roster ballot is `unknownVoter` here)
/// and reads no ballot back over GATT, so every ballot it writes is unverified.
public struct ReceiverCount: Sendable {
    public private(set) var pipeline: IngestPipeline
    public let poll: Int64
    /// The wall time of the radio's instant zero, in microseconds since the Unix epoch: a report's
    /// `heardAt` is this plus its timestamp.
    public let radioEpoch: Int64

    /// A count for `poll`, whose join code derived `secret` (its vote ID must be the poll's), with
    /// `questions` open.
    public init(poll: ReceiverPoll, secret: PollSecret, questions: [QuestionSpec], radioEpoch: Int64,
                flood: FloodPolicy = FloodPolicy()) throws(ReceiverError) {
        guard secret.voteID == poll.voteID else { throw .otherPoll(joinCode: secret.voteID, ledger: poll.voteID) }
        pipeline = IngestPipeline(secret: secret, policy: flood, changePolicy: poll.policy)
        self.poll = poll.poll
        self.radioEpoch = radioEpoch
        open(questions)
    }

    /// Opens the questions of `specs` not open yet (the instructor registers a question when it
    /// opens it; a receiver learns it from the ledger).
    public mutating func open(_ specs: [QuestionSpec]) {
        for spec in specs where pipeline.tally.question(spec.number) == nil { pipeline.tally.open(spec) }
    }

    /// Stops counting the questions of `numbers` (closed in the ledger): their ballots are refused
    /// from now on, as the ledger refuses them.
    public mutating func close(_ numbers: Set<UInt8>) {
        let open = numbers.intersection(pipeline.tally.openQuestions)
        guard !open.isEmpty else { return }
        for q in open { pipeline.tally.close(question: q) }
        pipeline.forgetClosedQuestions()
    }

    /// The numbers of the questions counted.
    public var questions: Set<UInt8> { pipeline.tally.openQuestions }

    /// Ingests one report; returns the ballot for the ledger when the count of its voter changed.
    public mutating func ingest(_ report: AdvertisementReport) -> LedgerBallot? {
        let result = pipeline.ingest(report)
        guard let b = result.ballot, let counted = pipeline.tally.counted(b) else { return nil }
        switch result.outcome {
        case .new, .changed: break
        case .repeated:
            guard let before = result.previous, before.sequence != counted.sequence || before.verified != counted.verified else {
                return nil
            }
        case .unregistered, .rejected: return nil
        }
        return LedgerBallot(poll: poll, question: b.question, voter: VoterKey(mode: b.mode, voterID: b.voterID),
                            sequence: counted.sequence, answer: counted.answer, verified: counted.verified,
                            heardAt: radioEpoch + Int64(report.timestamp.nanoseconds / 1000), address: report.address)
    }
}

/// Why a receiver cannot count.
public enum ReceiverError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The join code is of another poll than the receiver token's.
    case otherPoll(joinCode: UInt16, ledger: UInt16)
    /// The ledger refused or could not be reached when the receiver started.
    case ledger(LedgerError)
    /// The local journal could not be opened.
    case journal(String)
    /// The system refused a thread.
    case threadUnavailable
    /// A roster poll: receivers hold no roster, so the ledger does not count one.
    case rosterPoll

    public var description: String {
        switch self {
        case .otherPoll(let code, let ledger):
            "the join code is of vote \(code), but the receiver token is for the poll of vote \(ledger): give the join code of the token's poll"
        case .ledger(let e): "\(e)"
        case .journal(let why): "the receiver's journal: \(why)"
        case .threadUnavailable: "the system refused a thread for the receiver's writer"
        case .rosterPoll: "receivers count anonymous polls only: a roster poll cannot be counted in the ledger (leave out --roster or --ledger)"
        }
    }
}
