import ClickerTransport
import ClickerWire
import Voter
import XCTest

/// A voter following the beacon (docs/PROTOCOL.md §11.10): frames are sealed here with
/// ``BeaconCodec`` and the poll's key, and fed to the pure ``BeaconFollower`` with a test clock.
final class BeaconFollowerTests: XCTestCase {
    static let voteID: UInt16 = 0x4821
    // Test constants: 64 bytes of key material each, same vote ID (another join code of the same vote ID).
    let key = BeaconKey(keyMaterial: (0..<64).map { UInt8($0) }, voteID: voteID)!
    let otherKey = BeaconKey(keyMaterial: (0..<64).map { UInt8(255 - $0) }, voteID: voteID)!
    let voterID: UInt32 = 0xCAFE_F00D

    var counter: UInt32 = 100

    func q(_ n: UInt8, _ kind: QuestionKind = .single, _ options: UInt8 = 4, digest: UInt32? = nil) -> BeaconQuestion {
        BeaconQuestion(number: n, kind: kind, options: kind.hasOptions ? options : 0, textDigest: digest)
    }

    func state(_ poll: BeaconPoll, interval ms: Int? = 100, mode: BallotMode = .anonymous,
               key k: BeaconKey? = nil, counter c: UInt32? = nil) -> [UInt8] {
        counter += 1
        let interval = ms.flatMap { BeaconInterval(milliseconds: $0) } ?? .stop
        let s = BeaconState(voteID: Self.voteID, counter: c ?? counter, mode: mode, poll: poll, interval: interval)
        return try! BeaconCodec.seal(s, key: k ?? key)  // valid by construction
    }

    func acks(_ question: UInt8, _ fps: [AckFingerprint], key k: BeaconKey? = nil) -> [UInt8] {
        counter += 1
        return try! BeaconCodec.seal(.acks(BeaconAcks(counter: counter, question: question, fingerprints: fps)), key: k ?? key)
    }

    func follower(at t: Duration = .zero) -> BeaconFollower {
        BeaconFollower(key: key, mode: .anonymous, voterID: voterID, now: t)
    }

    /// Seals the ballot the follower asks for (as the service does) with `sequence`; returns its fingerprint.
    @discardableResult
    func seal(_ f: inout BeaconFollower, sequence: UInt16) -> AckFingerprint? {
        guard case .ballot(let question, _, let generation, _) = f.advertising else { return nil }
        f.sealed(generation: generation, sequence: sequence)
        return key.fingerprint(voterID: voterID, question: question, sequence: sequence)
    }

    func testFollowsTheQuestionAndSlowsToKeepAliveWhenCounted() throws {
        var f = follower()
        XCTAssertEqual(f.status, .waiting)
        f.hear(state(.open(q(2))), at: .seconds(1))
        XCTAssertEqual(f.status, .open(.init(beacon: q(2), text: nil)))
        XCTAssertEqual(f.advertising, .silent)
        f.answer(.choice(1))
        XCTAssertEqual(f.status, .sending(.choice(1)))
        guard case .ballot(2, .choice(1), _, .milliseconds(100)) = f.advertising else { return XCTFail("\(f.advertising)") }
        let fp = try XCTUnwrap(seal(&f, sequence: 7))
        f.hear(acks(2, [AckFingerprint(value: fp.value ^ 1), fp]), at: .seconds(2))
        XCTAssertEqual(f.status, .counted(.choice(1)))
        guard case .ballot(2, .choice(1), _, BeaconInterval.keepAlive) = f.advertising else { return XCTFail("\(f.advertising)") }
        // The next question: shown, silent until answered, then answered again.
        f.hear(state(.questionClosed(q(2)), interval: nil), at: .seconds(3))
        XCTAssertEqual(f.status, .questionClosed(2))
        XCTAssertEqual(f.advertising, .silent)
        f.hear(state(.open(q(3, .truefalse))), at: .seconds(4))
        XCTAssertEqual(f.status, .open(.init(beacon: q(3, .truefalse), text: nil)))
        XCTAssertEqual(f.advertising, .silent)
        f.answer(.choice(0))
        XCTAssertEqual(f.status, .notOffered(.choice(0)))
        XCTAssertEqual(f.advertising, .silent)
        f.answer(.trueFalse(true))
        guard case .ballot(3, .trueFalse(true), _, .milliseconds(100)) = f.advertising else { return XCTFail("\(f.advertising)") }
    }

    func testAssemblesTheQuestionText() throws {
        let text = QuestionText(title: "Capital of France?", options: ["Paris", "Lyon"])
        let block = try XCTUnwrap(text.block)
        let digest = key.textDigest(block)
        let pages = try XCTUnwrap(QuestionText.chunks(block, chunkLength: 8))
        var f = follower()
        f.hear(state(.open(q(1, .single, 2, digest: digest))), at: .seconds(1))
        for (i, chunk) in pages.enumerated() {
            counter += 1
            let page = BeaconTextPage(counter: counter, digest: digest, index: UInt8(i), count: UInt8(pages.count), chunk: chunk)
            f.hear(try BeaconCodec.seal(.text(page), key: key), at: .seconds(1))
        }
        XCTAssertEqual(f.question?.text, text)
        XCTAssertEqual(f.status, .open(.init(beacon: q(1, .single, 2, digest: digest), text: text)))
    }

    func testStopsWhenThePollClosesAndResumesOnALaterQuestion() {
        var f = follower()
        f.hear(state(.open(q(1))), at: .seconds(1))
        f.answer(.choice(2))
        XCTAssertNotEqual(f.advertising, .silent)
        f.hear(state(.closed, interval: nil), at: .seconds(2))
        XCTAssertEqual(f.status, .pollClosed)
        XCTAssertEqual(f.advertising, .silent)
        f.hear(state(.open(q(5))), at: .seconds(3))
        XCTAssertEqual(f.status, .open(.init(beacon: q(5), text: nil)))
        f.answer(.choice(0))
        guard case .ballot(5, .choice(0), _, _) = f.advertising else { return XCTFail("\(f.advertising)") }
    }

    func testIntervalStopSilencesAnOpenQuestion() {
        var f = follower()
        f.hear(state(.open(q(1))), at: .seconds(1))
        f.answer(.choice(2))
        f.hear(state(.open(q(1)), interval: nil), at: .seconds(2))
        XCTAssertEqual(f.advertising, .silent)
        f.hear(state(.open(q(1)), interval: 500), at: .seconds(3))
        guard case .ballot(1, .choice(2), _, .milliseconds(500)) = f.advertising else { return XCTFail("\(f.advertising)") }
    }

    /// PROTOCOL.md §11.3: an interval in a STATE with no open question is read as stop.
    func testNoQuestionOpenMeansSilenceWhateverTheInterval() {
        for poll in [BeaconPoll.closed, .questionClosed(q(1))] {
            var f = follower()
            f.hear(state(.open(q(1))), at: .seconds(1))
            f.answer(.choice(2))
            guard case .ballot = f.advertising else { return XCTFail("\(f.advertising)") }
            f.hear(state(poll, interval: 720), at: .seconds(2))
            XCTAssertEqual(f.advertising, .silent, "\(poll)")
        }
    }

    func testSendsAgainAfterAChange() throws {
        var f = follower()
        f.hear(state(.open(q(1))), at: .seconds(1))
        f.answer(.choice(0))
        let first = try XCTUnwrap(seal(&f, sequence: 1))
        f.hear(acks(1, [first]), at: .seconds(2))
        XCTAssertEqual(f.status, .counted(.choice(0)))
        guard case .ballot(_, _, let g1, _) = f.advertising else { return XCTFail() }
        f.answer(.choice(3))
        XCTAssertEqual(f.status, .sending(.choice(3)))
        guard case .ballot(1, .choice(3), let g2, .milliseconds(100)) = f.advertising else { return XCTFail("\(f.advertising)") }
        XCTAssertNotEqual(g1, g2, "a changed answer is a new ballot")
        seal(&f, sequence: 2)
        // The first ballot's acknowledgement, heard again, does not acknowledge the new one.
        f.hear(acks(1, [first]), at: .seconds(3))
        XCTAssertEqual(f.status, .sending(.choice(3)))
    }

    func testKeepsTryingWhenTheAcknowledgementIsLostOrFalse() throws {
        var f = follower()
        f.hear(state(.open(q(1))), at: .seconds(1))
        f.answer(.choice(1))
        let fp = try XCTUnwrap(seal(&f, sequence: 4))
        // Lost: time passes with STATE frames only; the ballot stays at the STATE interval.
        for s in 2..<60 {
            f.hear(state(.open(q(1))), at: .seconds(s))
            f.tick(at: .seconds(s))
            guard case .ballot(1, .choice(1), _, .milliseconds(100)) = f.advertising else { return XCTFail("\(f.advertising)") }
        }
        // Other ballots' fingerprints, another question's ACKS with ours, or ours sealed with another key: no.
        f.hear(acks(1, [AckFingerprint(value: fp.value &+ 1)]), at: .seconds(60))
        f.hear(acks(2, [fp]), at: .seconds(60))
        f.hear(acks(1, [fp], key: otherKey), at: .seconds(60))
        XCTAssertEqual(f.status, .sending(.choice(1)))
        // False (the tally did not count it, yet its fingerprint is heard): slowed, never stopped.
        f.hear(acks(1, [fp]), at: .seconds(61))
        for s in 61..<200 {
            f.hear(state(.open(q(1))), at: .seconds(s))
            guard case .ballot(1, .choice(1), _, BeaconInterval.keepAlive) = f.advertising else { return XCTFail("\(f.advertising)") }
        }
    }

    /// A voter sending that hears no authentic frame for 1.5 s doubles its interval, and again after
    /// each further such silence, up to 2.55 s; other frames start the silence again but undo no
    /// doubling; the next STATE sets its interval. An acknowledged voter does not back off.
    func testASenderThatHearsNoBeaconBacksOffUntilTheNextState() throws {
        var f = follower()
        f.hear(state(.open(q(1)), interval: 20), at: .zero)
        f.answer(.choice(2))
        func interval() -> Duration? { if case .ballot(1, .choice(2), _, let i) = f.advertising { i } else { nil } }
        XCTAssertEqual(BeaconFollower.silenceBeforeBackoff, .milliseconds(1500))
        f.tick(at: .milliseconds(1499))
        XCTAssertEqual(interval(), .milliseconds(20))
        f.tick(at: .milliseconds(1500))
        XCTAssertEqual(interval(), .milliseconds(40))
        f.tick(at: .milliseconds(2999))
        XCTAssertEqual(interval(), .milliseconds(40), "a whole silence between doublings")
        f.tick(at: .seconds(3))
        XCTAssertEqual(interval(), .milliseconds(80))
        // Another voter's fingerprints: the silence starts again, the interval stays.
        f.hear(acks(1, [AckFingerprint(value: 1)]), at: .seconds(4))
        f.tick(at: .milliseconds(5499))
        XCTAssertEqual(interval(), .milliseconds(80))
        f.tick(at: .milliseconds(5500))
        XCTAssertEqual(interval(), .milliseconds(160))
        // Anything else heard (another voter's ballot) is silence.
        f.hear([0x01, 0x02, 0x03], at: .seconds(7))
        XCTAssertEqual(interval(), .milliseconds(320))
        for t in 8...30 { f.tick(at: .seconds(t)) }
        XCTAssertEqual(interval(), BeaconFollower.longestBackoff, "at most the longest STATE interval")
        XCTAssertEqual(f.status, .sending(.choice(2)), "backing off never stops the ballot")
        // The tally heard again: its interval.
        f.hear(state(.open(q(1)), interval: 720), at: .seconds(31))
        XCTAssertEqual(interval(), .milliseconds(720))
        f.tick(at: .milliseconds(32500))
        XCTAssertEqual(interval(), .milliseconds(1440))
        // Acknowledged: the keep-alive, whatever the silence.
        let fp = try XCTUnwrap(seal(&f, sequence: 3))
        f.hear(acks(1, [fp]), at: .seconds(33))
        for t in 34...60 { f.tick(at: .seconds(t)) }
        XCTAssertEqual(interval(), BeaconInterval.keepAlive)
    }

    func testAFrameOfAnotherJoinCodeIsIgnored() {
        var f = follower()
        f.hear(state(.open(q(1)), key: otherKey), at: .seconds(1))
        XCTAssertEqual(f.status, .waiting)
        f.tick(at: .seconds(6))
        XCTAssertEqual(f.status, .noBeacon)
        XCTAssertNil(f.question)
        f.hear(state(.open(q(1))), at: .seconds(7))
        XCTAssertEqual(f.status, .open(.init(beacon: q(1), text: nil)))
    }

    func testNoBeaconOnlyAfterFiveSeconds() {
        var f = follower(at: .seconds(10))
        f.tick(at: .seconds(14))
        XCTAssertEqual(f.status, .waiting)
        f.tick(at: .seconds(15))
        XCTAssertEqual(f.status, .noBeacon)
    }

    func testAReplayedOlderStateIsIgnored() {
        var f = follower()
        let old = state(.open(q(1)))
        f.hear(old, at: .seconds(1))
        f.answer(.choice(0))
        f.hear(state(.closed, interval: nil), at: .seconds(2))
        XCTAssertEqual(f.status, .pollClosed)
        f.hear(old, at: .seconds(3))
        XCTAssertEqual(f.status, .pollClosed)
        XCTAssertEqual(f.advertising, .silent)
    }

    /// The first STATE frame a voter hears was sealed 30 s before (replayed by a passer-by, or left on
    /// the air): the tally's own frames, 30 s ahead of it, look ahead of the voter's clock. Refused, they
    /// contradict it: after five of them over 3 s (from 2 s to 6 s) the voter listens again for 1.5 s and
    /// takes the newest it hears (at 8 s, the first frame after 7.5 s), before `BeaconReplayGuard.staleAfter`
    /// would have let them in (11 s). The voter follows the tally to question 3 and, later, to the close.
    func testAStaleFirstFrameGivesWayToTheTallysFrames() {
        var f = follower()
        f.hear(state(.open(q(1)), counter: 1_000), at: .seconds(1))
        XCTAssertEqual(f.status, .open(.init(beacon: q(1), text: nil)))
        // The tally, now at counter 1,000 + 30 s, re-seals every second.
        var shownAt: Duration?
        for k in 1...20 {
            let t = Duration.seconds(1 + k)
            f.hear(state(.open(q(3)), counter: 1_000 + 3_000 + UInt32(100 * k)), at: t)
            if shownAt == nil, f.status == .open(.init(beacon: q(3), text: nil)) { shownAt = t }
        }
        XCTAssertEqual(shownAt, .seconds(8), "listening again, 7 s after the stale frame was accepted")
        XCTAssertEqual(f.relistens, 1)
        f.hear(state(.closed, interval: nil, counter: 1_000 + 3_000 + 2_100), at: .seconds(22))
        XCTAssertEqual(f.status, .pollClosed, "and from then on the time rule holds again, with the tally's clock")
    }

    func testRosterMismatchIsShownAndNothingIsSent() {
        var f = follower()
        f.hear(state(.open(q(1)), mode: .roster), at: .seconds(1))
        f.answer(.choice(0))
        XCTAssertEqual(f.status, .rosterMismatch(poll: .roster))
        XCTAssertEqual(f.advertising, .silent)
    }

    func testAnAnswerGivenBeforeTheQuestionOpensIsCheckedAgainstIt() {
        var f = follower()
        f.answer(.choice(5))
        f.hear(state(.open(q(1, .single, 4))), at: .seconds(1))
        XCTAssertEqual(f.status, .notOffered(.choice(5)))
        XCTAssertEqual(f.advertising, .silent)
        var g = follower()
        g.answer(.choice(2))
        g.hear(state(.open(q(1, .single, 4))), at: .seconds(1))
        XCTAssertEqual(g.status, .sending(.choice(2)))
    }

    /// The voter's CPU per beacon frame heard (STATE and ACKS of 3 other fingerprints, alternating):
    /// printed, for docs; the follower must still be sending after every frame.
    func testCPUPerBeaconFrame() throws {
        var f = follower()
        f.hear(state(.open(q(1))), at: .seconds(1))
        f.answer(.choice(0))
        try XCTUnwrap(seal(&f, sequence: 1))
        let frames: [[UInt8]] = (0..<1000).map { i in
            i % 2 == 0 ? state(.open(q(1))) : acks(1, [AckFingerprint(value: UInt32(i)), AckFingerprint(value: 7), AckFingerprint(value: 9)])
        }
        let n = 50_000
        let clock = ContinuousClock()
        let start = clock.now
        for i in 0..<n { f.hear(frames[i % frames.count], at: .seconds(2) + .milliseconds(i)) }
        let elapsed = clock.now - start
        XCTAssertEqual(f.status, .sending(.choice(0)))
        print("beacon follower: \(elapsed / n) per frame over \(n) frames")
    }

    /// Random orders of STATE (open, closed, stop, another question), ACKS (others' fingerprints,
    /// another question's, the voter's previous ballot's), answers and time: a voter whose current
    /// ballot no ACKS frame has acknowledged with its real fingerprint never stops advertising while
    /// its question is open and the STATE interval is not stop, including a question answered before it
    /// closed or gave way to another and opened again (no frame erases an answer).
    func testAnUnacknowledgedBallotIsAdvertisedWhileItsQuestionIsOpen() {
        var rng = SplitMix64(seed: 0x5EED)
        var checked = 0
        for _ in 0..<200 {
            var f = follower()
            var now: Duration = .zero
            // The model: the open question, whether the interval is stop, whether the student has
            // answered the open question (or before it opened), and whether the current ballot's
            // own fingerprint was heard.
            var open: BeaconQuestion?
            var stopInterval = false
            var answered = false
            var pending = false
            // Questions whose answer left the air with them: it comes back when they open again.
            var kept: Set<UInt8> = []
            var realAcked = false
            var sequence: UInt16 = 0
            var lastGeneration: UInt64?
            var fingerprints: [AckFingerprint] = []
            var heardStateLast = false
            for _ in 0..<60 {
                now += .milliseconds(Int(rng.next() % 3000))
                heardStateLast = false
                switch rng.next() % 6 {
                case 0:
                    let question = q(UInt8(1 + rng.next() % 3))
                    stopInterval = rng.next() % 5 == 0
                    switch rng.next() % 4 {
                    case 0, 1:
                        if let o = open, answered { kept.insert(o.number) }
                        f.hear(state(rng.next() % 2 == 0 ? .closed : .questionClosed(question), interval: nil), at: now)
                        open = nil
                        answered = false
                    default:
                        if open != question {
                            if let o = open, answered { kept.insert(o.number) }
                            let wasKept = kept.remove(question.number) != nil
                            answered = pending || wasKept
                            pending = false
                            realAcked = false
                        }
                        f.hear(state(.open(question), interval: stopInterval ? nil : 100), at: now)
                        open = question
                        heardStateLast = true
                    }
                case 1, 2:
                    f.answer(.choice(UInt8(rng.next() % 4)))  // every question offers A to D
                    if open == nil { pending = true } else { answered = true }
                case 3:
                    // Others' fingerprints, and the voter's earlier ballots' (not its current one).
                    let others = (0..<3).map { _ in AckFingerprint(value: UInt32(truncatingIfNeeded: rng.next())) }
                    let earlier = fingerprints.dropLast().suffix(2)
                    f.hear(acks(open?.number ?? 1, others + earlier), at: now)
                case 4:
                    if rng.next() % 4 == 0, let fp = fingerprints.last, let o = open {
                        f.hear(acks(o.number, [fp]), at: now)
                        realAcked = true
                    }
                default:
                    f.tick(at: now)
                }
                // The service seals each new ballot generation once.
                if case .ballot(let qn, _, let g, _) = f.advertising, g != lastGeneration {
                    lastGeneration = g
                    sequence &+= 1
                    f.sealed(generation: g, sequence: sequence)
                    fingerprints.append(key.fingerprint(voterID: voterID, question: qn, sequence: sequence))
                    realAcked = false
                }
                if let o = open, answered, !stopInterval {
                    checked += 1
                    guard case .ballot(o.number, _, _, let interval) = f.advertising else {
                        return XCTFail("an answered open question went silent: \(f.status)")
                    }
                    // Without its acknowledgement: the STATE's interval, or backed off from it after silences
                    // (testASenderThatHearsNoBeaconBacksOffUntilTheNextState), never the keep-alive.
                    if !realAcked {
                        XCTAssertTrue(interval == .milliseconds(100) || interval == .milliseconds(200) || interval == .milliseconds(400)
                                      || interval == .milliseconds(800) || interval == .milliseconds(1600)
                                      || interval == BeaconFollower.longestBackoff, "slowed without its acknowledgement: \(interval)")
                        if heardStateLast { XCTAssertEqual(interval, .milliseconds(100), "a STATE sets its interval") }
                    }
                }
                if open == nil || stopInterval { XCTAssertEqual(f.advertising, .silent) }
            }
        }
        XCTAssertGreaterThan(checked, 1000, "the random runs reach answered open questions")
    }
}
