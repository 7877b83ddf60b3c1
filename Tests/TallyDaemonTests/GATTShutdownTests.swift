import ClickerTally
import ClickerTransport
import ClickerWire
import TallyDaemon
import XCTest

final class GATTShutdownTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    /// Reads queued when the tally stops are dropped: no connection is made for them (on BlueZ each
    /// read is a Device1.Connect; 48 connections were made at exit with 50 voters).
    func testQueuedReadsAreDroppedAtShutdown() async throws {
        let central = RecordingCentral()
        let pollKey = BallotKey.anonymous(PollSecret(deriving: code))
        let controller = try PollController(options: PollOptions(joinCode: code, maxConcurrentReads: 1), store: nil)
        let run = Task { try await controller.run(central: central) }
        await central.running(controller)
        var started = central.readsStarted.makeAsyncIterator()
        // Twenty voters, each counted unverified: twenty reads asked for, one at a time.
        for v in UInt32(1)...20 {
            let b = Ballot(voteID: code.voteID, question: 1, voterID: v, sequence: 1, answer: .choice(1))
            await controller.ingest(AdvertisementReport(
                address: DeviceAddress(rawValue: UInt64(v)), rssi: -60, companyID: BallotFormat.companyID,
                data: BallotCodec.sealAdvertisement(b, key: pollKey), timestamp: .zero))
        }
        let first = await started.next()
        XCTAssertEqual(first, DeviceAddress(rawValue: 1))
        run.cancel()
        _ = try? await run.value
        XCTAssertEqual(central.readDevices, [DeviceAddress(rawValue: 1)], "only the read in flight was started")
        let voters = await controller.results().voters
        XCTAssertEqual(voters, 20)
    }
}
