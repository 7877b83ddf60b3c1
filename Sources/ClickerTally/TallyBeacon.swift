import ClickerTransport
import ClickerWire

/// What a tally's beacon knows between payloads (docs/PROTOCOL.md §11.11; this tally's choices in
/// docs/DESIGN.md, "Sending the beacon: this tally" and "The STATE interval this tally announces"): the ballots of the open
/// question it counted and whether they were acknowledged, the load estimate, the composer. Pure: the
/// caller says what was counted and heard, on the radio's clock, and asks for payloads on the
/// poll's counter clock. The tally daemon and the TimeToCollect benchmark both run this.
public struct TallyBeacon: Sendable {
    public struct Tuning: Sendable, Hashable {
        /// Voters assumed to advertise when a question opens and nothing was heard yet: this many, or the
        /// largest question's room when larger (in a roster poll, at most the roster: ``roomLimit``). Too
        /// few would choke a large room (the tally would announce an interval far too short and hear
        /// nobody well enough to learn better); too many only slows a small room's first second or two.
        /// So a small question does not lower it: the next one may have latecomers (30 voters, then 300,
        /// at the interval for 30, were 11 % counted after 30 s in the TimeToCollect benchmark).
        public var expectedVoters = 1000
        /// A ballot acknowledged longer ago than this and heard twice within ``reacknowledgeGap`` is
        /// acknowledged again: its voter missed the acknowledgement and still advertises at the STATE
        /// interval. Each further time for the same ballot waits twice as long, up to
        /// ``reacknowledgeLongest``: where bluetoothd ignores intervals (no experimental features) every
        /// voter advertises at the kernel's 1.28 s, acknowledged or not, and the tally cannot tell them
        /// apart, so a voter that heard its acknowledgement is acknowledged again at 1.5, 3, 6, 12, 24 s,
        /// then every 30 s (and after the voters not yet acknowledged: ``BeaconComposer``).
        public var reacknowledgeAfter: Duration = .milliseconds(1500)
        public var reacknowledgeLongest: Duration = .seconds(30)
        /// Two hearings of a ballot this close say its voter is loud: the STATE interval (2.55 s at most)
        /// with one advertisement lost between, or bluetoothd's 1.28 s; a voter at the keep-alive is heard
        /// every 10.24 s at most.
        public var reacknowledgeGap: Duration = .seconds(6)
        /// With extended acknowledgements, a counted voter not heard for this long after its
        /// acknowledgement settled is taken to be quiet (``quietCount(at:)``).
        public var loudGap: Duration = .seconds(1)
        /// An acknowledgement in rotation this long is taken to have reached its voter (the load model
        /// counts the voter at the keep-alive).
        public var settle: Duration = .milliseconds(500)
        /// The same with extended acknowledgements, which reach 99 % of a room of 300 within 0.50 s
        /// (TimeToCollect `--beacon`).
        public var quickSettle: Duration = .milliseconds(300)
        /// With extended acknowledgements, the load the interval is chosen for: the voters must also
        /// hear the tally's frames, whose ADV_EXT_IND a voter's PDU destroys, and a channel a little
        /// below its best lets more through (e^(−(a+b)·λ): 0.51 at load 1, 0.58 at 0.8).
        public var quickTargetLoad = 0.8
        /// Ballots of one voter acknowledged at once on a question; a voter's ballots beyond these are
        /// acknowledged at most once per ``ballotSpacing`` (a student changing an answer a few times is
        /// never held; one voter's key casting thousands of ballots adds one fingerprint per spacing).
        public var ballotsPerVoter = 4
        public var ballotSpacing: Duration = .seconds(10)
        /// A voter counts in the room that the next question opens assuming only when it was heard
        /// within this long before that question opened: a follower is heard at its keep-alive
        /// (10.24 s) at least, twice within 21 s, while a burst of made-up voter IDs earlier in the
        /// question is not.
        public var roomRecency: Duration = .seconds(21)
        /// Distinct ballots acknowledged per question at most: the bound a voter relies on
        /// (``AckFingerprint/maxHeardPerQuestion``, PROTOCOL.md §11.4). Lower only in tests.
        public var acknowledgementLimit = AckFingerprint.maxHeardPerQuestion
        public var composer = BeaconComposer.Tuning()
        /// How far and how often the announced interval may move (``IntervalDamping``).
        public var damping = IntervalDamping.Tuning()

        public init() {}
    }

    struct Counted {
        var sequence: UInt16
        var countedAt: UInt64
        /// When its fingerprint went into a payload (nil: not yet).
        var acknowledgedAt: UInt64?
        var lastHeard: UInt64
        /// Distinct ballots of this voter acknowledged on the open question, and when the latest went.
        var ballotsAcknowledged: Int = 0
        var lastBallotAcknowledgedAt: UInt64?
        var acknowledgedSequence: UInt16?
        /// Times this ballot was acknowledged again (``Tuning/reacknowledgeAfter``).
        var reacknowledged = 0
        /// Counted but held back (the voter used its ``Tuning/ballotsPerVoter``): acknowledged once its
        /// spacing is over and it is heard again.
        var heldUntil: UInt64?
    }

    public let tuning: Tuning
    /// The most voters the poll can count, when it knows (a roster poll: its students). When smaller,
    /// it is the room: what a question opens assuming, and the most voters the estimate may read.
    public let roomLimit: Int?
    public private(set) var composer: BeaconComposer
    /// The voters at the STATE interval read from the repeats (legacy acknowledgements; with extended
    /// ones, a bound on the load).
    public private(set) var estimator = BeaconLoadEstimator()
    /// The voters not yet counted read from the arrivals (extended acknowledgements).
    public private(set) var likelihood = RoomLikelihood()
    /// The STATE interval announced last.
    public private(set) var interval = BeaconInterval(milliseconds: 20) ?? .stop {
        didSet { loudWindow = Self.loudWindow(tuning, interval) }
    }
    /// How long after its acknowledgement went out a counted voter is still taken to be loud: the
    /// settle time, or two STATE intervals when longer (its next events are that far apart). Kept as
    /// the interval changes, not worked out for every report.
    private(set) var loudWindow: UInt64
    /// ``Tuning/reacknowledgeGap``, ``Tuning/reacknowledgeAfter`` and ``Tuning/reacknowledgeLongest`` in
    /// nanoseconds, converted once: a ballot heard again reads them, and converting a `Duration` divides
    /// 128-bit numbers.
    let reacknowledgeGap: UInt64, reacknowledgeAfter: UInt64, reacknowledgeLongest: UInt64
    /// What keeps the announced interval from swinging; its `changes` count the open question's.
    public private(set) var damping: IntervalDamping
    /// Voters counted in the largest question so far (the room, for the next question's start).
    public private(set) var room: Int?
    var question: UInt8?
    var ballots: [VoterKey: Counted] = [:]
    var pending: [VoterKey] = []
    /// Distinct ballots acknowledged for the open question, at most ``Tuning/acknowledgementLimit``
    /// (2^18: four for each of the 65,536 voters a question holds, so made-up voters reach the voter limit
    /// before they use up the acknowledgements of the voters after them; docs/SECURITY.md); each voter's
    /// ballots beyond ``Tuning/ballotsPerVoter`` are spaced.
    public private(set) var acknowledged = 0
    /// Voter IDs heard with ballots of the open question that the tally cannot count (not on the roster:
    /// `unknownVoter`), and when each was last heard. Never acknowledged, such devices stay loud.
    var uncountable: [UInt32: UInt64] = [:]
    var broadcastInterval: Duration
    /// Reports of counted ballots heard while their voters were still taken to be loud (from counting
    /// until their acknowledgement has been in rotation for ``Tuning/settle``), since the last payload.
    var loudRepeats = 0
    /// Ballots counted for the first time since the last payload.
    var arrivals = 0
    var lastPayloadAt: UInt64?
    /// When the open question's current window of arrivals began (nil: at its next payload).
    var windowStart: UInt64?
    /// Acknowledgements go out in extended frames (58 a frame), which reach most voters within a
    /// second: a counted voter not heard again may have gone quiet, so the repeats overstate the load,
    /// and the tally reads the voters not yet counted from the arrivals instead (``RoomLikelihood``).
    var quickAcknowledgements: Bool { composer.capabilities.extended }

    /// `signer`: the poll's beacon key pair (version 4), which signs every frame with extended
    /// advertising; `deferSignatures`: leave STATE and ACKS signatures to the caller (``BeaconSigning``).
    public init(key: BeaconKey, mode: BallotMode, capabilities: BroadcastCapabilities, roomLimit: Int? = nil,
                tuning: Tuning = Tuning(), signer: BeaconSigner? = nil, deferSignatures: Bool = false) {
        self.tuning = tuning
        self.roomLimit = roomLimit.map { max(1, $0) }
        composer = BeaconComposer(key: key, mode: mode, capabilities: capabilities, tuning: tuning.composer,
                                  signer: signer, deferSignatures: deferSignatures)
        broadcastInterval = tuning.composer.fastInterval
        damping = IntervalDamping(tuning: tuning.damping)
        loudWindow = Self.loudWindow(tuning, interval)
        reacknowledgeGap = Self.ns(tuning.reacknowledgeGap)
        reacknowledgeAfter = Self.ns(tuning.reacknowledgeAfter)
        reacknowledgeLongest = Self.ns(tuning.reacknowledgeLongest)
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
        // The common case, a ballot heard again: one lookup, read and updated in place.
        let index = ballots.index(forKey: voter)
        if let i = index {
            let gap = reacknowledgeGap, longest = reacknowledgeLongest, first = reacknowledgeAfter
            let settle = loudWindow
            var heardAgain = false, again = false, evidence = false
            Self.modify(&ballots.values[i]) { c in
                guard c.sequence == sequence else { return }
                heardAgain = true
                if let held = c.heldUntil {
                    // Held back for its voter's spacing: acknowledged once the spacing is over.
                    evidence = true
                    if ns >= held {
                        c.heldUntil = nil
                        again = true
                    }
                } else if let at = c.acknowledgedAt {
                    if ns < at &+ settle {
                        evidence = true
                    } else if ns >= at &+ min(longest, first << UInt64(min(c.reacknowledged, 16))), ns < c.lastHeard &+ gap {
                        // Loud long after its acknowledgement: it missed it. Acknowledge again.
                        c.acknowledgedAt = nil
                        c.countedAt = ns
                        c.reacknowledged += 1
                        again = true
                    }
                } else {
                    evidence = true
                }
                c.lastHeard = max(c.lastHeard, ns)
            }
            if heardAgain {
                if evidence { loudRepeats += 1 }
                if again { pending.append(voter) }
                return
            }
        }
        let prior = index.map { ballots.values[$0] }
        if prior == nil { arrivals += 1 }
        let wasPending = prior.map { $0.acknowledgedAt == nil && $0.heldUntil == nil } ?? false
        var c = Counted(sequence: sequence, countedAt: ns, acknowledgedAt: nil, lastHeard: ns,
                        ballotsAcknowledged: prior?.ballotsAcknowledged ?? 0,
                        lastBallotAcknowledgedAt: prior?.lastBallotAcknowledgedAt,
                        acknowledgedSequence: prior?.acknowledgedSequence)
        // One voter's many ballots: beyond its allowance, one acknowledgement per spacing.
        if c.ballotsAcknowledged >= tuning.ballotsPerVoter, let last = c.lastBallotAcknowledgedAt,
           ns < last &+ Self.ns(tuning.ballotSpacing) {
            c.heldUntil = last &+ Self.ns(tuning.ballotSpacing)
            ballots[voter] = c
            return
        }
        ballots[voter] = c
        if !wasPending { pending.append(voter) }
    }

    /// A ballot of `question` whose voter ID the tally has no key for (a device not on the roster), heard
    /// at `ns`: the device follows the beacon but is never acknowledged, so it loads the channel at the
    /// STATE interval like a voter not yet counted. Only the open question's count.
    public mutating func heardUncountable(voterID: UInt32, question q: UInt8, at ns: UInt64) {
        guard q == question else { return }
        if uncountable[voterID] == nil, uncountable.count >= Self.uncountableLimit { return }
        uncountable[voterID] = max(uncountable[voterID] ?? 0, ns)
    }

    /// The most devices the tally cannot count that it keeps in the room at once.
    static let uncountableLimit = 4096

    /// Forgets the devices the tally cannot count that were not heard lately (within 3 s, or 4 STATE
    /// periods when longer: a loud device is heard at most every period, and not at every one), so that a
    /// burst of made-up voter IDs does not fill the table for the rest of the question; returns those left.
    mutating func pruneUncountable(at ns: UInt64) -> Int {
        guard !uncountable.isEmpty else { return 0 }
        let window = max(Self.ns(.seconds(3)), 4 * Self.ns(.milliseconds(interval.milliseconds ?? 20) + BeaconAirModel.meanDelay))
        uncountable = uncountable.filter { $0.value &+ window > ns }
        return uncountable.count
    }

    /// The voters of the open question heard within ``Tuning/roomRecency`` of the latest report or
    /// payload: followers still there (made-up voter IDs sent once earlier in the question are not).
    var recentVoters: Int {
        var end = lastPayloadAt ?? 0
        for c in ballots.values where c.lastHeard > end { end = c.lastHeard }
        let since = end >= Self.ns(tuning.roomRecency) ? end - Self.ns(tuning.roomRecency) : 0
        return ballots.values.reduce(0) { $0 + ($1.lastHeard >= since ? 1 : 0) }
    }

    mutating func startQuestion(_ q: UInt8) {
        guard question != q else { return }
        if question != nil { room = max(room ?? 0, recentVoters) }
        question = q
        estimator = BeaconLoadEstimator()
        likelihood = RoomLikelihood()
        damping.reset()
        windowStart = nil
        loudRepeats = 0
        arrivals = 0
        ballots.removeAll()
        uncountable.removeAll()
        pending.removeAll()
        acknowledged = 0
    }

    /// The radio took `frame` at `tick` (``ClickerTransport/BroadcasterTransport/framesTaken()``).
    public mutating func taken(_ frame: FrameTaken, tick: UInt32) { composer.taken(frame, at: tick) }

    /// The payload for `phase` at `tick` (the poll's counter clock) and `ns` (the radio's clock, as
    /// given to ``counted(_:question:sequence:at:)``): the ballots counted since the last payload are
    /// acknowledged, the STATE interval chosen for the voters not yet acknowledged.
    public mutating func payload(_ phase: BeaconPhase, tick: UInt32, at ns: UInt64) -> BroadcastPayload {
        if case .open(let q) = phase { startQuestion(q.number) }
        var fingerprints: [AckFingerprint] = [], again: [AckFingerprint] = []
        var quiet = 0, stuck = 0
        if let q = question {
            for v in pending {
                guard var c = ballots[v], c.acknowledgedAt == nil, c.heldUntil == nil else { continue }
                // Past the bound no new fingerprint goes out (an acknowledgement sent again is no new one).
                guard c.acknowledgedSequence == c.sequence || acknowledged < tuning.acknowledgementLimit else { continue }
                let f = composer.key.fingerprint(voterID: v.voterID, question: q, sequence: c.sequence)
                if c.acknowledgedSequence != c.sequence {
                    fingerprints.append(f)
                    acknowledged += 1
                    c.ballotsAcknowledged += 1
                } else {
                    again.append(f)
                }
                c.acknowledgedAt = ns
                c.lastBallotAcknowledgedAt = ns
                c.acknowledgedSequence = c.sequence
                ballots[v] = c
            }
            if !fingerprints.isEmpty || !again.isEmpty { composer.acknowledge(fingerprints, again: again, question: q, at: tick) }
            observeRepeats(at: ns)
            quiet = quietCount(at: ns)
            stuck = pruneUncountable(at: ns)
            if quickAcknowledgements { observeArrivals(at: ns, quiet: quiet, stuck: stuck) }
        }
        loudRepeats = 0
        arrivals = 0
        lastPayloadAt = ns
        pending.removeAll(keepingCapacity: true)
        if case .open = phase { interval = chooseInterval(at: ns, quiet: quiet, stuck: stuck) }
        let p = composer.compose(phase, interval: interval, at: tick)
        broadcastInterval = p.interval
        return p
    }

    /// The voters counted and taken to be quiet at `ns`: their acknowledgement has been out for the
    /// settle time. With extended acknowledgements, not a voter heard since then within ``Tuning/loudGap``:
    /// it missed its acknowledgement and still advertises at the STATE interval.
    func quietCount(at ns: UInt64) -> Int {
        var quiet = 0
        if quickAcknowledgements {
            let settled = Self.ns(tuning.quickSettle), gap = Self.ns(tuning.loudGap)
            for c in ballots.values {
                guard let at = c.acknowledgedAt, ns >= at &+ settled else { continue }
                if c.lastHeard < at &+ settled || ns >= c.lastHeard &+ gap { quiet += 1 }
            }
        } else {
            let settled = Self.ns(tuning.settle)
            for c in ballots.values { if let at = c.acknowledgedAt, ns >= at &+ settled { quiet += 1 } }
        }
        return quiet
    }

    /// Extended acknowledgements: the window of arrivals since the last payload, `quiet` of the counted
    /// voters taken to be quiet, `stuck` devices heard that it cannot count (loud like counted voters
    /// that are not yet quiet).
    mutating func observeArrivals(at ns: UInt64, quiet: Int, stuck: Int) {
        defer { windowStart = ns }
        guard let start = windowStart, ns > start else { return }
        let period = BeaconAirModel.seconds(.milliseconds(interval.milliseconds ?? 20) + BeaconAirModel.meanDelay)
        let listening = BeaconLoadEstimator.listening(BeaconAirModel.Broadcast(interval: broadcastInterval),
                                                      airTime: BeaconAirModel.ballotAirTime)
        likelihood.observe(RoomLikelihood.Window(end: ns, seconds: Double(ns - start) / 1e9, arrivals: arrivals,
                                                 period: period, counted: ballots.count,
                                                 loudCounted: ballots.count - quiet + stuck, quiet: quiet, listening: listening))
    }

    /// The repeats since the last payload: legacy acknowledgements read the load from them, extended
    /// ones a bound on it.
    mutating func observeRepeats(at ns: UInt64) {
        // Evidence of the load: the advertising events since the last payload of counted voters taken
        // to be loud (from counting until their acknowledgement has been out for the loud window),
        // whole intervals after their counted report, and the repeats heard from them meanwhile.
        let settle = loudWindow, since = lastPayloadAt ?? 0
        let period = max(1, Self.ns(.milliseconds(interval.milliseconds ?? 20) + BeaconAirModel.meanDelay))
        var events: UInt64 = 0
        for c in ballots.values {
            let end = c.acknowledgedAt.map { min(ns, $0 &+ settle) } ?? ns
            guard end > c.countedAt else { continue }
            let before = since > c.countedAt ? (since - c.countedAt) / period : 0
            let after = (end - c.countedAt) / period
            if after > before { events += after - before }
        }
        estimator.observe(repeats: loudRepeats, events: Double(events), at: ns)
    }

    /// The interval for the voters at the STATE interval: the estimate when the evidence suffices
    /// (extended acknowledgements: the voters not yet counted, from the arrivals, and those counted but
    /// not yet quiet; legacy: the voters at the STATE interval, from the repeats), else the room. `quiet`:
    /// the counted voters taken to be quiet (``quietCount(at:)``); `stuck`: the devices heard that it
    /// cannot count (``pruneUncountable(at:)``).
    mutating func chooseInterval(at ns: UInt64, quiet: Int, stuck: Int) -> BeaconInterval {
        let broadcast = BeaconAirModel.Broadcast(interval: broadcastInterval)
        // The room bounds the estimate: no more voters can be loud than the room holds. (Not less those
        // acknowledged: an acknowledgement in rotation is no proof that its voter heard it.) A roster
        // poll's room is its roster: it cannot count more voters. Devices it hears but cannot count (not on
        // the roster) are in the room too, never beyond the room a poll without a roster assumes: voter IDs
        // are free to make up, and a forger must not lengthen the interval further than that.
        let open = max(self.room ?? 0, tuning.expectedVoters, ballots.count)
        var room = open
        if let limit = roomLimit { room = max(min(limit, room), ballots.count) }
        room = min(open, room + stuck)
        estimator.observe(repeats: 0, events: 0, at: ns)  // fades old evidence
        let current = interval.milliseconds.map { Duration.milliseconds($0) } ?? .milliseconds(20)
        let estimate: Int?
        if quickAcknowledgements {
            // The repeats overstate the load (voters went quiet), so they bound it from above: a room
            // that would load the channel past them (less one standard deviation of their count) is
            // not this one. With fewer than 3 repeats their load is the prior's (half a repeat), which a
            // deeply overloaded room exceeds.
            let loudCounted = ballots.count - quiet + stuck
            let atMost = estimator.repeats >= Self.minimumRepeats
                ? estimator.voters(interval: current, acknowledged: quiet, broadcast: broadcast, upper: true).map { max(0, $0 - loudCounted) }
                : nil
            estimate = likelihood.uncounted(counted: ballots.count, at: ns, atMost: atMost).map {
                Int((Double($0 + loudCounted) / tuning.quickTargetLoad).rounded(.up))
            }
        } else {
            estimate = estimator.voters(interval: current, acknowledged: quiet, broadcast: broadcast)
        }
        let loud = min(estimate ?? .max, room)
        let best = BeaconAirModel.stateInterval(unacknowledged: loud, acknowledged: quiet, broadcast: broadcast)
        // Voters restart their advertising for a new interval: it changes only when it is off by a fifth,
        // not too often, and turns back only on lasting evidence.
        return damping.next(current: interval, best: best, at: ns)
    }

    /// Repeats the evidence must hold before their reading bounds the load from above.
    static let minimumRepeats = 3.0

    @inline(__always)
    static func modify(_ c: inout Counted, _ body: (inout Counted) -> Void) { body(&c) }

    /// ``loudWindow`` for `interval`.
    static func loudWindow(_ tuning: Tuning, _ interval: BeaconInterval) -> UInt64 {
        max(ns(tuning.settle), 2 * ns(.milliseconds(interval.milliseconds ?? 20) + BeaconAirModel.meanDelay))
    }

    static func ns(_ d: Duration) -> UInt64 {
        let (s, atto) = d.components
        return UInt64(max(0, s)) * 1_000_000_000 + UInt64(max(0, atto / 1_000_000_000))
    }
}
