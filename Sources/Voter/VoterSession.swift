import ClickerTransport
import ClickerWire
import Logging

/// One student's voting for one question of one poll, on one peripheral radio.
///
/// Each `cast` seals a ballot with a higher sequence number (persisted, so a restarted
/// voter still outranks its own earlier ballot), advertises it and serves the full ballot
/// on the GATT ballot characteristic.
public actor VoterSession {
    public let question: UInt8
    private let sealer: BallotSealer
    public var joinCode: JoinCode { sealer.joinCode }
    public var voterID: UInt32 { sealer.voterID }
    /// This device's per-poll Ed25519 public key (its hash is the anonymous voter ID).
    public var publicKey: [UInt8] { sealer.publicKey }
    private let transport: any PeripheralTransport
    private let sequences: SequenceStore?
    private let interval: Duration
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
        self.sequences = state.map(SequenceStore.init(state:))
        self.interval = interval
        self.logger = logger
    }

    /// Casts (or changes) the vote. Returns the ballot now on the air; the GATT characteristic
    /// serves its 142-byte signed value.
    @discardableResult
    public func cast(_ answer: Answer) async throws -> Ballot {
        let last = current?.sequence ?? sequences?.last(voteID: joinCode.voteID, question: question, voterID: voterID) ?? 0
        guard last < UInt16.max else { throw VoterError.sequenceExhausted }
        let ballot = sealer.ballot(question: question, sequence: last + 1, answer: answer)
        // Persist first: if we crash after advertising, the next run must still go higher.
        try sequences?.record(voteID: joinCode.voteID, question: question, voterID: voterID, sequence: ballot.sequence)
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
        logger.debug("advertising \(answer) (sequence \(ballot.sequence)) for vote \(joinCode.voteID), question \(question)")
        return ballot
    }

    /// Stops advertising and withdraws the GATT service.
    public func stop() async {
        await transport.shutdown()
    }
}

public enum VoterError: Error, CustomStringConvertible, Equatable {
    case sequenceExhausted

    public var description: String {
        switch self {
        case .sequenceExhausted: "this device has changed its vote 65535 times for this question; no higher sequence is left"
        }
    }
}

/// The last sequence number used per (vote ID, question, voter ID), in one small file.
struct SequenceStore: Sendable {
    let state: StateDirectory
    static let file = "sequences"

    private func load() -> [String: UInt16] {
        guard let bytes = state.read(Self.file) else { return [:] }
        var out: [String: UInt16] = [:]
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count == 2, let seq = UInt16(f[1]) else { continue }  // skip damaged lines
            out[String(f[0])] = max(out[String(f[0])] ?? 0, seq)
        }
        return out
    }

    private static func key(_ v: UInt16, _ q: UInt8, _ id: UInt32) -> String { "\(v)/\(q)/\(id)" }

    func last(voteID: UInt16, question: UInt8, voterID: UInt32) -> UInt16 {
        load()[Self.key(voteID, question, voterID)] ?? 0
    }

    func record(voteID: UInt16, question: UInt8, voterID: UInt32, sequence: UInt16) throws {
        var all = load()
        all[Self.key(voteID, question, voterID)] = sequence
        // Keep the file small: the newest 256 entries are plenty for any board.
        let text = all.sorted { $0.key < $1.key }.suffix(256).map { "\($0.key) \($0.value)\n" }.joined()
        try state.write(Self.file, Array(text.utf8))
    }
}

/// The device's long-lived key, created on first use and kept (mode 0600) in the state directory.
public enum DeviceIdentity {
    static let file = "device-key"

    /// Loads the device key, creating it on first use.
    public static func loadOrCreate(in state: StateDirectory) throws -> DeviceKey {
        if let bytes = state.read(file) {
            let text = String(decoding: bytes, as: UTF8.self).trimmingWhitespace()
            guard let key = try? DeviceKey(encoded: text) else {
                throw VoterStateError.corrupt(state.path + "/" + file)
            }
            return key
        }
        let key = DeviceKey.generate()
        try state.write(file, Array(key.encoded.utf8))  // one line, one newline
        return key
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let c = s.first, c.isWhitespace { s.removeFirst() }
        while let c = s.last, c.isWhitespace { s.removeLast() }
        return String(s)
    }
}
