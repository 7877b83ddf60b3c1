import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import XCTest

/// The tally's beacon composer (docs/DESIGN.md, "Sending the beacon: this tally"): properties that hold whatever the vectors.
final class BeaconComposerTests: XCTestCase {
    let poll = TestPoll()
    var key: BeaconKey { BeaconKey(poll.secret) }
    static let extended = BroadcastCapabilities(maxFrameLength: 251, extended: true)
    let question = BeaconQuestionInfo(number: 2, kind: .single, options: 4,
                                      text: QuestionText(title: "Which planet is largest?",
                                                         options: ["Mercury", "Venus", "Jupiter ♃", "Mars"]))
    let interval = BeaconInterval(milliseconds: 100)!

    /// A radio that sends one frame per event, `period` apart, and restarts a replaced payload at its
    /// first frame: what the voters could hear.
    struct Radio {
        var payload: BroadcastPayload?
        var next = 0
        var sent: [(tick: UInt32, frame: [UInt8])] = []
        mutating func replace(_ p: BroadcastPayload) { payload = p; next = 0 }
        mutating func send(at tick: UInt32) {
            guard let p = payload, !p.frames.isEmpty else { return }
            sent.append((tick, p.frames[next % p.frames.count]))
            next += 1
        }
    }

    /// The ACKS frames of `p`, in order.
    func acks(_ p: BroadcastPayload) -> [BeaconAcks] {
        p.frames.compactMap { if case .success(.acks(let a)) = BeaconCodec.open($0, key: key) { a } else { nil } }
    }

    func fingerprint(_ voter: UInt32, _ q: UInt8 = 2, _ seq: UInt16 = 1) -> AckFingerprint {
        key.fingerprint(voterID: voter, question: q, sequence: seq)
    }

    /// Runs `seconds` of a poll in which `perSecond` ballots are counted, spread evenly; the payload is
    /// composed every 100 ms (as the tally does while ballots are counted) and the radio sends a frame
    /// every 25 ms (20 ms + mean advDelay). Returns when each fingerprint was counted and the frames sent.
    func run(_ composer: inout BeaconComposer, perSecond: Int, seconds: Int, acksFirst: UInt32 = 0)
        -> (counted: [AckFingerprint: UInt32], radio: Radio, payloads: [BroadcastPayload]) {
        var counted: [AckFingerprint: UInt32] = [:]
        var radio = Radio()
        var payloads: [BroadcastPayload] = []
        var voter: UInt32 = 1
        var owed = 0.0
        for tick in UInt32(0)..<UInt32(100 * seconds) {
            owed += Double(perSecond) / 100
            var batch: [AckFingerprint] = []
            while owed >= 1 {
                let f = fingerprint(voter)
                batch.append(f)
                counted[f] = tick
                voter += 1
                owed -= 1
            }
            if !batch.isEmpty { composer.acknowledge(batch, question: 2, at: tick) }
            if tick % 10 == 0 {
                let p = composer.compose(.open(question), interval: interval, at: tick + acksFirst)
                payloads.append(p)
                radio.replace(p)
            }
            if tick % 5 == 0 { radio.send(at: tick) }  // 2.5 ticks per frame on average: every 50 ms → 2 frames
            if tick % 5 == 2 { radio.send(at: tick) }
        }
        return (counted, radio, payloads)
    }

    func testEveryFrameOpensWithThePollsKeyAndFitsTheCapability() throws {
        for (caps, budget, perFrame) in [(BroadcastCapabilities.legacy, 24, 3), (Self.extended, 244, 58)] {
            var c = BeaconComposer(key: key, mode: .anonymous, capabilities: caps)
            XCTAssertEqual(c.frameBudget, budget)
            XCTAssertEqual(c.fingerprintsPerFrame, perFrame)
            let (_, _, payloads) = run(&c, perSecond: 200, seconds: 2)
            var kinds = Set<BeaconFrameKind>()
            for p in payloads {
                XCTAssertEqual(p.companyID, BallotFormat.companyID)
                XCTAssertFalse(p.frames.isEmpty)
                for f in p.frames {
                    XCTAssertLessThanOrEqual(f.count, budget)
                    XCTAssertLessThanOrEqual(f.count, caps.maxFrameLength)
                    guard case .success(let frame) = BeaconCodec.open(f, key: key) else {
                        return XCTFail("a frame that does not open with the poll's key: \(f)")
                    }
                    kinds.insert(frame.kind)
                    if case .acks(let a) = frame {
                        XCTAssertLessThanOrEqual(a.fingerprints.count, perFrame)
                        XCTAssertEqual(a.question, 2)
                    }
                }
                // Another join code's key opens none of them.
                let other = BeaconKey(pollSecret(try JoinCode(parsing: "4821-ABCDE-FGHJK")))
                for f in p.frames { XCTAssertNotNil(BeaconCodec.open(f, key: other).failure) }
            }
            XCTAssertEqual(kinds, [.state, .acks, .text])
        }
    }

    func testEveryCountedBallotIsSentWithinASecondOfBeingCounted() {
        // Within each capability's capacity: legacy 3 fingerprints a frame, extended 58.
        for (caps, rate) in [(BroadcastCapabilities.legacy, 25), (Self.extended, 400)] {
            var c = BeaconComposer(key: key, mode: .anonymous, capabilities: caps)
            let (counted, radio, _) = run(&c, perSecond: rate, seconds: 4)
            var firstSent: [AckFingerprint: UInt32] = [:]
            var sends: [AckFingerprint: Int] = [:]
            for (tick, bytes) in radio.sent {
                guard case .success(.acks(let a)) = BeaconCodec.open(bytes, key: key) else { continue }
                for f in a.fingerprints {
                    if firstSent[f] == nil { firstSent[f] = tick }
                    sends[f, default: 0] += 1
                }
            }
            XCTAssertGreaterThan(counted.count, 4 * rate - 2)
            for (f, at) in counted where at < 300 {  // those with a whole second left in the run
                guard let sent = firstSent[f] else { XCTFail("\(f) counted at \(at) never sent (\(caps))"); continue }
                XCTAssertLessThanOrEqual(sent - at, 100, "\(f) counted at tick \(at) first sent at \(sent) (\(caps))")
                XCTAssertGreaterThanOrEqual(sends[f] ?? 0, 2, "\(f) sent once only (\(caps))")
            }
        }
    }

    /// STATE keeps one cadence across payloads replaced faster than it comes round (every 100 ms, about
    /// 4 frames each): one frame in ``BeaconComposer/Tuning/stateEvery`` on air once the rotation
    /// outlasts a payload, so that acknowledgements get the rest (a STATE leading every payload took a
    /// quarter); every payload holds one; a STATE that says something new (interval, phase) leads.
    func testStateKeepsItsCadenceAcrossReplacedPayloadsAndLeadsWhenItChanges() throws {
        for (caps, rate) in [(BroadcastCapabilities.legacy, 25), (Self.extended, 400)] {
            var c = BeaconComposer(key: key, mode: .anonymous, capabilities: caps)
            let every = c.tuning.stateEvery
            XCTAssertGreaterThanOrEqual(every, 8)
            let (_, radio, payloads) = run(&c, perSecond: rate, seconds: 3)
            for p in payloads { XCTAssertNotNil(BeaconCodec.state(in: p, key: key), "a payload without STATE (\(caps))") }
            let isState = radio.sent.map { if case .success(.state) = BeaconCodec.open($0.frame, key: key) { true } else { false } }
            let at = isState.indices.filter { isState[$0] }
            let gaps = zip(at.dropFirst(), at).map { $0 - $1 }
            XCTAssertLessThanOrEqual(gaps.max() ?? .max, every, "STATE at frames \(at) (\(caps))")
            // Once the rotation outlasts a payload (after the first half second, when a payload of STATE,
            // one ACKS frame and the text cycles): STATE at most one frame in ten.
            let steady = isState.dropFirst(20)
            let share = Double(steady.filter { $0 }.count) / Double(steady.count)
            XCTAssertLessThanOrEqual(share, 1 / Double(every) + 0.001, "STATE took \(share) of the frames (\(caps))")
        }
        // A payload replaced 30 ms after one that led with STATE goes on with the cadence (ACKS first);
        // a new interval, then a new phase, lead with a STATE saying it.
        var c = BeaconComposer(key: key, mode: .anonymous, capabilities: .legacy)
        c.acknowledge((1...12).map { fingerprint($0) }, question: 2, at: 0)
        func lead(_ p: BroadcastPayload) -> BeaconFrame? {
            if case .success(let f) = BeaconCodec.open(p.frames[0], key: key) { f } else { nil }
        }
        guard case .state = lead(c.compose(.open(question), interval: interval, at: 1)) else { return XCTFail("the first payload") }
        guard case .acks = lead(c.compose(.open(question), interval: interval, at: 4)) else { return XCTFail("the cadence") }
        let shorter = BeaconInterval(milliseconds: 60)!
        guard case .state(let s) = lead(c.compose(.open(question), interval: shorter, at: 7)) else { return XCTFail("a new interval") }
        XCTAssertEqual(s.interval, shorter)
        guard case .state(let closed) = lead(c.compose(.questionClosed(question), interval: shorter, at: 10)) else {
            return XCTFail("a new phase")
        }
        XCTAssertEqual(closed.poll, .questionClosed(BeaconQuestion(number: 2, kind: .single, options: 4,
                                                                   textDigest: key.textDigest(question.text!.block!))))
    }

    func testNewestFirstAndABallotHeardAgainIsAcknowledgedAgain() throws {
        var c = BeaconComposer(key: key, mode: .anonymous, capabilities: .legacy)
        c.acknowledge([fingerprint(1), fingerprint(2), fingerprint(3)], question: 2, at: 0)
        c.acknowledge([fingerprint(4)], question: 2, at: 5)
        var p = c.compose(.open(question), interval: interval, at: 10)
        guard let first = acks(p).first else { return XCTFail() }
        XCTAssertEqual(first.fingerprints.first, fingerprint(4), "the newest first")
        // Long after, nothing is left in rotation: the payload is STATE and the text.
        p = c.compose(.open(question), interval: interval, at: 1000)
        XCTAssertEqual(c.acknowledgementsInRotation, 0)
        XCTAssertFalse(p.frames.contains { if case .success(.acks) = BeaconCodec.open($0, key: key) { true } else { false } })
        XCTAssertEqual(p.interval, c.tuning.slowInterval, "nothing to tell quickly: the broadcast slows down")
        // Heard again (its voter missed the acknowledgement): back in rotation, first.
        c.acknowledge([fingerprint(2)], question: 2, at: 1001)
        p = c.compose(.open(question), interval: interval, at: 1002)
        guard let again = acks(p).first else { return XCTFail() }
        XCTAssertEqual(again.fingerprints, [fingerprint(2)])
        XCTAssertEqual(p.interval, c.tuning.fastInterval)
    }

    func testCountersStrictlyIncreaseAcrossPayloads() {
        var c = BeaconComposer(key: key, mode: .anonymous, capabilities: .legacy)
        var last: UInt32?
        var now: UInt32 = 50
        for step in 0..<60 {
            c.acknowledge((0..<(step % 7)).map { fingerprint(UInt32(step * 10 + $0)) }, question: 2, at: now)
            // The clock stands still, or even goes back, for some payloads: counters still rise.
            if step % 3 == 0 { now += 10 } else if step % 5 == 0 { now -= 20 }
            let phase: BeaconPhase = step < 40 ? .open(question) : (step < 50 ? .questionClosed(question) : .closed)
            let p = c.compose(phase, interval: interval, at: now)
            var counters: [UInt32] = []
            for f in p.frames {
                guard case .success(let frame) = BeaconCodec.open(f, key: key) else { return XCTFail() }
                if case .text = frame { continue }  // sealed once per question, before
                if case .state = frame { continue }
                counters.append(frame.counter)
            }
            // The STATE frame is sealed first (wherever it goes in the payload), the ACKS frames after it.
            guard let state = BeaconCodec.state(in: p, key: key)?.counter else { return XCTFail() }
            if let last { XCTAssertGreaterThan(state, last, "payload \(step)") }
            XCTAssertTrue(counters.allSatisfy { $0 > state }, "payload \(step)")
            XCTAssertEqual(Set(counters).count, counters.count)
            last = counters.max() ?? state
            XCTAssertEqual(c.counter, last)
        }
    }

    func testPhasesAndIntervals() throws {
        var c = BeaconComposer(key: key, mode: .roster, capabilities: .legacy)
        func state(_ p: BroadcastPayload) throws -> BeaconState {
            guard let s = BeaconCodec.state(in: p, key: key) else { throw BeaconRejection.badTag }
            return s
        }
        var s = try state(c.compose(.open(question), interval: interval, at: 1))
        XCTAssertEqual(s.mode, .roster)
        guard case .open(let q) = s.poll else { return XCTFail() }
        XCTAssertEqual(q.number, 2)
        XCTAssertEqual(q.kind, .single)
        XCTAssertEqual(q.options, 4)
        XCTAssertEqual(q.textDigest, key.textDigest(question.text!.block!))
        XCTAssertEqual(s.interval, interval)
        s = try state(c.compose(.questionClosed(question), interval: interval, at: 2))
        XCTAssertEqual(s.interval, .stop)
        guard case .questionClosed = s.poll else { return XCTFail() }
        let closed = c.compose(.closed, interval: interval, at: 3)
        s = try state(closed)
        XCTAssertEqual(s.poll, .closed)
        XCTAssertEqual(s.interval, .stop)
        XCTAssertEqual(closed.frames.count, 1, "a closed poll sends STATE alone")
        XCTAssertEqual(closed.interval, c.tuning.fastInterval, "a change is told quickly")
        // A question without text: no TEXT pages, no digest.
        let numeric = BeaconQuestionInfo(number: 3, kind: .numeric, options: 7)
        let p = c.compose(.open(numeric), interval: interval, at: 4)
        s = try state(p)
        XCTAssertEqual(s.poll, .open(BeaconQuestion(number: 3, kind: .numeric, options: 0)))
        XCTAssertEqual(p.frames.count, 1)
    }

    func testTextPagesReassembleToTheQuestionsText() {
        for caps in [BroadcastCapabilities.legacy, Self.extended] {
            var c = BeaconComposer(key: key, mode: .anonymous, capabilities: caps)
            let p = c.compose(.open(question), interval: interval, at: 7)
            guard let s = BeaconCodec.state(in: p, key: key), case .open(let q) = s.poll, let digest = q.textDigest else { return XCTFail() }
            var assembler = BeaconTextAssembler(digest: digest)
            var result: QuestionText?
            for f in p.frames {
                guard case .success(.text(let page)) = BeaconCodec.open(f, key: key) else { continue }
                if case .complete(let t) = assembler.add(page, key: key) { result = t }
            }
            XCTAssertEqual(result, question.text, "\(caps)")
        }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let f) = self { return f }
        return nil
    }
}
