import ClickerWire
import Voter
import XCTest

final class StaggeredStartTests: XCTestCase {
    func ballot(_ generation: UInt64 = 1, _ interval: Duration = .milliseconds(100)) -> BeaconFollower.Advertising {
        .ballot(question: 1, answer: .choice(1), generation: generation, interval: interval)
    }

    /// From silence a ballot waits, silent, until a moment drawn within its interval, then goes on the air.
    func testABallotStartsAtAMomentWithinItsIntervalAndIsSilentUntilThen() throws {
        var s = StaggeredStart(seed: 1)
        let t0 = Duration.seconds(5)
        XCTAssertEqual(s.update(ballot(), at: t0), .silent)
        let at = try XCTUnwrap(s.startAt)
        XCTAssertGreaterThanOrEqual(at, t0)
        XCTAssertLessThan(at, t0 + .milliseconds(100))
        // Asked again before then (another frame, another tick): the same moment, still silent.
        XCTAssertEqual(s.update(ballot(), at: at - .nanoseconds(1)), .silent)
        XCTAssertEqual(s.startAt, at)
        XCTAssertEqual(s.update(ballot(), at: at), ballot())
        XCTAssertNil(s.startAt)
        XCTAssertEqual(s.onAir, ballot())
    }

    /// The moments are spread over the whole interval: over 2,000 voters that start on the same frame,
    /// every tenth of the interval holds about a tenth of them (so no two bunch as they would at once).
    func testStartsAreSpreadUniformlyOverTheInterval() throws {
        var deciles = [Int](repeating: 0, count: 10)
        for seed in 0..<2000 {
            var s = StaggeredStart(seed: UInt64(seed) &* 0x9E37_79B9)
            s.update(ballot(1, .milliseconds(700)), at: .zero)
            let at = try XCTUnwrap(s.startAt)
            XCTAssertLessThan(at, .milliseconds(700))
            deciles[Int(at / .milliseconds(70))] += 1
        }
        // 200 expected in each; 4.5 standard deviations is about ±60.
        for (i, d) in deciles.enumerated() { XCTAssert((140...260).contains(d), "tenth \(i): \(d) of 2000 (\(deciles))") }
    }

    /// Silence takes effect at once, and drops a start that was waiting.
    func testSilenceIsAtOnce() throws {
        var s = StaggeredStart(seed: 2)
        s.update(ballot(), at: .zero)
        let at = try XCTUnwrap(s.startAt)
        s.update(ballot(), at: at)
        XCTAssertEqual(s.update(.silent, at: at + .milliseconds(1)), .silent)
        XCTAssertNil(s.startAt)
        // Waiting, then silence: nothing goes on the air at the old moment.
        s.update(ballot(2), at: .seconds(1))
        XCTAssertNotNil(s.startAt)
        s.update(.silent, at: .seconds(1))
        XCTAssertEqual(s.update(.silent, at: .seconds(3)), .silent)
        XCTAssertNil(s.startAt)
    }

    /// A new ballot at the interval already on the air (the student changed the answer) replaces the
    /// old one at once: the radio keeps its phase, and nobody else changed at that moment.
    func testANewAnswerAtTheIntervalOnTheAirGoesOnAtOnce() throws {
        var s = StaggeredStart(seed: 3)
        s.update(ballot(1), at: .zero)
        s.update(ballot(1), at: try XCTUnwrap(s.startAt))
        XCTAssertEqual(s.update(ballot(2), at: .seconds(2)), ballot(2))
        XCTAssertNil(s.startAt)
    }

    /// A new interval (a new STATE, or the keep-alive once acknowledged) silences the old ballot at
    /// once and starts the new one at a moment drawn within the new interval; the draw is made again
    /// if the interval changes while it waits.
    func testANewIntervalSilencesAtOnceAndRestartsWithinIt() throws {
        var s = StaggeredStart(seed: 4)
        s.update(ballot(1), at: .zero)
        s.update(ballot(1), at: try XCTUnwrap(s.startAt))
        let t = Duration.seconds(3)
        XCTAssertEqual(s.update(ballot(1, BeaconInterval.keepAlive), at: t), .silent)
        let keepAlive = try XCTUnwrap(s.startAt)
        XCTAssertLessThan(keepAlive, t + BeaconInterval.keepAlive)
        XCTAssertEqual(s.update(ballot(1, .milliseconds(300)), at: t + .milliseconds(5)), .silent)
        let redrawn = try XCTUnwrap(s.startAt)
        XCTAssertGreaterThanOrEqual(redrawn, t + .milliseconds(5))
        XCTAssertLessThan(redrawn, t + .milliseconds(305))
        XCTAssertEqual(s.update(ballot(1, .milliseconds(300)), at: redrawn), ballot(1, .milliseconds(300)))
    }

    /// `immediate` never waits.
    func testImmediateNeverWaits() {
        var s = StaggeredStart.immediate
        XCTAssertEqual(s.update(ballot(), at: .zero), ballot())
        XCTAssertEqual(s.update(ballot(1, .seconds(2)), at: .zero), ballot(1, .seconds(2)))
        XCTAssertNil(s.startAt)
    }
}
