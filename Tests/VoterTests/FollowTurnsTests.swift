import ClickerTestSupport
import ClickerTransport
@testable import Voter
import XCTest

/// Where a follower stands (``FollowTurns``), as a test that moves its clock reads it.
final class FollowTurnsTests: XCTestCase {
    /// Unsettled until it listens and its loop runs; while a frame its radio got is not taken, or taken
    /// and not handled; while a line typed is not read; while a timer's sleep is not registered, and
    /// from its deadline until what it posted is handled. A cancelled timer is forgotten; a follower
    /// that stopped is settled.
    func testSettledOnceAllThatReachedItIsHandledAndNoTimerIsDue() async {
        let clock = TestClock()
        let elapsed = ElapsedClock(clock)
        let turns = FollowTurns()
        XCTAssertFalse(turns.isSettled(heard: 0, read: 0), "not running")
        turns.begin(on: elapsed)
        turns.listening()
        XCTAssertFalse(turns.isSettled(heard: 0, read: 0), "its loop does not run yet")
        turns.looping()
        XCTAssertTrue(turns.isSettled(heard: 0, read: 0))

        XCTAssertFalse(turns.isSettled(heard: 1, read: 0), "a frame in its radio's stream")
        turns.posted(.heard([1]))
        XCTAssertFalse(turns.isSettled(heard: 1, read: 0), "a frame taken, not handled")
        turns.handled()
        XCTAssertTrue(turns.isSettled(heard: 1, read: 0))
        XCTAssertFalse(turns.isSettled(heard: 1, read: 1), "a line typed, not read")

        let timer = turns.set(elapsed.now.advanced(by: .seconds(1)))
        XCTAssertFalse(turns.isSettled(heard: 1, read: 0), "a timer set, its sleep not registered")
        let fired = Task {
            guard await turns.wait(timer, on: elapsed) else { return false }
            turns.posted(.tick)
            turns.clear(timer)
            return true
        }
        await clock.waitForSleepers(1)
        XCTAssertTrue(turns.isSettled(heard: 1, read: 0), "the timer is due later")
        clock.advance(by: .seconds(1))
        XCTAssertFalse(turns.isSettled(heard: 1, read: 0), "the timer is due: not fired, or its tick not handled")
        let didFire = await fired.value
        XCTAssertTrue(didFire)
        XCTAssertFalse(turns.isSettled(heard: 1, read: 0), "its tick not handled")
        turns.handled()
        XCTAssertTrue(turns.isSettled(heard: 1, read: 0))

        let cancelled = turns.set(elapsed.now.advanced(by: .seconds(1)))
        let waiting = Task { await turns.wait(cancelled, on: elapsed) }
        await clock.waitForSleepers(1)
        waiting.cancel()
        let didWake = await waiting.value
        XCTAssertFalse(didWake)
        clock.advance(by: .seconds(2))
        XCTAssertTrue(turns.isSettled(heard: 1, read: 0), "a cancelled timer is forgotten")

        turns.end()
        XCTAssertTrue(turns.isSettled(heard: 5, read: 5), "a follower that stopped will not act again")
    }
}
