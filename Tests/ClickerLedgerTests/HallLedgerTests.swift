import ClickerLedger
import ClickerSim
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import Receivers
import XCTest

/// Several receivers in one simulated hall, each hearing part of the room, writing to one ledger:
/// the ledger ends as one tally that heard everything.
final class HallLedgerTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func testThreeReceiversOfAHallWriteOneLedgerEqualToOneTallyThatHeardEverything() async throws {
        let url = try SharedServer.database()
        let secret = pollSecret(code)
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 41, voteID: secret.voteID, policy: .latestWins, specs: [.choice(1)])
        let token = try instructor.issueReceiverToken(poll: 41, validUntil: Int64(Date().timeIntervalSince1970) + 86_400)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }

        let hall = LectureHall(geometry: HallGeometry(rows: 30, seatsPerRow: 20), receivers: [.front, .middle, .back])
        let air = SimulatedAir(.hall(hall, seed: 43))
        let streams = air.centrals().map { $0.advertisements(companyID: BallotFormat.companyID) }
        var receivers: [LedgerReceiver] = []
        for k in 0..<3 {
            receivers.append(try await LedgerReceiver.join(url: token.url(replacingCredentialsOf: url), secret: secret,
                                                           journalPath: "\(directory)/receiver\(k).sqlite",
                                                           radioEpoch: 1_764_000_000_000_000, clock: TestClock()))
        }
        // 600 students answer; after 5 s every third changes their answer (a new sequence).
        var rng = SplitMix64(seed: 43)
        var voters: [(BallotSealer, SimulatedPeripheral)] = []
        var ids = Set<UInt32>()
        while voters.count < 600 {
            let sealer = BallotSealer(secret: secret, deviceKey: DeviceKey.generate(using: &rng))
            guard ids.insert(sealer.voterID).inserted else { continue }
            voters.append((sealer, air.addPeripheral()))
        }
        func advertise(_ i: Int, sequence: UInt16, answer: Int) async throws {
            let data = voters[i].0.advertisement(question: 1, sequence: sequence, answer: .choice(UInt8(answer % 4)))
            try await voters[i].1.advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: data,
                                                               interval: .milliseconds(100), connectable: false))
        }
        for i in 0..<600 { try await advertise(i, sequence: 1, answer: i) }
        air.run(until: RadioInstant(nanoseconds: 5_000_000_000))
        for i in stride(from: 0, to: 600, by: 3) { try await advertise(i, sequence: 2, answer: i + 1) }
        air.run(until: RadioInstant(nanoseconds: 10_000_000_000))
        air.finishAdvertisementStreams()
        var heard: [[AdvertisementReport]] = []
        for s in streams {
            var reports: [AdvertisementReport] = []
            for try await r in s { reports.append(r) }
            heard.append(reports)
        }

        // Each receiver takes what it heard in radio-sized batches, the three interleaved; the writers
        // run alongside, several passes each.
        let slice = 400
        for start in stride(from: 0, to: heard.map(\.count).max() ?? 0, by: slice) {
            for (k, reports) in heard.enumerated() where start < reports.count {
                await receivers[k].take(reports[start..<min(start + slice, reports.count)])
            }
            if start / slice % 25 == 0 { for r in receivers { await r.sync() } }
        }
        var shippedTotal = 0
        for r in receivers {
            let status = await r.finish()
            let counted = await r.ballotsCounted
            XCTAssertNil(status.databaseError)
            XCTAssertEqual(status.journaled, 0, "the journal is empty once the ledger has everything")
            XCTAssertEqual(status.shipped, counted, "every ballot counted was shipped once")
            XCTAssertGreaterThan(status.connections, 0)
            shippedTotal += status.shipped
        }

        // One tally that heard everything every receiver heard, in heard order.
        var reference = IngestPipeline(secret: secret)
        reference.tally.open(.choice(1))
        for r in heard.joined().sorted(by: { $0.timestamp < $1.timestamp }) { _ = reference.ingest(r) }
        let expected = try XCTUnwrap(reference.tally.question(1)).voters
        XCTAssertEqual(expected.count, 600)
        XCTAssertEqual(expected.values.filter { $0.sequence == 2 }.count, 200)

        let front = await receivers[0].pipeline.tally.question(1)?.voterCount ?? 0
        XCTAssertLessThan(front, 420, "the front receiver alone hears at most 70 %")
        XCTAssertGreaterThan(shippedTotal, 800, "seats heard by several receivers were written by each")

        let ledger = try instructor.counted(poll: 41, question: 1)
        XCTAssertEqual(Set(ledger.keys), Set(expected.keys))
        for (voter, record) in expected {
            XCTAssertEqual(ledger[voter]?.answer, record.answer, "\(voter)")
            XCTAssertEqual(ledger[voter]?.sequence, record.sequence, "\(voter)")
            XCTAssertEqual(ledger[voter]?.verified, false, "\(voter)")
        }
        XCTAssertEqual(try instructor.counts(poll: 41, question: 1), reference.tally.question(1)?.counts)
    }
}

/// A private directory for journals.
func temporaryDirectory() throws -> String {
    var template = Array("/tmp/clicker-receiver-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
    return String(cString: made)
}
