@testable import Voter
import XCTest

/// A simulated student keeps at most `FrameBacklog.limit` heard frames waiting for its loop; the
/// rest it misses, so a demo room that follows the beacon and falls behind holds no growing queue.
final class FrameBacklogTests: XCTestCase {
    func testAFullBacklogMissesNewFramesUntilOneIsTaken() {
        let backlog = FrameBacklog()
        for i in 0..<FrameBacklog.limit { XCTAssertTrue(backlog.enter(), "frame \(i)") }
        XCTAssertFalse(backlog.enter(), "the backlog is full")
        XCTAssertFalse(backlog.enter())
        backlog.leave()
        XCTAssertTrue(backlog.enter(), "one taken, one more may wait")
        XCTAssertFalse(backlog.enter())
    }
}
