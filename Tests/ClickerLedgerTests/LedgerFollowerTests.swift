import ClickerLedger
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import PostgresTestSupport
import Receivers
import XCTest

/// The instructor's follower of a poll in the ledger: every receiver's commits reach it by
/// LISTEN/NOTIFY, within a second.
final class LedgerFollowerTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func testTheFollowerHasEveryReceiversCommitWithinASecond() async throws {
        let url = try SharedServer.database()
        let secret = pollSecret(code)
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 12, voteID: secret.voteID, policy: .latestWins, specs: [.choice(1)])
        try instructor.register(poll: 13, voteID: 99, policy: .latestWins, questions: [1])
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var receivers: [LedgerReceiver] = []
        for k in 0..<3 {
            let token = try instructor.issueReceiverToken(poll: 12, validUntil: Int64(Date().timeIntervalSince1970) + 3600)
            receivers.append(try await LedgerReceiver.join(url: token.url(replacingCredentialsOf: url), secret: secret,
                                                           journalPath: "\(directory)/r\(k).sqlite", radioEpoch: 0, clock: TestClock()))
        }
        let follower = try XCTUnwrap(LedgerFollower(url: url, poll: 12))
        // A hang guard only: a follower that never reads again is stopped, which ends its readings.
        let watchdog = Task { try await Task.sleep(for: .seconds(60)); await follower.stop() }
        defer { watchdog.cancel() }
        var readings = follower.readings.makeAsyncIterator()
        let first = await readings.next()
        XCTAssertEqual(first, LedgerFollower.Reading(counts: [:], error: nil))

        var rng = SplitMix64(seed: 12)
        var latencies: [Duration] = []
        var voters = 0
        for round in 0..<30 {
            // Receiver `round % 3` counts ten more voters; another poll's ballot is written too.
            let reports = (0..<10).map { i -> AdvertisementReport in
                let sealer = BallotSealer(secret: secret, deviceKey: DeviceKey.generate(using: &rng))
                return AdvertisementReport(address: DeviceAddress(rawValue: UInt64(round * 10 + i + 1)), rssi: -60,
                                           companyID: BallotFormat.companyID,
                                           data: sealer.advertisement(question: 1, sequence: 1, answer: .choice(UInt8(i % 3))),
                                           timestamp: RadioInstant(nanoseconds: UInt64(round * 10 + i) * 1_000_000))
            }
            try instructor.write(LedgerBallot(poll: 13, question: 1, voter: VoterKey(mode: .anonymous, voterID: UInt32(round)), sequence: 1,
                                              answer: .choice(0), verified: false, heardAt: 0, address: DeviceAddress(rawValue: 1)))
            let start = ContinuousClock.now
            await receivers[round % 3].take(reports)
            let status = await receivers[round % 3].sync()
            XCTAssertNil(status.databaseError)
            voters += 10
            var got: LedgerFollower.Reading?
            while let r = await readings.next() {
                if r.counts[1]?.values.reduce(0, +) == voters { got = r; break }
            }
            latencies.append(ContinuousClock.now - start)
            let counts = try XCTUnwrap(got, "round \(round): the follower never had \(voters) voters").counts
            XCTAssertEqual(counts, try instructor.counts(poll: 12), "round \(round)")
            XCTAssertNil(counts[2])
        }
        let slowest = try XCTUnwrap(latencies.max())
        XCTAssertLessThan(slowest, .seconds(1), "from a receiver's batch to the follower's counts")
        print("follower: slowest of 30 rounds \(slowest), median \(latencies.sorted()[15])")
        await follower.stop()
        for r in receivers { _ = await r.finish() }
    }

    func testTheFollowerSaysWhenTheLedgerIsAwayAndFollowsAgainWhenItIsBack() async throws {
        _ = try SharedServer.get()   // skips, or fails under CLICKER_REQUIRE_POSTGRES=1, without server binaries
        SharedServer.stop()
        let server = try PostgresTestServer()
        defer { server.stop() }
        let url = try server.makeDatabase("follow")
        try BallotLedger(url: url).register(poll: 3, voteID: 3, policy: .latestWins, questions: [1])
        let follower = try XCTUnwrap(LedgerFollower(url: url, poll: 3, retryInterval: .milliseconds(50)))
        let watchdog = Task { try await Task.sleep(for: .seconds(60)); await follower.stop() }   // a hang guard only
        defer { watchdog.cancel() }
        var readings = follower.readings.makeAsyncIterator()
        let first = await readings.next()
        XCTAssertEqual(first?.counts, [:])

        try server.halt()
        let away = await readings.next()
        XCTAssertNotNil(away?.error, "the follower says the ledger is away")
        try server.start()
        // Readings with an error until a connection succeeds (the server's goodbye, then refusals).
        var back = await readings.next()
        while let r = back, r.error != nil { back = await readings.next() }
        XCTAssertEqual(back, LedgerFollower.Reading(counts: [:], error: nil))
        try BallotLedger(url: url).write(LedgerBallot(poll: 3, question: 1, voter: VoterKey(mode: .anonymous, voterID: 5), sequence: 1,
                                                      answer: .choice(1), verified: false, heardAt: 0, address: DeviceAddress(rawValue: 5)))
        let after = await readings.next()
        XCTAssertEqual(after?.counts, [1: [.choice(1): 1]])
        await follower.stop()
        let end = await readings.next()
        XCTAssertNil(end, "the readings finish when the follower stops")
    }
}
