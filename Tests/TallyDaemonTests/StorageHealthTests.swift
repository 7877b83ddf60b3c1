import Foundation
@testable import TallyDaemon
import XCTest

/// The part of the poll that says whether the store takes writes, and when to try it again.
final class StorageHealthTests: XCTestCase {
    func testAFailureStopsCountingUntilACommitSucceedsAndIsTriedAgainOncePerInterval() {
        var h = StorageHealth()
        let t0 = Date(timeIntervalSince1970: 1_000)
        XCTAssertTrue(h.mayCommit(at: t0, force: false))
        XCTAssertNil(h.succeeded(), "nothing to recover from")
        XCTAssertTrue(h.failed("disk full", at: t0), "counting stops: said once")
        XCTAssertFalse(h.failed("disk full", at: t0.addingTimeInterval(0.2)), "not said again")
        XCTAssertEqual(h.error, "disk full")
        XCTAssertFalse(h.mayCommit(at: t0.addingTimeInterval(0.5), force: false))
        XCTAssertTrue(h.mayCommit(at: t0.addingTimeInterval(0.5), force: true), "flush() tries at once")
        XCTAssertTrue(h.mayCommit(at: t0.addingTimeInterval(0.2 + StorageHealth.retryInterval), force: false))
        XCTAssertEqual(h.succeeded(), "disk full", "counting resumes, and says from what")
        XCTAssertNil(h.error)
        XCTAssertTrue(h.mayCommit(at: t0, force: false))
        XCTAssertEqual(h.firstFailure, "disk full", "the run failed, for its exit status")
        XCTAssertTrue(h.failed("I/O error", at: t0.addingTimeInterval(5)))
        XCTAssertEqual(h.firstFailure, "disk full", "the first failure is kept")
    }

    func testUndoneBallotsAreCounted() {
        var h = StorageHealth()
        for _ in 0..<3 { h.undidBallot() }
        XCTAssertEqual(h.notSaved, 3)
    }
}
