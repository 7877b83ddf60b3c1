import ClickerTransport
import ClickerWire

/// A voter following the tally's beacon (docs/PROTOCOL.md §11.10): what it hears, what the student
/// answers and the time go in; what to advertise and what to show come out. Pure value, no I/O:
/// the caller feeds it manufacturer data, answers and its monotonic clock, casts the ballot
/// ``advertising`` asks for (a new ``Advertising/ballot`` generation means a new ballot, with a new
/// sequence) and reports the sequence it sealed with ``sealed(generation:sequence:)``.
public struct BeaconFollower: Sendable {
    /// How long the voter waits for an authentic STATE frame before it says there is no beacon.
    public static let noBeaconAfter: Duration = .seconds(5)
    /// How its radio listens for the beacon: all the time (what BlueZ's discovery does anyway). At
    /// ``ScanDutyCycle/fast``'s half, 99 % of 1,000 voters were counted in 4.85 s and 85 % heard their
    /// acknowledgement within a second; always on, 4.10 s and 98.5 % (TimeToCollect `--beacon`,
    /// extended frames, on the air before voters staggered their starts: docs/SIMULATION.md).
    public static let listening = ScanDutyCycle.continuous
    /// A voter sending its ballot that hears no authentic beacon frame for this long doubles its
    /// interval, and again after each further such silence, up to ``longestBackoff``; the next STATE
    /// it admits sets the interval it asks for again. Voters that choke the channel also deafen
    /// themselves to the STATE that would slow them: in TimeToCollect `--beacon`, a tally that
    /// announced 20 ms to 240 voters on a bad reading, and 720 ms 0.6 s later, left them all at 20 ms
    /// for the rest of the 30 s (legacy frames, 4 seeds of 20). Longer than the longest a quiet tally
    /// goes without sealing a new frame (a STATE every second, on a 250 ms tick): a BlueZ voter hears
    /// a frame only when the data change.
    public static let silenceBeforeBackoff: Duration = .milliseconds(1500)
    /// The longest interval backing off reaches (the longest a STATE frame can ask for).
    public static let longestBackoff: Duration = .milliseconds(2550)

    /// A question a STATE frame opened, with its text once every TEXT page arrived.
    public struct Question: Sendable, Hashable {
        public var beacon: BeaconQuestion
        public var text: QuestionText?
        public var number: UInt8 { beacon.number }
        /// A numeric question whose range and decimals (in its text block) have not arrived yet: an
        /// answer waits for them.
        public var awaitsForm: Bool { beacon.kind == .numeric && beacon.textDigest != nil && text?.numeric == nil }
        /// The numeric question's range and decimals, once its text block arrived.
        public var numeric: NumericForm? { text?.numeric }
        public init(beacon: BeaconQuestion, text: QuestionText? = nil) {
            self.beacon = beacon
            self.text = text
        }
    }

    /// What the student is shown; one value per change.
    public enum Status: Sendable, Hashable {
        /// No authentic STATE yet.
        case waiting
        /// No authentic STATE within ``noBeaconAfter``: wrong join code, out of range, or no tally
        /// running (`--question N` works with a tally that does not beacon).
        case noBeacon
        /// A question is open and the student has not answered it (or its text just arrived).
        case open(Question)
        /// The ballot of `answer` is advertised and not yet acknowledged.
        case sending(Answer)
        /// An ACKS frame of the question holds the current ballot's fingerprint.
        case counted(Answer)
        /// The student's answer is not one the open question offers; nothing new is advertised.
        case notOffered(Answer)
        /// The question closed; nothing is advertised.
        case questionClosed(UInt8)
        /// The poll is over; nothing is advertised, the voter keeps listening.
        case pollClosed
        /// The poll counts ballots of `poll`'s mode, not this voter's; nothing is advertised.
        case rosterMismatch(poll: BallotMode)
    }

    /// What the radio should advertise.
    public enum Advertising: Sendable, Hashable {
        case silent
        /// The ballot of `answer` for `question`, every `interval`. A new `generation` is a new ballot.
        case ballot(question: UInt8, answer: Answer, generation: UInt64, interval: Duration)
    }

    public let key: BeaconKey
    public let mode: BallotMode
    public let voterID: UInt32
    public private(set) var status: Status = .waiting
    public private(set) var advertising: Advertising = .silent
    /// The question the newest accepted STATE frame describes as open, if any.
    public private(set) var question: Question?

    /// Opens frames, checks the poll's key and signatures, and holds back replayed STATE.
    public internal(set) var admission: BeaconAdmission
    private let started: Duration
    private var heardState = false
    private var interval: BeaconInterval = .stop
    private var closed = false
    private var mismatch = false
    /// The answer to the open question, and the ballot advertising it.
    var answer: Answer?
    private var generation: UInt64 = 0
    private var matcher: AckMatcher?
    var acknowledged = false
    /// Answers of questions that closed or gave way to another, kept until they fit again
    /// (BeaconFollowerKeeping.swift).
    var kept = KeptAnswers()
    /// Whether the frames this follower took are contradicted by newer ones (BeaconFollowerFreshness.swift).
    var freshness = FreshnessWatch()
    /// How many times the follower dropped the STATE frames it took because authentic STATE frames it
    /// refused went on contradicting them while its ballot was not acknowledged, and listened again for
    /// the newest (BeaconFollowerFreshness.swift).
    public internal(set) var relistens = 0
    /// An answer given while no question was open: applied to the next question that opens.
    private var pending: Answer?
    private var text: BeaconTextAssembler?
    private var refused: Answer?
    /// When the last authentic frame was heard, or the last back-off began; and the doublings since
    /// the last admitted STATE.
    private var silentSince: Duration
    private var doublings = 0

    /// `publicKey`: the poll's beacon key when already checked against the join code (``BeaconAdmission``).
    public init(key: BeaconKey, mode: BallotMode, voterID: UInt32, now: Duration, publicKey: BeaconPublicKey? = nil,
                anchors: BeaconAnchorVerdicts? = nil) {
        self.key = key
        self.mode = mode
        self.voterID = voterID
        admission = BeaconAdmission(key: key, publicKey: publicKey, anchors: anchors)
        started = now
        silentSince = now
    }

    /// Manufacturer data (after the company ID) heard at `now`. Anything ``BeaconAdmission`` does not
    /// take (not an authentic frame of this poll, a forged signature, a tagged frame once the poll's key
    /// is known, a STATE the replay guard holds back) changes nothing.
    public mutating func hear(_ bytes: [UInt8], at now: Duration) {
        let frame: BeaconFrame
        switch admission.admit(bytes, at: now) {
        case .refused: return tick(at: now)
        case .heard: silentSince = max(silentSince, now); return
        case .heldBack(let s):
            // Authentic, but the replay guard holds it back: while it contradicts what was taken, the
            // follower may listen again (BeaconFollowerFreshness.swift).
            silentSince = max(silentSince, now)
            if !relistening(s, at: now) { refused(s, at: now) }
            return
        case .taken(let f): frame = f
        }
        silentSince = max(silentSince, now)
        switch frame {
        case .state(let s):
            guard !relistening(s, at: now) else { return }
            follow(s)
        case .acks(let a):
            guard let matcher, !acknowledged, phase == .open, matcher.isAcknowledged(by: a) else { return }
            acknowledged = true
            freshness.confirmed()
            update()
        case .text(let page):
            guard var t = text, question?.text == nil else { return }
            if case .complete(let qt) = t.add(page, key: key) {
                question?.text = qt
                text = nil
                textArrived()
            } else {
                text = t
            }
        }
    }

    /// The passage of time: after ``noBeaconAfter`` without an authentic STATE, ``Status/noBeacon``;
    /// while sending, after ``silenceBeforeBackoff`` without an authentic frame, a longer interval.
    public mutating func tick(at now: Duration) {
        endRelistening(at: now)
        if !heardState, status == .waiting, now - started >= Self.noBeaconAfter { status = .noBeacon }
        guard case .sending = status, now - silentSince >= Self.silenceBeforeBackoff else { return }
        silentSince = now
        if case .ballot(_, _, _, let current) = advertising, current < Self.longestBackoff {
            doublings += 1
            update()
        }
    }

    /// Whether ``tick(at:)`` can change anything now: before the first STATE (``Status/noBeacon``), while
    /// sending (backing off) and while listening again. Otherwise only frames and answers change the
    /// follower, and its caller needs no clock: a voter whose answer was counted, or whose question
    /// closed, wakes for nothing but what it hears.
    public var awaitsTime: Bool {
        if freshness.relistenUntil != nil { return true }
        if case .sending = status { return true }
        return !heardState && status == .waiting
    }

    /// The student's answer. Checked against the open question; while none is open it waits for the next.
    public mutating func answer(_ a: Answer) {
        guard let q = question, phase == .open, !q.awaitsForm else {
            pending = a
            return
        }
        guard Self.offers(q, a) else {
            status = .notOffered(a)
            return
        }
        guard a != answer else { return update() }
        kept.drop(q.number)
        answer = a
        newBallot()
        update()
    }

    /// An answer the caller's reading of the open question refused (``AnswerForm``): shown as not
    /// offered; the ballot on the air stays.
    public mutating func refuse(_ a: Answer) {
        if phase == .open, !mismatch { status = .notOffered(a) }
    }

    /// The caller sealed the ballot of `generation` with `sequence`: its acknowledgement is now looked for.
    public mutating func sealed(generation g: UInt64, sequence: UInt16) {
        guard g == generation, let q = question, answer != nil else { return }
        matcher = AckMatcher(key: key, voterID: voterID, question: q.number, sequence: sequence)
    }

    /// Whether an open question of the beacon offers `a` (the check the tally makes; a numeric
    /// question's range comes with its text block, version 4).
    public static func offers(_ q: BeaconQuestion, _ a: Answer) -> Bool {
        a.isOffered(kinds: [q.kind.answerKind], options: Int(q.options), range: nil)
    }

    /// The same with the question's text, which holds a numeric question's range.
    public static func offers(_ q: Question, _ a: Answer) -> Bool {
        a.isOffered(kinds: [q.beacon.kind.answerKind], options: Int(q.beacon.options), range: q.text?.numeric?.range)
    }

    /// The question's text arrived: shown, and an answer that waited for a numeric question's form is
    /// checked now.
    private mutating func textArrived() {
        guard let q = question else { return }
        if answer == nil { status = .open(q) }
        guard phase == .open, !mismatch, answer == nil, let p = pending else { return }
        pending = nil
        if Self.offers(q, p) {
            answer = p
            newBallot()
            update()
        } else {
            status = .notOffered(p)
        }
    }

    enum Phase { case none, open, questionClosed, closed }
    var phase: Phase = .none
    private var pollMode: BallotMode = .anonymous

    mutating func newBallot() {
        generation &+= 1
        matcher = nil
        acknowledged = false
    }

    mutating func follow(_ s: BeaconState) {
        heardState = true
        interval = s.interval
        doublings = 0
        mismatch = s.mode != mode
        pollMode = s.mode
        switch s.poll {
        case .closed:
            phase = .closed
            keepAnswer()
            question = nil
            newBallot()
        case .questionClosed(let q):
            phase = .questionClosed
            keepAnswer()
            if question?.number != q.number { question = Question(beacon: q, text: nil) }
            newBallot()
        case .open(let q):
            if phase != .open || question?.beacon != q {
                // A new question, the same one reopened, or the same number with other options: the answer
                // kept for it goes on the air again if it fits; otherwise the student answers again.
                keepAnswer()
                question = Question(beacon: q, text: nil)
                text = BeaconTextAssembler(question: q)
                answer = kept.take(for: q)
                newBallot()
                phase = .open
                if let p = pending, question?.awaitsForm != true {
                    pending = nil
                    if let nq = question, Self.offers(nq, p) { answer = p; newBallot() } else { refused = p }
                }
            }
        }
        update()
        if let r = refused, answer == nil, !mismatch, phase == .open { status = .notOffered(r) }
        refused = nil
    }

    /// Recomputes ``advertising`` and ``status`` from the phase, the answer and its acknowledgement.
    private mutating func update() {
        if mismatch {
            advertising = .silent
            status = .rosterMismatch(poll: pollMode)
            return
        }
        switch phase {
        case .none:
            advertising = .silent
        case .closed:
            advertising = .silent
            status = .pollClosed
        case .questionClosed:
            advertising = .silent
            status = .questionClosed(question?.number ?? 0)
        case .open:
            guard let q = question else { return }
            guard let a = answer else {
                advertising = .silent
                status = .open(q)
                return
            }
            guard let ms = interval.milliseconds else {
                // The tally asks for silence (interval stop) though the question is open.
                advertising = .silent
                status = .questionClosed(q.number)
                return
            }
            if acknowledged {
                // An acknowledgement slows the ballot to the keep-alive and never stops it.
                advertising = .ballot(question: q.number, answer: a, generation: generation, interval: BeaconInterval.keepAlive)
                status = .counted(a)
            } else {
                // Backing off (``silenceBeforeBackoff``): twice the STATE's interval per silence, at most
                // ``longestBackoff`` (or the STATE's, when longer).
                let asked = Duration.milliseconds(ms)
                let backedOff = max(asked, min(asked * (1 << min(doublings, 16)), Self.longestBackoff))
                advertising = .ballot(question: q.number, answer: a, generation: generation, interval: backedOff)
                status = .sending(a)
            }
        }
    }
}
