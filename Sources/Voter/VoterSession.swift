import ClickerTransport
import ClickerWire
import Logging
import PrivateFiles

/// One student's voting for one question of one poll, on one peripheral radio.
///
/// Each `cast` of a new ballot (another question, or another answer) seals it with the poll's
/// next sequence number (persisted, so a restarted voter still outranks its own earlier ballot),
/// advertises it and serves the full ballot on the GATT ballot characteristic. Casting the same
/// answer to the same question again re-sends the same ballot.
///
/// The sequence file is read, locked and rewritten (flock, fsync, rename) on a serial queue of its
/// own, never on the cooperative pool: `cast` is async because it advertises, and a blocking flock
/// held by another `clicker-vote` would otherwise stall a pool thread for as long as it waits.
public actor VoterSession {
    public let question: UInt8
    private let sealer: BallotSealer
    public var joinCode: JoinCode { sealer.joinCode }
    public var voterID: UInt32 { sealer.voterID }
    /// This device's per-poll Ed25519 public key (its hash is the anonymous voter ID).
    public var publicKey: [UInt8] { sealer.publicKey }
    private let transport: any PeripheralTransport
    private let sequences: SequenceStore?
    /// The sequences of a voter without a state directory (simulated students).
    private var memory = SequenceBook()
    private let fileWork = BlockingWorker(label: "clicker.voter.state")
    private var interval: Duration
    /// The advertisement of ``current``, kept to re-advertise it at another interval.
    private var advert: [UInt8]?
    private let logger: Logger
    private(set) public var current: Ballot?
    private var gattUnsupportedLogged = false

    /// - Parameters:
    ///   - state: where the last sequence number is kept across runs; nil keeps it in memory only
    ///     (simulated students).
    ///   - secret: the poll secret S, derived once from the join code (``PollSecret/init(deriving:)``).
    ///   - identity: the device's key; it fixes the voter ID (per poll in anonymous mode).
    ///   - roster: encrypt and tag with the student's roster key (roster mode) instead of the poll key.
    public init(secret: PollSecret, question: UInt8, identity: DeviceKey, roster: Bool = false,
                transport: any PeripheralTransport, state: StateDirectory?,
                interval: Duration = .milliseconds(100), logger: Logger = Logger(label: "clicker.voter")) {
        self.question = question
        self.sealer = BallotSealer(secret: secret, deviceKey: identity, mode: roster ? .roster : .anonymous)
        self.transport = transport
        self.sequences = state.map { SequenceStore(state: $0) }
        self.interval = interval
        self.logger = logger
    }

    /// Casts (or changes) the vote. Returns the ballot now on the air; the GATT characteristic
    /// serves its 142-byte signed value.
    @discardableResult
    public func cast(_ answer: Answer) async throws -> Ballot {
        let sequence = try await claimSequence(answer)
        let ballot = sealer.ballot(question: question, sequence: sequence, answer: answer)
        let advert = sealer.advertisement(question: question, sequence: ballot.sequence, answer: answer)
        let full = sealer.gattValue(question: question, sequence: ballot.sequence, answer: answer)
        do {
            try await transport.publish(service: BallotFormat.serviceUUID,
                                        characteristic: BallotFormat.ballotCharacteristicUUID, value: full)
        } catch TransportError.unsupported(let why) {
            // A radio without GATT (raw HCI): the vote still counts from the advertisement alone.
            if !gattUnsupportedLogged {
                logger.notice("no GATT ballot on this radio (\(why)); the tally counts the advertisement alone")
                gattUnsupportedLogged = true
            }
        }
        try await transport.advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: advert,
                                                         interval: interval, connectable: true))
        current = ballot
        self.advert = advert
        logger.debug("advertising \(answer) (sequence \(ballot.sequence)) for vote \(joinCode.voteID), question \(question)")
        return ballot
    }

    /// The poll's key in the sequence file: mode, vote ID and voter ID (the voter ID is derived
    /// from the join code, so two polls that share a vote ID still get counters of their own).
    var pollKey: String {
        let mode = sealer.mode == .roster ? "r" : "a"
        return "\(mode)-\(joinCode.voteID)-" + String(voterID, radix: 16)
    }

    /// Persists before returning: if we crash after advertising, the next run must still go higher.
    private func claimSequence(_ answer: Answer) async throws -> UInt16 {
        let (k, hi, lo) = answer.wireBytes
        let poll = pollKey, question = self.question
        guard let sequences else {
            return try memory.claim(poll: poll, question: question, answer: [k, hi, lo]).sequence
        }
        return try await fileWork.run { try sequences.claim(poll: poll, question: question, answer: [k, hi, lo]) }
    }

    /// Casts `answer` advertised every `interval` (a voter following the beacon, §11.10).
    @discardableResult
    public func cast(_ answer: Answer, interval: Duration) async throws -> Ballot {
        self.interval = interval
        return try await cast(answer)
    }

    /// Re-advertises the current ballot (same sequence) every `interval`; nothing when none was cast.
    public func readvertise(interval: Duration) async throws {
        self.interval = interval
        guard let advert else { return }
        try await transport.advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: advert,
                                                         interval: interval, connectable: true))
    }

    /// Stops advertising, and keeps the radio (the beacon is still heard); ``readvertise(interval:)`` resumes.
    public func silence() async throws {
        try await transport.stopAdvertising()
    }

    /// Stops advertising and withdraws the GATT service.
    public func stop() async {
        await transport.shutdown()
    }
}

public enum VoterError: Error, CustomStringConvertible, Equatable {
    case sequenceExhausted
    /// Following the beacon needs a radio that listens while it advertises.
    case cannotListen

    public var description: String {
        switch self {
        case .sequenceExhausted: "this device has sealed 65535 ballots in this poll; no higher sequence is left"
        case .cannotListen: "this radio cannot listen for the tally's beacon; give the question with --question N"
        }
    }
}
