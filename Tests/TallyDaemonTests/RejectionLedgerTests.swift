import ClickerTransport
@testable import TallyDaemon
import XCTest

/// The poll's ledger of rejected reports: counts, devices (bounded), and what waits to be committed.
final class RejectionLedgerTests: XCTestCase {
    func testCountsDevicesAndPendingReports() {
        var l = RejectionLedger()
        XCTAssertFalse(l.record("badTag", question: 1, from: DeviceAddress(rawValue: 1)))
        XCTAssertFalse(l.record("badTag", question: 1, from: DeviceAddress(rawValue: 1)))
        XCTAssertFalse(l.record("rateLimited", question: 1, from: DeviceAddress(rawValue: 1)))
        XCTAssertFalse(l.record("badTag", question: 2, from: DeviceAddress(rawValue: 2)))
        XCTAssertEqual(l.counts(of: 1), ["badTag": 2, "rateLimited": 1])
        XCTAssertEqual(l.devices(of: 1, reason: "badTag"), 1)
        XCTAssertEqual(l.devices(of: 1), 1, "one device under two reasons is one")
        XCTAssertEqual(l.devices(of: 3), 0)
        XCTAssertEqual(l.pendingReports, 4)
        XCTAssertEqual(l.pending.count, 3, "one entry per question and reason")
        l.committed()
        XCTAssertEqual(l.pendingReports, 0)
        XCTAssertTrue(l.pendingCounts.isEmpty)
        XCTAssertEqual(l.counts(of: 1), ["badTag": 2, "rateLimited": 1], "committing keeps the counts")
    }

    func testACommitIsAskedForEveryBatch() {
        var l = RejectionLedger()
        var asked = 0
        for i in 0..<(3 * RejectionLedger.commitBatch) {
            if l.record("badTag", question: 1, from: DeviceAddress(rawValue: UInt64(i))) { asked += 1; l.committed() }
        }
        XCTAssertEqual(asked, 3)
    }

    /// A flood of forged addresses: the count goes on, the devices stop at the bound.
    func testDevicesAreBoundedAndCountsGoOn() {
        var l = RejectionLedger()
        let n = RejectionLedger.maxDevices + 1000
        for i in 0..<n { _ = l.record("badTag", question: 1, from: DeviceAddress(rawValue: UInt64(i))) }
        XCTAssertEqual(l.counts(of: 1)["badTag"], n)
        XCTAssertEqual(l.devices(of: 1, reason: "badTag"), RejectionLedger.maxDevices)
    }

    /// Counts read back from the store (a resumed poll) are packets only: their devices are unknown.
    func testStoredCountsHaveNoDevices() {
        var l = RejectionLedger(stored: [1: ["badTag": 5]])
        XCTAssertNil(l.devices(of: 1))
        XCTAssertNil(l.devices(of: 1, reason: "badTag"))
        XCTAssertEqual(l.pendingReports, 0, "stored counts are not committed again")
        _ = l.record("badTag", question: 1, from: DeviceAddress(rawValue: 1))
        XCTAssertEqual(l.counts(of: 1)["badTag"], 6)
        XCTAssertEqual(l.devices(of: 1), 1, "once the reason's devices are known again")
    }
}
