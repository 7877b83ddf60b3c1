import ClickerTransport
import ClickerWire

/// What a tally's beacon knows between payloads (docs/PROTOCOL.md §11.11): the ballots of the open
/// question it counted and whether they were acknowledged, the load estimate, the composer. Pure: the
/// caller says what was counted and heard, on the radio's clock, and asks for payloads on the
/// poll's counter clock. The tally daemon and the TimeToCollect benchmark both run this.
public struct TallyBeacon: Sendable {
    public struct Tuning: Sendable, Hashable {
        /// Voters assumed to advertise when a question opens and nothing was heard yet: the room of the
        /// last question, or this many at the poll's first question. Too few would choke a large room
        /// (the tally would announce an interval far too short and hear nobody well enough to learn
        /// better); too many only slows a small room's first second or two.
        public var expectedVoters = 1000
        /// A ballot acknowledged longer ago than this and heard twice within ``loudGap`` is
        /// acknowledged again: its voter missed the acknowledgement and still advertises at the STATE
        /// interval (a voter at the keep-alive is heard every 10.24 s at most).
        public var reacknowledgeAfter: Duration = .milliseconds(1500)
        public var loudGap: Duration = .seconds(1)
        /// An acknowledgement in rotation this long is taken to have reached its voter (the load model
        /// counts the voter at the keep-alive).
        public var settle: Duration = .milliseconds(500)
        public var composer = BeaconComposer.Tuning()

        public init() {}
    }

    struct Counted {
        var sequence: UInt16
        var countedAt: UInt64
        /// When its fingerprint went into a payload (nil: not yet).
        var acknowledgedAt: UInt64?
        var lastHeard: UInt64
        /// Reports heard before it was acknowledged (evidence for the load).
        var repeats: Int
    }

    public let tuning: Tuning
    public private(set) var composer: BeaconComposer
    public private(set) var estimator = BeaconLoadEstimator()
    /// The STATE interval announced last.
    public private(set) var interval = BeaconInterval(milliseconds: 20) ?? .stop
    /// Voters counted in the largest question so far (the room, for the next question's start).
    public private(set) var room: Int?
    var question: UInt8?
    var ballots: [VoterKey: Counted] = [:]
    var pending: [VoterKey] = []
    /// Distinct ballots acknowledged for the open question (at most ``AckFingerprint/maxHeardPerQuestion``).
    public private(set) var acknowledged = 0
    var broadcastInterval: Duration

    public init(key: BeaconKey, mode: BallotMode, capabilities: BroadcastCapabilities, tuning: Tuning = Tuning()) {
        self.tuning = tuning
        composer = BeaconComposer(key: key, mode: mode, capabilities: capabilities, tuning: tuning.composer)
        broadcastInterval = tuning.composer.fastInterval
    }

    /// Whether ballots were counted since the last payload.
    public var hasPending: Bool { !pending.isEmpty }

    /// The STATE frame of the last payload (the tally's own: heard again, it is no forgery).
    public var lastState: [UInt8]? { composer.lastState }

    /// `voter`'s ballot (`question`, `sequence`) is counted, heard at `ns` on the radio's clock: the
    /// tally counted it now (new, changed, or the same answer under a new sequence), or heard again the
    /// ballot it counts. Only ballots of the open question are acknowledged.
    public mutating func counted(_ voter: VoterKey, question q: UInt8, sequence: UInt16, at ns: UInt64) {
        startQuestion(q)
        if var c = ballots[voter], c.sequence == sequence {
            if c.acknowledgedAt == nil {
                c.repeats += 1
            } else if let at = c.acknowledgedAt, ns >= at &+ Self.ns(tuning.reacknowledgeAfter),
                      ns < c.lastHeard &+ Self.ns(tuning.loudGap) {
                // Loud long after its acknowledgement: it missed it. Acknowledge again.
                c.acknowledgedAt = nil
                c.countedAt = ns
                c.repeats = 0
                pending.append(voter)
            }
            c.lastHeard = max(c.lastHeard, ns)
            ballots[voter] = c
            return
        }
        guard acknowledged < AckFingerprint.maxHeardPerQuestion else { return }
        acknowledged += 1
        let wasPending = ballots[voter].map { $0.acknowledgedAt == nil } ?? false
        ballots[voter] = Counted(sequence: sequence, countedAt: ns, acknowledgedAt: nil, lastHeard: ns, repeats: 0)
        if !wasPending { pending.append(voter) }
    }

    mutating func startQuestion(_ q: UInt8) {
        guard question != q else { return }
        if question != nil { room = max(room ?? 0, ballots.count) }
        question = q
        estimator = BeaconLoadEstimator()
        ballots.removeAll()
        pending.removeAll()
        acknowledged = 0
    }

    /// The payload for `phase` at `tick` (the poll's counter clock) and `ns` (the radio's clock, as
    /// given to ``counted(_:question:sequence:at:)``): the ballots counted since the last payload are
    /// acknowledged, the STATE interval chosen for the voters not yet acknowledged.
    public mutating func payload(_ phase: BeaconPhase, tick: UInt32, at ns: UInt64) -> BroadcastPayload {
        if case .open(let q) = phase { startQuestion(q.number) }
        var fingerprints: [AckFingerprint] = []
        var exposure: UInt64 = 0, repeats = 0
        if let q = question {
            for v in pending {
                guard var c = ballots[v], c.acknowledgedAt == nil else { continue }
                fingerprints.append(composer.key.fingerprint(voterID: v.voterID, question: q, sequence: c.sequence))
                exposure += ns > c.countedAt ? ns - c.countedAt : 0
                repeats += c.repeats
                c.acknowledgedAt = ns
                ballots[v] = c
            }
            if !fingerprints.isEmpty {
                composer.acknowledge(fingerprints, question: q, at: tick)
                estimator.observe(repeats: repeats, exposure: .nanoseconds(Int64(clamping: exposure)), at: ns)
            }
        }
        pending.removeAll(keepingCapacity: true)
        if case .open = phase { interval = chooseInterval(at: ns) }
        let p = composer.compose(phase, interval: interval, at: tick)
        broadcastInterval = p.interval
        return p
    }

    /// The interval for the voters at the STATE interval: the load estimate when the evidence suffices,
    /// else the room not yet counted.
    mutating func chooseInterval(at ns: UInt64) -> BeaconInterval {
        let settled = Self.ns(tuning.settle)
        var quiet = 0
        for c in ballots.values { if let at = c.acknowledgedAt, ns >= at &+ settled { quiet += 1 } }
        let broadcast = BeaconAirModel.Broadcast(interval: broadcastInterval)
        estimator.observe(repeats: 0, exposure: .zero, at: ns)  // fades old evidence
        let current = interval.milliseconds.map { Duration.milliseconds($0) } ?? .milliseconds(20)
        let loud = estimator.voters(interval: current, acknowledged: quiet, broadcast: broadcast)
            ?? max(0, (room ?? tuning.expectedVoters) - ballots.count)
        return BeaconAirModel.stateInterval(unacknowledged: loud, acknowledged: quiet, broadcast: broadcast)
    }

    static func ns(_ d: Duration) -> UInt64 {
        let (s, atto) = d.components
        return UInt64(max(0, s)) * 1_000_000_000 + UInt64(max(0, atto / 1_000_000_000))
    }
}
