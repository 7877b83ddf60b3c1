import ClickerLedger
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import PostgresTestSupport
import Receivers
import XCTest

/// A receiver that loses the database keeps counting into its journal and ships it when the
/// database is back: nothing lost, nothing twice. The database is a real PostgreSQL server of this
/// test's own, stopped and started again mid-run.
final class ReceiverJournalTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    /// A server of this test's own (the shared one must not go away under other tests).
    func privateServer() throws -> PostgresTestServer {
        _ = try SharedServer.get()   // skips, or fails under CLICKER_REQUIRE_POSTGRES=1, without server binaries
        SharedServer.stop()
        return try PostgresTestServer()
    }

    /// Voter `i`'s ballot, heard at `ms` milliseconds from its own address.
    func report(_ sealers: [BallotSealer], _ i: Int, sequence: UInt16, answer: Int, ms: UInt64) -> AdvertisementReport {
        AdvertisementReport(address: DeviceAddress(rawValue: UInt64(i) + 1), rssi: -60, companyID: BallotFormat.companyID,
                            data: sealers[i].advertisement(question: 1, sequence: sequence, answer: .choice(UInt8(answer % 4))),
                            timestamp: RadioInstant(nanoseconds: ms * 1_000_000))
    }

    func testAReceiverCutOffFromTheDatabaseJournalsAndShipsEverythingOnceWhenItIsBack() async throws {
        let server = try privateServer()
        defer { server.stop() }
        let url = try server.makeDatabase("journal")
        let secret = pollSecret(code)
        try BallotLedger(url: url).register(poll: 7, voteID: secret.voteID, policy: .latestWins, specs: [.choice(1)])
        let token = try BallotLedger(url: url).issueReceiverToken(poll: 7, validUntil: Int64(Date().timeIntervalSince1970) + 86_400)
        let receiverURL = token.url(replacingCredentialsOf: url)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let journal = directory + "/journal.sqlite"
        let clock = TestClock()

        var rng = SplitMix64(seed: 7)
        let sealers = (0..<300).map { _ in BallotSealer(secret: secret, deviceKey: DeviceKey.generate(using: &rng)) }
        XCTAssertEqual(Set(sealers.map(\.voterID)).count, 300)
        var everything: [AdvertisementReport] = []
        var receiver = try await LedgerReceiver.join(url: receiverURL, secret: secret, journalPath: journal, radioEpoch: 0, clock: clock)
        func hear(_ reports: [AdvertisementReport]) async {
            everything += reports
            await receiver.take(reports)
        }

        var info = stat()
        XCTAssertEqual(stat(journal, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600, "the journal is its owner's only")

        // The database takes the first hundred.
        await hear((0..<100).map { report(sealers, $0, sequence: 1, answer: $0, ms: UInt64($0)) })
        var status = await receiver.sync()
        XCTAssertEqual([status.shipped, status.journaled, status.connections], [100, 0, 1])
        XCTAssertNil(status.databaseError)

        // The database goes away: the next hundred, and thirty changed answers, go to the journal.
        try server.halt()
        await hear((100..<200).map { report(sealers, $0, sequence: 1, answer: $0, ms: 1_000 + UInt64($0)) }
                   + (0..<30).map { report(sealers, $0, sequence: 2, answer: $0 + 1, ms: 2_000 + UInt64($0)) })
        status = await receiver.sync()
        XCTAssertNotNil(status.databaseError)
        XCTAssertEqual([status.shipped, status.journaled], [100, 130])
        // No retry before the receiver's clock says one is due, though more arrives.
        await hear((200..<250).map { report(sealers, $0, sequence: 1, answer: $0, ms: 3_000 + UInt64($0)) })
        status = await receiver.sync()
        XCTAssertEqual([status.shipped, status.journaled, status.connections], [100, 180, 1])

        // The receiver stops while the database is away; its journal keeps what it counted.
        _ = await receiver.finish()
        let counted1 = await receiver.ballotsCounted
        XCTAssertEqual(counted1, 280)

        // The database is back; a receiver started again on the same journal ships it all.
        try server.start()
        receiver = try await LedgerReceiver.join(url: receiverURL, secret: secret, journalPath: journal, radioEpoch: 0, clock: clock)
        await hear((250..<300).map { report(sealers, $0, sequence: 1, answer: $0, ms: 4_000 + UInt64($0)) })
        status = await receiver.sync()
        XCTAssertNil(status.databaseError)
        XCTAssertEqual([status.shipped, status.journaled, status.connections], [230, 0, 1], "the 180 journaled and the 50 new")

        // It goes away again under a connected receiver, and comes back before the retry is due.
        try server.halt()
        await hear((30..<60).map { report(sealers, $0, sequence: 2, answer: $0 + 1, ms: 5_000 + UInt64($0)) })
        status = await receiver.sync()
        XCTAssertEqual([status.shipped, status.journaled], [230, 30])
        try server.start()
        status = await receiver.sync()
        XCTAssertEqual([status.journaled, status.connections], [30, 1], "not retried before its time")
        clock.advance(by: .seconds(1))
        status = await receiver.sync()
        XCTAssertEqual([status.shipped, status.journaled, status.connections], [260, 0, 2])
        _ = await receiver.finish()
        let counted2 = await receiver.ballotsCounted
        XCTAssertEqual(counted1 + counted2, 360, "300 first answers and 60 changes")

        // The ledger holds what one tally that heard everything counts: nothing lost, nothing twice.
        var reference = IngestPipeline(secret: secret)
        reference.tally.open(.choice(1))
        for r in everything { _ = reference.ingest(r) }
        let ledger = try BallotLedger(url: url)
        let counted = try ledger.counted(poll: 7, question: 1)
        let expected = try XCTUnwrap(reference.tally.question(1)).voters
        XCTAssertEqual(counted.count, 300)
        XCTAssertEqual(Set(counted.keys), Set(expected.keys))
        for (voter, record) in expected {
            XCTAssertEqual(counted[voter]?.answer, record.answer, "\(voter)")
            XCTAssertEqual(counted[voter]?.sequence, record.sequence, "\(voter)")
            XCTAssertEqual(counted[voter]?.heardAt, Int64(record.lastHeard.nanoseconds / 1000), "\(voter): heard once, when counted")
        }
        XCTAssertEqual(try ledger.counts(poll: 7, question: 1), reference.tally.question(1)?.counts)
        XCTAssertEqual(try ledger.counts(poll: 7, question: 1).values.reduce(0, +), 300)
    }
}
