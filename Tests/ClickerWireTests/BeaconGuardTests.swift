import ClickerWire
import XCTest

/// The replay guard of version 4 (docs/PROTOCOL.md §11.7): no ratchet, recovery from a contradicted
/// newest frame, and signed frames that need only be newer.
final class BeaconGuardTests: XCTestCase {
    func state(_ counter: UInt32, question: UInt8 = 1) -> BeaconState {
        BeaconState(voteID: 4821, counter: counter, mode: .anonymous,
                    poll: .open(BeaconQuestion(number: question, kind: .single, options: 4)), interval: .stop)
    }

    /// Issue 36 #1 at the guard: 700 forged frames in 20 s, each 5 s beyond the last one taken plus the
    /// time since (what the guard of version 3 allowed, frame after frame), beside the tally's frames
    /// (one a second). The newest frame taken never runs more than the lead ahead of the anchor's
    /// clock: the bound does not grow with the frames.
    func testSevenHundredForgedFramesDoNotRatchetTheGuardAhead() {
        var guardian = BeaconReplayGuard()
        let anchor: UInt32 = 10_000
        XCTAssertTrue(guardian.admit(state(anchor), at: .seconds(100)))
        var forged = anchor
        var last = Duration.seconds(100)
        var taken = 0
        var tallySecond = 0
        for i in 1...700 {
            let t = Duration.seconds(100) + .milliseconds(i * 20_000 / 700)
            if Int(t / .seconds(1)) > 100 + tallySecond {
                tallySecond += 1
                _ = guardian.admit(state(anchor + UInt32(100 * tallySecond)), at: .seconds(100 + tallySecond))
            }
            forged += BeaconReplayGuard.lead + UInt32((t - last) / .milliseconds(10))
            last = t
            if guardian.admit(state(forged, question: 2), at: t) { taken += 1 }
            let ahead = Int64(guardian.newest ?? 0) - Int64(anchor) - Int64((t - .seconds(100)) / .milliseconds(10))
            XCTAssertLessThanOrEqual(ahead, Int64(BeaconReplayGuard.lead), "frame \(i): \(ahead) ticks ahead of the anchor's clock")
        }
        XCTAssertLessThanOrEqual(taken, 1, "only a frame within the lead of the anchor's clock is taken")
    }

    /// A forger that hugs the bound holds the newest 5 s ahead; once it stops, the tally's frames
    /// (older than that newest) contradict it, and after ``BeaconReplayGuard/contradictedAfter`` the
    /// guard re-anchors on them.
    func testAContradictedNewestFrameGivesWayWithinTwoSeconds() {
        var guardian = BeaconReplayGuard()
        XCTAssertTrue(guardian.admit(state(1_000), at: .seconds(0)))
        XCTAssertTrue(guardian.admit(state(1_000 + 1_000 + BeaconReplayGuard.lead, question: 2), at: .seconds(10)))
        var back: Duration?
        for ms in stride(from: 10_100, to: 20_000, by: 100) where back == nil {
            let t = Duration.milliseconds(ms)
            if guardian.admit(state(1_000 + UInt32(ms / 10)), at: t) { back = t }
        }
        XCTAssertEqual(back, .milliseconds(12_100))
        // The same frame heard again is not a contradiction.
        var quiet = BeaconReplayGuard()
        XCTAssertTrue(quiet.admit(state(5_000), at: .seconds(0)))
        XCTAssertFalse(quiet.admit(state(5_000), at: .seconds(1)))
        XCTAssertFalse(quiet.admit(state(5_000), at: .seconds(5)))
        XCTAssertEqual(quiet.newest, 5_000)
    }

    /// A voter whose very first STATE is a forgery far ahead (FFFFFFF0, "poll closed") is anchored on it;
    /// the tally's frames, every 100 ms, contradict it and are taken 2 s after the first of them.
    func testAForgedFirstFrameFarAheadGivesWayToTheTallysFrames() {
        var guardian = BeaconReplayGuard()
        XCTAssertTrue(guardian.admit(state(0xFFFF_FFF0), at: .seconds(1)))
        var back: Duration?
        for ms in stride(from: 1_100, to: 10_000, by: 100) where back == nil {
            if guardian.admit(state(5_000 + UInt32(ms / 10)), at: .milliseconds(ms)) { back = .milliseconds(ms) }
        }
        XCTAssertEqual(back, .milliseconds(3_100))
        XCTAssertFalse(guardian.admit(state(0xFFFF_FFF0), at: .milliseconds(3_200)), "and the forgery, sent again, is too far ahead now")
    }

    /// What the contradiction rule gives an outsider who replays an old recorded tagged STATE every 100 ms:
    /// nothing while the voter hears the tally's frames (at least one a second), the old frame taken once
    /// the voter has heard none of the tally's for 2 s (the tally jammed where the voter is).
    func testAnOldFrameReplayedIsTakenOnlyWhenTheTallyIsUnheardForTwoSeconds() {
        var guardian = BeaconReplayGuard()
        XCTAssertTrue(guardian.admit(state(1_000), at: .zero))
        for ms in stride(from: 100, to: 20_000, by: 100) {
            let t = Duration.milliseconds(ms)
            if ms % 1_000 == 0 { XCTAssertTrue(guardian.admit(state(1_000 + UInt32(ms / 10)), at: t)) }
            XCTAssertFalse(guardian.admit(state(900, question: 2), at: t), "at \(t)")
        }
        // The tally unheard after 19.0 s: the replay is taken at 21 s, 2 s after the first one heard since.
        var taken: Duration?
        for ms in stride(from: 20_000, to: 25_000, by: 100) where taken == nil {
            if guardian.admit(state(900, question: 2), at: .milliseconds(ms)) { taken = .milliseconds(ms) }
        }
        XCTAssertEqual(taken, .seconds(21))
    }

    /// Signed frames only the tally makes: newer is enough, whatever the clock (a replay of its old
    /// frames holds a voter only until one current frame), and a tagged frame's newest does not hold
    /// back a signed one.
    func testSignedFramesNeedOnlyBeNewer() {
        var guardian = BeaconReplayGuard()
        XCTAssertTrue(guardian.admit(state(1_000_000), at: .seconds(0)))
        XCTAssertTrue(guardian.admitSigned(state(500), at: .seconds(1)), "a tagged newest does not hold a signed frame back")
        XCTAssertTrue(guardian.admitSigned(state(.max - 1), at: .seconds(2)), "only the tally signs: no time rule")
        XCTAssertFalse(guardian.admitSigned(state(.max - 1), at: .seconds(3)))
        XCTAssertFalse(guardian.admitSigned(state(600), at: .seconds(3)))
        XCTAssertEqual(guardian.newestSigned, .max - 1)
    }
}
