import ClickerTransport
import ClickerWire
import Voter
import XCTest

/// Attacks on a follower by frames a holder of the join code or an outsider can send (docs/SECURITY.md):
/// no STATE frame erases an unacknowledged answer (issue 36 item 3), and a replay of the tally's own
/// old frames does not hold a follower on an old question (item 4). Pure ``BeaconFollower``, test clock.
final class BeaconFollowerKeepingTests: XCTestCase {
    static let voteID: UInt16 = 0x4821
    // Test constant: 64 bytes of key material.
    let key = BeaconKey(keyMaterial: (0..<64).map { UInt8($0) }, voteID: voteID)!
    let voterID: UInt32 = 0xCAFE_F00D

    func q(_ n: UInt8, _ kind: QuestionKind = .single, _ options: UInt8 = 4) -> BeaconQuestion {
        BeaconQuestion(number: n, kind: kind, options: kind.hasOptions ? options : 0)
    }

    func state(_ poll: BeaconPoll, counter: UInt32, interval ms: Int? = 100) -> [UInt8] {
        let interval = ms.flatMap { BeaconInterval(milliseconds: $0) } ?? .stop
        let s = BeaconState(voteID: Self.voteID, counter: counter, mode: .anonymous, poll: poll, interval: interval)
        return try! BeaconCodec.seal(s, key: key)  // valid by construction
    }

    func acks(_ question: UInt8, _ fps: [AckFingerprint], counter: UInt32) -> [UInt8] {
        try! BeaconCodec.seal(.acks(BeaconAcks(counter: counter, question: question, fingerprints: fps)), key: key)
    }

    /// Seals the ballot the follower asks for with `sequence`; returns its generation and fingerprint.
    @discardableResult
    func seal(_ f: inout BeaconFollower, sequence: UInt16) -> (generation: UInt64, fingerprint: AckFingerprint)? {
        guard case .ballot(let question, _, let generation, _) = f.advertising else { return nil }
        f.sealed(generation: generation, sequence: sequence)
        return (generation, key.fingerprint(voterID: voterID, question: question, sequence: sequence))
    }

    func follower() -> BeaconFollower { BeaconFollower(key: key, mode: .anonymous, voterID: voterID, now: .zero) }

    /// Attack #5: one forged STATE "question 1 closed" (a counter just above the tally's), then the tally's
    /// own "question 1 open". The answer goes on the air again as a new ballot and is counted.
    func testAForgedCloseThenTheSameQuestionKeepsTheAnswer() throws {
        var f = follower()
        f.hear(state(.open(q(1)), counter: 1_000), at: .seconds(1))
        f.answer(.choice(2))
        let first = try XCTUnwrap(seal(&f, sequence: 1))
        f.hear(state(.questionClosed(q(1)), counter: 1_001, interval: nil), at: .milliseconds(1_100))
        XCTAssertEqual(f.status, .questionClosed(1))
        XCTAssertEqual(f.advertising, .silent)
        f.hear(state(.open(q(1)), counter: 1_030), at: .milliseconds(1_300))
        XCTAssertEqual(f.status, .sending(.choice(2)))
        guard case .ballot(1, .choice(2), let g, .milliseconds(100)) = f.advertising else { return XCTFail("\(f.advertising)") }
        XCTAssertNotEqual(g, first.generation, "sent again as a new ballot")
        let second = try XCTUnwrap(seal(&f, sequence: 2))
        f.hear(acks(1, [second.fingerprint], counter: 1_040), at: .milliseconds(1_500))
        XCTAssertEqual(f.status, .counted(.choice(2)))
    }

    /// Another question opened, or the poll closed, between: the answer to question 1 comes back when
    /// question 1 is open again; question 2 stays unanswered.
    func testTheAnswerComesBackAfterAnotherQuestionOrAClose() {
        var f = follower()
        f.hear(state(.open(q(1)), counter: 1_000), at: .seconds(1))
        f.answer(.choice(3))
        f.hear(state(.open(q(2)), counter: 1_001), at: .seconds(2))
        XCTAssertEqual(f.status, .open(.init(beacon: q(2), text: nil)))
        XCTAssertEqual(f.advertising, .silent, "the answer to 1 is not sent for 2")
        f.hear(state(.closed, counter: 1_002, interval: nil), at: .seconds(3))
        XCTAssertEqual(f.status, .pollClosed)
        f.hear(state(.open(q(1)), counter: 1_300), at: .seconds(4))
        guard case .ballot(1, .choice(3), _, _) = f.advertising else { return XCTFail("\(f.advertising)") }
        XCTAssertEqual(f.status, .sending(.choice(3)))
    }

    /// A question of the same number described otherwise (five options, say) does not send the answer,
    /// and does not drop it while it fits: the first description back sends it again.
    func testAnotherDescriptionOfTheNumberHoldsTheAnswerBack() {
        var f = follower()
        f.hear(state(.open(q(1)), counter: 1_000), at: .seconds(1))
        f.answer(.choice(1))
        f.hear(state(.open(q(1, .single, 5)), counter: 1_001), at: .seconds(2))
        XCTAssertEqual(f.status, .open(.init(beacon: q(1, .single, 5), text: nil)))
        XCTAssertEqual(f.advertising, .silent, "not sent for a question the student did not see")
        f.hear(state(.open(q(1)), counter: 1_100), at: .seconds(3))
        guard case .ballot(1, .choice(1), _, _) = f.advertising else { return XCTFail("\(f.advertising)") }
    }

    /// The answer is dropped when a question of its number opens that it does not fit, and replaced when
    /// the student answers again.
    func testAnAnswerThatDoesNotFitIsDroppedAndANewOneReplacesIt() {
        var f = follower()
        f.hear(state(.open(q(1)), counter: 1_000), at: .seconds(1))
        f.answer(.choice(3))
        f.hear(state(.open(q(1, .single, 3)), counter: 1_001), at: .seconds(2))
        XCTAssertEqual(f.status, .open(.init(beacon: q(1, .single, 3), text: nil)), "D does not fit three options")
        XCTAssertEqual(f.advertising, .silent)
        f.hear(state(.open(q(1)), counter: 1_002), at: .seconds(3))
        XCTAssertEqual(f.advertising, .silent, "dropped, not kept")
        f.answer(.choice(0))
        f.hear(state(.questionClosed(q(1)), counter: 1_003, interval: nil), at: .seconds(4))
        f.answer(.choice(1))   // changed while closed: the change wins
        f.hear(state(.open(q(1)), counter: 1_100), at: .seconds(5))
        guard case .ballot(1, .choice(1), _, _) = f.advertising else { return XCTFail("\(f.advertising)") }
    }

    /// Attack #6 on the follower alone: it starts late and the first STATE it takes is a replay of the
    /// tally's question 1, recorded 10 minutes (60,000 ticks) earlier; the replay goes on at the real rate
    /// (a frame every 20 ms, each second a newer recorded one), while the tally's frames of question 2
    /// come every 300 ms. The student answers what it is shown. Within `contradictedFor` + `relistenFor`
    /// (4.5 s) of the first contradiction the follower takes the tally's question 2, is counted, and the
    /// replay no longer moves it. Without listening again it followed question 1 for the whole minute.
    func testAReplayOfOldFramesGivesWayToTheTallysWithinSeconds() {
        var f = follower()
        let age: UInt32 = 60_000, start: UInt32 = 500_000
        var shown2At: Duration?
        var answered: Set<UInt8> = []
        var ack: (at: Duration, fingerprint: AckFingerprint)?
        var t = Duration.seconds(1)
        let end = Duration.seconds(61)
        while t < end {
            let ms = Int((t - .seconds(1)) / .milliseconds(1))
            // The replay: the recorded frame of the second that is replayed (sealed once a second).
            let replayed = start - age + UInt32(ms / 1_000) * 100
            f.hear(state(.open(q(1)), counter: replayed), at: t)
            if ms % 300 == 0, ms > 0 {
                f.hear(state(.open(q(2)), counter: start + UInt32(ms / 1_000) * 100), at: t)
            }
            f.tick(at: t)
            if let n = f.question?.number, f.showsOpen, !answered.contains(n) {
                answered.insert(n)
                f.answer(.choice(n))
                // The tally acknowledges the ballot of its own question 200 ms later.
                if let b = seal(&f, sequence: UInt16(n)), n == 2 { ack = (t + .milliseconds(200), b.fingerprint) }
            }
            if let a = ack, t >= a.at {
                f.hear(acks(2, [a.fingerprint], counter: start + UInt32(ms / 1_000) * 100), at: t)
                ack = nil
            }
            if shown2At == nil, f.question?.number == 2 { shown2At = t }
            t += .milliseconds(20)
        }
        XCTAssertEqual(answered, [1, 2])
        XCTAssertNotNil(shown2At)
        XCTAssertLessThanOrEqual(shown2At ?? end, .seconds(1) + .milliseconds(300) + BeaconFollower.contradictedFor
                                 + BeaconFollower.relistenFor + .milliseconds(400))
        XCTAssertEqual(f.relistens, 1, "once: then the tally acknowledged its ballot")
        XCTAssertEqual(f.question?.number, 2, "the replay did not take it back")
        XCTAssertEqual(f.status, .counted(.choice(2)))
    }

    /// A follower whose first STATE was forged far ahead (a holder of the join code sent question 9 with a
    /// counter 1,000 s ahead, for a second) refuses the tally's frames as older. Once the forger stops, the
    /// tally's frames (every 300 ms) contradict it: the follower is back on the tally's question 2 within
    /// 3 s + 1.5 s of the first of them, where the replay guard alone held it until it restarted.
    func testAFollowerThatTookAForgedFrameFarAheadReturnsOnceTheForgerStops() {
        var f = follower()
        for k in 0..<50 { f.hear(state(.open(q(9)), counter: 200_000 + UInt32(k)), at: .seconds(1) + .milliseconds(20 * k)) }
        XCTAssertEqual(f.question?.number, 9)
        var backAt: Duration?
        for k in 1...40 {
            let t = Duration.seconds(2) + .milliseconds(300 * k)
            f.hear(state(.open(q(2)), counter: 100_000 + UInt32(30 * k)), at: t)
            f.tick(at: t)
            if backAt == nil, f.question?.number == 2 { backAt = t }
        }
        XCTAssertNotNil(backAt)
        XCTAssertLessThanOrEqual(backAt ?? .seconds(60), .seconds(2) + .milliseconds(300) + BeaconFollower.contradictedFor
                                 + BeaconFollower.relistenFor + .milliseconds(300))
        XCTAssertEqual(f.status, .open(.init(beacon: q(2), text: nil)))
    }

    /// What listening again does not do: a follower whose ballot the tally acknowledged, or whose poll
    /// closed, is not moved by a replay of older frames, however long, while it hears the tally's STATE
    /// once a second. (A voter that hears only the replay, the tally jammed where it is, takes it after
    /// 2 s: ``BeaconReplayGuard``'s contradiction rule, PROTOCOL.md §11.7.)
    func testACountedOrClosedFollowerIgnoresAReplay() throws {
        var f = follower()
        f.hear(state(.open(q(2)), counter: 10_000), at: .seconds(1))
        f.answer(.choice(1))
        let b = try XCTUnwrap(seal(&f, sequence: 1))
        f.hear(acks(2, [b.fingerprint], counter: 10_001), at: .milliseconds(1_200))
        var g = follower()
        g.hear(state(.closed, counter: 10_000, interval: nil), at: .seconds(1))
        for k in 0..<1_000 {
            let t = Duration.seconds(2) + .milliseconds(20 * k)
            let old = state(.open(q(1)), counter: 4_000 + UInt32(k / 50) * 100)
            f.hear(old, at: t)
            g.hear(old, at: t)
            if k % 50 == 0 {  // the tally's own STATE, a second apart, its counter in 10 ms ticks
                let now = 10_100 + UInt32(2 * k)
                f.hear(state(.open(q(2)), counter: now), at: t)
                g.hear(state(.closed, counter: now, interval: nil), at: t)
            }
            f.tick(at: t)
            g.tick(at: t)
        }
        XCTAssertEqual(f.status, .counted(.choice(1)))
        XCTAssertEqual(g.status, .pollClosed)
        XCTAssertEqual(f.relistens + g.relistens, 0)
    }
}

private extension BeaconFollower {
    var showsOpen: Bool {
        if case .open = status { return true }
        return false
    }
}
