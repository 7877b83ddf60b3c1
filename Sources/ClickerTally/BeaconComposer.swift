import ClickerTransport
import ClickerWire

/// The question a tally's beacon describes: what a STATE frame carries, and the texts its TEXT pages carry.
public struct BeaconQuestionInfo: Sendable, Hashable {
    public var number: UInt8
    public var kind: QuestionKind
    /// Options A… offered: 1…8 for single, multi and ranked; 0 for true/false and numeric.
    public var options: UInt8
    /// The title and option texts, when the question's definition has any.
    public var text: QuestionText?

    public init(number: UInt8, kind: QuestionKind, options: UInt8, text: QuestionText? = nil) {
        self.number = number
        self.kind = kind
        self.options = kind.hasOptions ? options : 0
        self.text = text
    }
}

/// Where the poll stands, as the tally tells its voters.
public enum BeaconPhase: Sendable, Hashable {
    case open(BeaconQuestionInfo)
    case questionClosed(BeaconQuestionInfo)
    case closed

    var question: BeaconQuestionInfo? {
        switch self {
        case .open(let q), .questionClosed(let q): q
        case .closed: nil
        }
    }
}

/// Builds what the tally broadcasts (docs/PROTOCOL.md §11.11; its payloads, cadence and rotation:
/// docs/DESIGN.md, "Sending the beacon: this tally") from the poll's state: pure, no I/O,
/// time given by the caller as the poll's counter clock (10 ms ticks since the poll was created).
///
/// One composer per poll. Between two payloads it keeps:
/// - the counter, so that every frame it seals takes a new, higher value;
/// - the acknowledgements in rotation, each with an estimate of how often it has been on air: the
///   radio restarts a replaced payload at its first frame, so a payload replaced every 100 ms sends
///   only its first few frames. The composer credits the frames the previous payload had time to send
///   (one per frame time of the radio) and puts the least-sent first: new fingerprints first (newest
///   first among equals), then those sent least. A fingerprint leaves the rotation once it is older
///   than ``Tuning/ackExposure`` and was sent ``Tuning/minimumSends`` times, or after
///   ``Tuning/maximumAge`` in any case (a voter that missed it keeps sending and is acknowledged again);
/// - the TEXT pages of the question, sealed once, rotated by the same least-sent rule.
///
/// STATE goes out by time on the air, across payloads: the radio says what a frame costs on its air
/// (``ClickerTransport/BroadcastCapabilities/frameTime(interval:)``: one advertising event on a
/// controller that rotates the frames, 150 ms or more through bluetoothd), and STATE frames are placed
/// at most ``Tuning/stateSpacing`` apart, and at most ``Tuning/stateEvery`` frames apart where frames
/// are short. A payload that replaces one whose STATE says the same places its first STATE where the
/// previous one's left off (acknowledgements first); one whose STATE says something new (phase,
/// question, interval) starts with it. Every payload holds a STATE frame.
///
/// Where the radio reports the frames it took (BlueZ, where bluetoothd confirms each frame change:
/// ``taken(_:at:)``), nothing is estimated: a STATE is on the air when it is reported taken, an
/// acknowledgement or a TEXT page is sent once more each time its frame is, and the frame time the radio
/// reports (the stack's latency plus its dwell) is the one STATE is placed by. Where frames take longer than the spacing, STATE takes every
/// other frame (not every one): the rest carry the acknowledgements and the question's text.
public struct BeaconComposer: Sendable {
    /// The knobs of the rotation.
    public struct Tuning: Sendable, Hashable {
        /// Broadcast interval while there is something to tell quickly (acknowledgements in rotation,
        /// a phase changed lately), and otherwise.
        public var fastInterval: Duration = .milliseconds(20)
        public var slowInterval: Duration = .milliseconds(100)
        /// How long after a change of phase the broadcast stays fast.
        public var fastAfterChange: Duration = .seconds(5)
        /// How long a fingerprint stays in rotation at least, and the sends it needs before it may leave.
        public var ackExposure: Duration = .seconds(1)
        public var minimumSends = 3
        /// A fingerprint leaves the rotation after this long whatever its sends.
        public var maximumAge: Duration = .seconds(3)
        /// The longest time on the air between two STATE frames while the radio broadcasts: a voter that
        /// starts following needs one (PROTOCOL.md §11.11: at most 1 s apart), and `clicker-vote` says
        /// "no beacon" after 5 s without (DESIGN.md, "Following the beacon: this voter").
        /// Through bluetoothd, whose frames hold the air 150 ms or more, STATE takes every third frame (or
        /// every other, where bluetoothd reports frames slower than 250 ms).
        public var stateSpacing: Duration = .milliseconds(500)
        /// At most this many frames between two STATE frames (where frames are short, this comes first:
        /// 250 ms at 20 ms + advDelay). Replaced every 100 ms at 20 ms, a payload sends about 4 frames:
        /// when each one opened with STATE, a quarter of the frames went to it, and 98.2 % of 1,000
        /// voters saw their acknowledgement within a second; one frame in ten, 99.6 % (TimeToCollect
        /// `--beacon`, 20 seeds). Voters need STATE only for a change, which goes first.
        public var stateEvery = 10
        /// Most frames in one payload.
        public var maxFrames = 64

        public init() {}
    }

    public let key: BeaconKey
    public let mode: BallotMode
    public let capabilities: BroadcastCapabilities
    public let tuning: Tuning
    /// The poll's beacon key pair (version 4): with extended advertising every frame is signed; nil for
    /// a poll without one (created before version 4, or with a join code given by hand).
    public let signer: BeaconSigner?
    /// Whether the frames are signed (a signer, and a budget that holds a signed STATE).
    public var signs: Bool { signer != nil && frameBudget >= BeaconFormat.signedStateLength && key.keyMask != nil }
    /// Whether STATE and ACKS frames leave ``compose(_:interval:at:)`` with their signatures still to
    /// make (64 zero bytes): the caller signs them off the path that takes the reports
    /// (``BeaconSigning/sign(_:signer:voteID:)``). TEXT pages are signed when the question changes.
    public let deferSignatures: Bool
    /// The bytes one frame may take: 24 with legacy advertising (the host may add Flags), up to 244
    /// with extended advertising (docs/PROTOCOL.md §11.1), never more than the radio takes.
    public let frameBudget: Int
    /// The last counter sealed into a frame.
    public private(set) var counter: UInt32?
    /// The STATE frame of the last payload.
    public private(set) var lastState: [UInt8]?

    struct Ack {
        var fingerprint: AckFingerprint
        var countedAt: UInt32
        var sends: Int
        /// Sent again for a ballot acknowledged before (its voter may or may not have missed it): goes
        /// after the acknowledgements sent for the first time, and after TEXT pages not yet sent
        /// ``Tuning/minimumSends`` times.
        var again = false
    }

    struct Text {
        var digest: UInt32
        var strongDigest: [UInt8]
        var pages: [[UInt8]]
        var sends: [Int]
    }

    enum Item: Hashable {
        case state
        case acks([UInt32])
        case text(Int)
    }

    var phase: BeaconPhase?
    var phaseChangedAt: UInt32 = 0
    var acks: [Ack] = []
    var ackQuestion: UInt8?
    var text: Text?
    /// The last payload: its frames, when it was composed, and each frame's time on the air (ms).
    var previous: (items: [Item], at: UInt32, frameTime: Double)?
    /// When the last STATE frame credited as sent went on the air (ms on the counter clock).
    var stateOnAirAt: Double?
    /// What the last payload's STATE said (phase and interval asked).
    var stateSaid: (phase: BeaconPhase, interval: BeaconInterval)?
    /// The frame time the radio reports (ms, a moving average): what it really achieves; nil until the
    /// radio reported a frame it took (``taken(_:at:)``).
    var takenFrameTime: Double?
    /// Whether the radio reports the frames it took: sends are then counted from its reports, not
    /// estimated from the frame time.
    var reportsTaken: Bool { takenFrameTime != nil }
    /// The counter of the first STATE frame that said what the last one says: a STATE taken with a lower
    /// counter said something older, and does not count as this one on the air.
    var stateSaidFrom: UInt32 = 0

    public init(key: BeaconKey, mode: BallotMode, capabilities: BroadcastCapabilities, tuning: Tuning = Tuning(),
                signer: BeaconSigner? = nil, deferSignatures: Bool = false) {
        self.key = key
        self.mode = mode
        self.capabilities = capabilities
        self.tuning = tuning
        self.signer = signer
        self.deferSignatures = deferSignatures
        let cap = capabilities.extended ? BeaconFormat.extendedBudgetWithFlags : BeaconFormat.legacyBudgetWithFlags
        frameBudget = max(BeaconFormat.stateLength, min(cap, capabilities.maxFrameLength))
    }

    /// Fingerprints one ACKS frame carries in this composer's budget (3 legacy, 58 extended, 42 signed).
    public var fingerprintsPerFrame: Int {
        max(1, signs ? BeaconFormat.signedFingerprints(fitting: frameBudget) : BeaconFormat.fingerprints(fitting: frameBudget))
    }

    /// Seals `frame`, signed when this composer signs (now, or with a placeholder when deferred).
    func seal(_ frame: BeaconFrame, deferring: Bool) -> [UInt8]? {
        guard signs, let signer else { return try? BeaconCodec.seal(frame, key: key) }
        guard deferring else { return try? BeaconCodec.seal(frame, key: key, signer: signer) }
        return (try? BeaconCodec.draft(frame, key: key)).map { $0 + BeaconSigning.placeholder }
    }

    /// Fingerprints in rotation now.
    public var acknowledgementsInRotation: Int { acks.count }

    /// The counter for a frame sealed at `now`: `now`, or the last value + 1 when that is not higher.
    mutating func nextCounter(_ now: UInt32) -> UInt32 {
        let c = counter.map { $0 < now ? now : ($0 == .max ? .max : $0 + 1) } ?? now
        counter = c
        return c
    }

    /// Adds acknowledgements of ballots of `question` counted at `now` (oldest first), and `again` those of
    /// ballots acknowledged before and heard loud since (their voters may have missed them). Fingerprints
    /// of another question than the one in rotation replace the rotation; a fingerprint already in
    /// rotation is put back as new.
    public mutating func acknowledge(_ fingerprints: some Sequence<AckFingerprint>, again: some Sequence<AckFingerprint> = [],
                                     question: UInt8, at now: UInt32) {
        if ackQuestion != question {
            acks.removeAll()
            ackQuestion = question
        }
        for (f, isAgain) in fingerprints.lazy.map({ ($0, false) }) + again.lazy.map({ ($0, true) }) {
            acks.removeAll { $0.fingerprint == f }
            acks.append(Ack(fingerprint: f, countedAt: now, sends: 0, again: isAgain))
        }
    }

    /// The payload to broadcast at `now` for `phase`, with `interval` as the STATE frame's interval
    /// (ignored, `stop`, unless a question is open). Seals a fresh STATE frame; drops from the rotation
    /// what has been on air long enough.
    public mutating func compose(_ phase: BeaconPhase, interval: BeaconInterval, at now: UInt32) -> BroadcastPayload {
        credit(at: now)
        if self.phase != phase {
            if self.phase?.question?.text != phase.question?.text || self.phase?.question?.number != phase.question?.number {
                text = phase.question.flatMap { makeText($0, at: now) }
            }
            if case .open(let q) = phase, ackQuestion != q.number { acks.removeAll(); ackQuestion = q.number }
            if case .open = phase {} else { acks.removeAll() }
            self.phase = phase
            phaseChangedAt = now
        }
        expire(at: now)
        // The least-sent first: acknowledgements (newest first among equals), then text pages. An
        // acknowledgement sent again counts ``Tuning/minimumSends`` more sends than it has.
        var order: [(sends: Int, rank: Int, item: Item)] = []
        let k = fingerprintsPerFrame
        for again in [false, true] {
            let sortedAcks = acks.enumerated().filter { $0.element.again == again }.sorted { a, b in
                a.element.sends != b.element.sends ? a.element.sends < b.element.sends
                    : (a.element.countedAt != b.element.countedAt ? a.element.countedAt > b.element.countedAt : a.offset > b.offset)
            }.map(\.element)
            var i = 0
            while i < sortedAcks.count {
                let page = sortedAcks[i..<min(i + k, sortedAcks.count)]
                let sends = (page.map(\.sends).min() ?? 0) + (again ? tuning.minimumSends : 0)
                order.append((sends, order.count, .acks(page.map(\.fingerprint.value))))
                i += k
            }
        }
        if let t = text {
            for (n, s) in t.sends.enumerated() { order.append((s, order.count, .text(n))) }
        }
        order.sort { $0.sends != $1.sends ? $0.sends < $1.sends : $0.rank < $1.rank }
        let fast = !acks.isEmpty || ticks(now, since: phaseChangedAt) < Self.ticks(tuning.fastAfterChange)
        let broadcastInterval = fast ? tuning.fastInterval : tuning.slowInterval
        let frameTime = max(Self.milliseconds(capabilities.frameTime(interval: broadcastInterval)), takenFrameTime ?? 0)
        // STATE where its spacing falls: first when it says something new, else at the last frame that
        // starts within the spacing of the last STATE on air (frame k starts k frame times from now), then
        // every `every` frames; and at least once, last, in a payload too short to reach it.
        let every = stateEvery(frameTime: frameTime, othersWaiting: !order.isEmpty)
        let asked = Self.asked(phase, interval)
        var first = 0
        if stateSaid?.phase == phase, stateSaid?.interval == asked, let last = stateOnAirAt {
            let due = last + Double(every) * frameTime - Double(now) * 10
            first = due > 0 ? Int(min(Double(tuning.maxFrames), (due / frameTime).rounded(.down))) : 0
        }
        let news = stateSaid.map { $0.phase != phase || $0.interval != asked } ?? true
        stateSaid = (phase, asked)
        var items: [Item] = []
        var rest = order.makeIterator()
        while items.count < tuning.maxFrames {
            if items.count >= first, (items.count - first) % every == 0 { items.append(.state); continue }
            guard let next = rest.next() else { break }
            items.append(next.item)
        }
        if !items.contains(.state) { items.append(.state) }
        let question = ackQuestion ?? 0
        var frames: [[UInt8]] = []
        let state = sealState(phase, interval: interval, at: now)
        if news, let c = counter { stateSaidFrom = c }
        lastState = state
        for item in items {
            switch item {
            case .state: frames.append(state)
            case .acks(let values):
                let acks = BeaconAcks(counter: nextCounter(now), question: question, fingerprints: values.map(AckFingerprint.init))
                if let bytes = seal(.acks(acks), deferring: deferSignatures) { frames.append(bytes) }
            case .text(let n):
                if let page = text?.pages[n] { frames.append(page) }
            }
        }
        previous = (items, now, frameTime)
        return BroadcastPayload(companyID: BallotFormat.companyID, frames: frames, interval: broadcastInterval)
    }

    /// Frames between two STATE frames for frames of `frameTime` ms: as many as fit in
    /// ``Tuning/stateSpacing``, at most ``Tuning/stateEvery``, at least 1; at least 2 while other frames wait
    /// (`othersWaiting`): where frames are so slow that STATE alone would fill the spacing, every other
    /// frame still carries acknowledgements or the question's text, without which no voter is ever shown
    /// *counted* or the question's title.
    func stateEvery(frameTime: Double, othersWaiting: Bool = false) -> Int {
        let fit = (Self.milliseconds(tuning.stateSpacing) / max(1, frameTime)).rounded(.down)
        return max(othersWaiting ? 2 : 1, min(tuning.stateEvery, Int(min(Double(tuning.maxFrames), fit))))
    }

    /// `d` in milliseconds, to the microsecond (whole milliseconds exactly: 25 ms is 25, not 25.000000000000004,
    /// so that a spacing of 10 frames of 25 ms is 10 frames).
    static func milliseconds(_ d: Duration) -> Double {
        let (s, atto) = d.components
        return Double(s) * 1000 + Double(atto / 1_000_000_000_000) / 1000
    }

    mutating func expire(at now: UInt32) {
        let exposure = Self.ticks(tuning.ackExposure), maximum = Self.ticks(tuning.maximumAge)
        let minimumSends = tuning.minimumSends
        acks.removeAll { a in
            let age = now >= a.countedAt ? now - a.countedAt : 0
            return age >= maximum || (age >= exposure && a.sends >= minimumSends)
        }
    }

    func ticks(_ now: UInt32, since then: UInt32) -> UInt32 { now >= then ? now - then : 0 }

    static func ticks(_ d: Duration) -> UInt32 {
        let (s, atto) = d.components
        let t = s * 100 + atto / 10_000_000_000_000_000
        return UInt32(clamping: max(0, t))
    }

    mutating func sealState(_ phase: BeaconPhase, interval: BeaconInterval, at now: UInt32) -> [UInt8] {
        let poll: BeaconPoll
        switch phase {
        case .open(let q): poll = .open(beaconQuestion(q))
        case .questionClosed(let q): poll = .questionClosed(beaconQuestion(q))
        case .closed: poll = .closed
        }
        let hidden = signs ? signer.flatMap { key.hide($0.publicKey) } : nil
        let s = BeaconState(voteID: key.voteID, counter: nextCounter(now), mode: mode, poll: poll,
                            interval: Self.asked(phase, interval), hiddenKey: hidden)
        if let bytes = seal(.state(s), deferring: deferSignatures) { return bytes }
        // A question whose options the kind does not allow: sent as closed rather than not at all.
        return seal(.state(BeaconState(voteID: key.voteID, counter: s.counter, mode: mode, poll: .closed, interval: .stop,
                                       hiddenKey: hidden)), deferring: deferSignatures) ?? []
    }

    /// The interval a STATE frame of `phase` asks for: `interval` while a question is open, else `stop`.
    static func asked(_ phase: BeaconPhase, _ interval: BeaconInterval) -> BeaconInterval {
        if case .open = phase { interval } else { .stop }
    }

    func beaconQuestion(_ q: BeaconQuestionInfo) -> BeaconQuestion {
        BeaconQuestion(number: q.number, kind: q.kind, options: q.options, textDigest: text?.digest,
                       strongDigest: signs ? text?.strongDigest : nil)
    }

    mutating func makeText(_ q: BeaconQuestionInfo, at now: UInt32) -> Text? {
        let length = signs ? BeaconFormat.signedChunkLength(fitting: frameBudget) : BeaconFormat.chunkLength(fitting: frameBudget)
        guard let t = q.text, let block = t.block, let chunks = QuestionText.chunks(block, chunkLength: length) else { return nil }
        let strong = key.strongTextDigest(block)
        let digest = key.textDigest(block)
        var pages: [[UInt8]] = []
        for (i, c) in chunks.enumerated() {
            let page = BeaconTextPage(counter: nextCounter(now), digest: digest, index: UInt8(i), count: UInt8(chunks.count), chunk: c)
            guard let bytes = seal(.text(page), deferring: false) else { return nil }
            pages.append(bytes)
        }
        return Text(digest: digest, strongDigest: strong, pages: pages, sends: [Int](repeating: 0, count: pages.count))
    }
}
