import ClickerTally
import ClickerTransport
import ClickerWire
@testable import TallyDaemon
import XCTest

/// A central that delivers advertisements only in batches (as BlueZ does), through a ``ReportQueue``
/// the test fills; it has no single-report stream and no GATT client.
final class BatchCentral: CentralTransport {
    let queue = ReportQueue(limit: 1 << 16)

    func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        AsyncThrowingStream { $0.finish(throwing: TransportError.unsupported("this test central delivers batches only")) }
    }

    func advertisementBatches(companyID: UInt16) -> AdvertisementBatches { queue.batches }

    func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                            timeout: Duration) async throws -> [UInt8] {
        throw TransportError.unsupported("no GATT client on this radio")
    }

    func status() -> AsyncStream<RadioStatus> {
        AsyncStream { $0.yield(RadioStatus(adapter: "test", state: .scanning)) }
    }
}

final class BatchIngestTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    /// One batch of 30 reports is tallied report by report, in the batch's order: voters 1–10 send
    /// answer A then change to B (sequence 1, then 2) inside the batch, voters 11–20 send B once. In
    /// order that is 20 voters on B and 10 changes; reordered (B before A), the A ballots would be
    /// stale and no change counted; a lost report would leave a voter on A or uncounted.
    func testABatchDeliveredAtOnceIsCountedExactlyAndInOrder() async throws {
        let central = BatchCentral()
        let key = BallotKey.anonymous(pollSecret(code))
        let controller = try PollController(options: PollOptions(joinCode: code), store: nil)
        let run = Task { try await controller.run(central: central) }
        await controller.untilScanning()

        func report(_ voter: UInt32, sequence: UInt16, _ answer: Answer, at ms: UInt64) -> AdvertisementReport {
            let b = Ballot(voteID: code.voteID, question: 1, voterID: voter, sequence: sequence, answer: answer)
            return AdvertisementReport(address: DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(voter)), rssi: -60,
                                       companyID: BallotFormat.companyID, data: BallotCodec.sealAdvertisement(b, key: key),
                                       timestamp: RadioInstant(nanoseconds: ms * 1_000_000))
        }
        var batch: [AdvertisementReport] = []
        for v in UInt32(1)...10 { batch.append(report(v, sequence: 1, .choice(0), at: UInt64(batch.count))) }
        for v in UInt32(1)...10 { batch.append(report(v, sequence: 2, .choice(1), at: UInt64(batch.count))) }
        for v in UInt32(11)...20 { batch.append(report(v, sequence: 1, .choice(1), at: UInt64(batch.count))) }
        XCTAssertEqual(central.queue.append(contentsOf: batch), 0)

        // Acknowledged by the controller's own count; the deadline only turns a hang into a failure.
        let deadline = ContinuousClock.now + .seconds(30)
        while await controller.reportsHeard < batch.count && ContinuousClock.now < deadline { await Task.yield() }
        let heard = await controller.reportsHeard
        XCTAssertEqual(heard, batch.count, "every report of the batch taken in, none twice")
        let r = await controller.results()
        XCTAssertEqual(r.voters, 20)
        XCTAssertEqual(r.counts[Answer.choice(1).description], 20)
        XCTAssertEqual(r.counts[Answer.choice(0).description] ?? 0, 0)
        XCTAssertEqual(r.changes, 10, "the batch's reports were tallied in order")
        XCTAssertEqual(r.rejected.values.reduce(0, +), 0)

        // The run ends with the radio's stream; nothing queued before the end is lost.
        central.queue.append(contentsOf: [report(21, sequence: 1, .choice(2), at: 100)])
        central.queue.finish()
        try await run.value
        let last = await controller.results()
        XCTAssertEqual(last.voters, 21)
        XCTAssertEqual(last.counts[Answer.choice(2).description], 1)
    }
}
