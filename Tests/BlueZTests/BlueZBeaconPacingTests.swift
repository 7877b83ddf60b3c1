@testable import BlueZ
import ClickerTransport
import DBus
import XCTest

/// Tier 2: the beacon changes frames at the pace bluetoothd takes them (`CentralBroadcastPacing.swift`).
/// The fake bluetoothd carries out refreshes one at a time, each taking a set time, as bluetoothd does
/// with its management commands on a loaded host, and writes the TX power back after each.
extension BlueZBeaconTests {
    /// Payloads replaced four times faster than bluetoothd refreshes: without the wait for its write-back
    /// the refreshes queued (tens deep after a few seconds, the air that far behind). With it at most one
    /// frame change waits in bluetoothd, every frame it applied is reported taken, in its order, and the
    /// last payload asked for is what goes out when the replacements stop.
    func testFrameChangesWaitUntilBluetoothdTookTheOneBefore() async throws {
        try await startMock(#"{"refresh_delay_ms": 200}"#)
        let central = makeCentral()
        let taken = Collector(central.framesTaken())
        var last: [[UInt8]] = []
        for round in 0..<40 {
            last = Self.frames(3, seed: UInt8(round))
            try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: last, interval: .milliseconds(20)))
            try await Task.sleep(for: .milliseconds(50))
        }
        let final = last[0]
        let applied = try await eventuallyHistory(atLeast: 2) { $0.contains(final) }
        try await taken.wait("every applied frame reported") { $0.count >= applied.count }
        let stats = central.broadcastStatistics
        if stats.confirmationTimeouts == 0 {
            XCTAssertEqual(Array(taken.snapshot.prefix(applied.count).map(\.frame)), applied,
                           "the frames reported taken are those bluetoothd applied, in order")
        }
        try await central.stopBroadcasting()
        let after = central.broadcastStatistics
        let deepest = try await mock.mock("GetMaxRefreshQueue", [.string("hci0")]).decode(UInt32.self)
        XCTAssertGreaterThan(after.heldForConfirmation, 0, "changes came faster than bluetoothd took them")
        XCTAssertLessThanOrEqual(Int(deepest), 1 + after.confirmationTimeouts,
                                 "one frame change in bluetoothd at a time (one more per confirmation given up)")
        XCTAssertLessThanOrEqual(after.frameChanges, after.framesConfirmed + after.confirmationTimeouts,
                                 "each change but the last waited for the one before (the registration's is confirmed too)")
    }

    /// bluetoothd stops confirming (its writes lost, a controller that stops reporting its power): each
    /// unconfirmed change is given up after its wait, and the frames go on changing, one per wait.
    func testAConfirmationThatNeverComesDoesNotStopTheBeacon() async throws {
        try await startMock()
        let central = makeCentral()
        let frames = Self.frames(3)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: frames, interval: .milliseconds(20)))
        _ = try await eventuallyHistory(atLeast: 4)
        XCTAssertGreaterThan(central.broadcastStatistics.framesConfirmed, 0)
        try await mock.mock("SetTxPowerWriteBack", [.boolean(false)])
        let before = try await history().count
        // Given up after 1 s, then 2 s: the frames go on changing (the wait here only bounds a hang).
        try await eventually("frames change without confirmations", timeout: .seconds(30)) {
            try await self.history().count >= before + 2
        }
        XCTAssertGreaterThanOrEqual(central.broadcastStatistics.confirmationTimeouts, 1)
        try await central.stopBroadcasting()
    }

    /// The wait for a confirmation doubles with each one given up in a row, from 1 s to at most 8 s.
    func testTheWaitForAConfirmationDoublesUpToEightSeconds() {
        XCTAssertEqual((0...5).map { BlueZBeacon.confirmationWait(afterGivingUp: $0) },
                       [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8), .seconds(8)])
    }

    /// Where bluetoothd writes nothing back (a controller that reports no TX power, a Bluetooth 4 adapter),
    /// nothing is reported taken and the frames rotate at the dwell, as before.
    func testWithoutWriteBacksTheRotationKeepsItsDwell() async throws {
        try await startMock(#"{"tx_power_write_back": false}"#)
        let central = makeCentral()
        let taken = Collector(central.framesTaken())
        let frames = Self.frames(3)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: frames, interval: .milliseconds(20)))
        let history = try await eventuallyHistory(atLeast: 7)
        XCTAssertEqual(Array(history.prefix(7)), [frames[0], frames[1], frames[2], frames[0], frames[1], frames[2], frames[0]])
        try await central.stopBroadcasting()
        XCTAssertEqual(central.broadcastStatistics.framesConfirmed, 0)
        XCTAssertEqual(central.broadcastStatistics.heldForConfirmation, 0)
        XCTAssertEqual(taken.snapshot.count, 0)
    }
}
