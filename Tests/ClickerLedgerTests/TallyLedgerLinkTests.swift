import ClickerLedger
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import Logging
import PostgresTestSupport
import Receivers
import TallyDaemon
import XCTest

/// The instructor's tally in a poll that receivers count into the ledger: it counts their ballots
/// with its own, once each, and the ledger gets its own.
final class TallyLedgerLinkTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func report(_ voter: UInt32, sequence: UInt16 = 1, answer: UInt8, question: UInt8 = 1, at ms: UInt64) -> AdvertisementReport {
        anonymousReport(code, voter: voter, sequence: sequence, answer: answer, question: question, at: ms)
    }

    /// An anonymous poll without a beacon, linked to poll `poll` of the ledger at `url` and running the
    /// link (the returned task): the journal in `dir`, the poll on `clock`.
    func linkedTally(url: String, poll: Int64, dir: String, clock: PollClock = PollClock(ContinuousClock()),
                     radioEpoch: Int64 = 0) async throws -> (PollController, TallyLedgerLink, Task<Void, Never>) {
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.beacon = .off
        let controller = try PollController(options: options, store: nil, clock: clock)
        let link = try await TallyLedgerLink.start(url: url, poll: poll, controller: controller, journalPath: dir + "/tally.sqlite",
                                                   radioEpoch: radioEpoch)
        return (controller, link, Task { await link.run(logger: Logger(label: "test")) })
    }

    func testTheTallyCountsEveryReceiversBallotsWithItsOwnOnceEachAndTheLedgerHasItsOwn() async throws {
        let url = try SharedServer.database()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (controller, link, linked) = try await linkedTally(url: url, poll: 9, dir: dir, radioEpoch: 1_764_000_000_000_000)
        let instructor = try BallotLedger(url: url)
        XCTAssertEqual(try instructor.questions(poll: 9).map(\.number), [1], "the tally registered its poll and question")

        // A receiver with its token hears voters 101–300 and 50 of the tally's (51–100), one changing.
        let token = try instructor.issueReceiverToken(poll: 9, validUntil: Int64(Date().timeIntervalSince1970) + 3600)
        let receiver = try await LedgerReceiver.join(url: token.url(replacingCredentialsOf: url), secret: pollSecret(code),
                                                     journalPath: dir + "/receiver.sqlite", radioEpoch: 1_764_000_000_000_000,
                                                     clock: TestClock())
        // The tally's own radio: voters 1–100; voters 1–10 change to B.
        for v in UInt32(1)...100 { await controller.ingest(report(v, answer: 0, at: UInt64(v))) }
        for v in UInt32(1)...10 { await controller.ingest(report(v, sequence: 2, answer: 1, at: 200 + UInt64(v))) }
        await receiver.take((UInt32(51)...300).map { report($0, answer: UInt8($0 % 4), at: 300 + UInt64($0)) })
        await receiver.take([report(60, sequence: 3, answer: 3, at: 700)])
        let shipped = await receiver.finish()
        XCTAssertEqual(shipped.journaled, 0)

        // Voters 51–100 heard by both: the receiver's ballot for them is the tally's own (same sequence and
        // answer; voter 60 changed only there); voters 1–10 changed only here.
        var expected: [UInt32: (UInt16, UInt8)] = [:]
        for v in UInt32(1)...300 { expected[v] = v <= 10 ? (2, 1) : v <= 50 ? (1, 0) : v <= 100 ? (1, 0) : (1, UInt8(v % 4)) }
        expected[60] = (3, 3)
        try await until(controller.changeFeed.subscribe(), "the tally counts every receiver's ballots", timeout: .seconds(30)) {
            let r = await controller.results()
            return r.voters == 300 && r.changes == 11
        }
        let r = await controller.results()
        for v in UInt32(1)...300 {
            guard let (seq, answer) = expected[v] else { continue }
            let row = r.ballots.first { $0.voter == IDText.voter(v) }
            XCTAssertEqual(row?.sequence, Int(seq), "voter \(v)")
            XCTAssertEqual(row?.answer, Answer.choice(answer).description, "voter \(v)")
        }
        XCTAssertEqual(r.rejected, [:])

        // Roster ballots in the ledger (no receiver writes one: receivers hold no roster; a stolen token
        // could) are not counted, 300 of them; the anonymous one committed with them is.
        func written(_ mode: BallotMode, _ voter: UInt32) -> LedgerBallot {
            LedgerBallot(poll: 9, question: 1, voter: VoterKey(mode: mode, voterID: voter), sequence: 1, answer: .choice(2),
                         verified: mode == .roster, heardAt: 1, address: DeviceAddress(rawValue: UInt64(voter)))
        }
        try instructor.write(batch: (UInt32(5000)..<5300).map { written(.roster, $0) } + [written(.anonymous, 400)])
        try await until(controller.changeFeed.subscribe(), "the anonymous ballot beside it counted", timeout: .seconds(30)) {
            await controller.results().voters == 301
        }
        expected[400] = (1, 2)

        // The ledger has the tally's own ballots too: it and the tally count the same.
        let status = await link.finish().status
        linked.cancel()
        await linked.value
        XCTAssertEqual(status.journaled, 0)
        XCTAssertEqual(status.shipped, 110, "the tally's own 100 voters and 10 changes, not the receiver's ballots")
        let final = await controller.results()
        XCTAssertNil(final.ballots.first { (5000..<5300).map(IDText.voter).contains($0.voter) }, "a roster ballot was counted")
        let counted = try instructor.counted(poll: 9, question: 1).filter { $0.key.mode == .anonymous }
        XCTAssertEqual(counted.count, 301)
        for (voter, (seq, answer)) in expected {
            let c = counted[VoterKey(mode: .anonymous, voterID: voter)]
            XCTAssertEqual(c?.sequence, seq, "voter \(voter)")
            XCTAssertEqual(c?.answer, .choice(answer), "voter \(voter)")
        }
        var tallyCounts: [Answer: Int] = [:]
        for (a, n) in final.counts where n > 0 { tallyCounts[try Answer(parsing: a)] = n }
        var ledgerCounts: [Answer: Int] = [:]
        for c in counted.values { ledgerCounts[c.answer, default: 0] += 1 }
        XCTAssertEqual(ledgerCounts, tallyCounts)
    }

    /// The final results hold every ballot the ledger committed before the stop, also those the
    /// follower never handed over: here the link never runs, so its last read is the only way in.
    /// 250 receivers' ballots, 5 of them changed, 100 the tally heard too, and 20 roster ballots that stay out.
    func testTheLastReadAtTheStopCountsWhatTheFollowerHadNotHandedOver() async throws {
        let url = try SharedServer.database()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.beacon = .off
        let controller = try PollController(options: options, store: nil)
        let link = try await TallyLedgerLink.start(url: url, poll: 12, controller: controller, journalPath: dir + "/tally.sqlite",
                                                   radioEpoch: 0)
        for v in UInt32(1)...100 { await controller.ingest(report(v, answer: 0, at: UInt64(v))) }
        let instructor = try BallotLedger(url: url)
        let token = try instructor.issueReceiverToken(poll: 12, validUntil: Int64(Date().timeIntervalSince1970) + 3600)
        let receiver = try BallotLedger(url: token.url(replacingCredentialsOf: url), migrate: false)
        func written(_ voter: UInt32, _ sequence: UInt16, _ answer: UInt8, _ mode: BallotMode = .anonymous) -> LedgerBallot {
            LedgerBallot(poll: 12, question: 1, voter: VoterKey(mode: mode, voterID: voter), sequence: sequence, answer: .choice(answer),
                         verified: false, heardAt: 1, address: DeviceAddress(rawValue: UInt64(voter)))
        }
        // Voters 1–100 as the tally heard them (its own, also shipped by its writer), 101–250 new, 101–105 changed.
        try receiver.write(batch: (UInt32(1)...250).map { written($0, 1, $0 <= 100 ? 0 : UInt8($0 % 4)) })
        try receiver.write(batch: (UInt32(101)...105).map { written($0, 2, 3) })
        try instructor.write(batch: (UInt32(9000)..<9020).map { written($0, 1, 1, .roster) })
        let (status, caughtUp) = await link.finish()
        XCTAssertNil(status.databaseError)
        XCTAssertEqual(caughtUp, 150, "the 150 new voters, and nothing for the 100 the tally had")
        let r = await controller.results()
        XCTAssertEqual(r.voters, 250)
        var expected: [String: Int] = ["A": 100, "B": 0, "C": 0, "D": 0]
        for v in UInt32(101)...250 { expected[["A", "B", "C", "D"][v <= 105 ? 3 : Int(v % 4)], default: 0] += 1 }
        XCTAssertEqual(r.counts, expected)
        XCTAssertNil(r.ballots.first { (9000..<9020).map(IDText.voter).contains($0.voter) }, "a roster ballot was counted")
    }

    /// A ledger that is down at the stop: the last read is skipped, and the summary says the results
    /// may lack receivers' last ballots (`caughtUp` nil); the tally's own ballots are all there.
    func testTheLastReadIsSkippedWhenTheLedgerIsDownAtTheStop() async throws {
        _ = try SharedServer.get()   // skips, or fails under CLICKER_REQUIRE_POSTGRES=1, without server binaries
        SharedServer.stop()
        let server = try PostgresTestServer()   // of this test's own: it goes away
        defer { server.stop() }
        let url = try server.makeDatabase("down-at-stop")
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.beacon = .off
        let controller = try PollController(options: options, store: nil)
        let link = try await TallyLedgerLink.start(url: url, poll: 13, controller: controller, journalPath: dir + "/tally.sqlite",
                                                   radioEpoch: 0)
        try server.halt()
        for v in UInt32(1)...30 { await controller.ingest(report(v, answer: 1, at: UInt64(v))) }
        let (status, caughtUp) = await link.finish()
        XCTAssertNil(caughtUp)
        XCTAssertEqual(status.journaled, 30, "kept in the journal for the next run")
        XCTAssertNotNil(status.databaseError)
        let voters = await controller.results().voters
        XCTAssertEqual(voters, 30)
    }

    /// Receivers hold no roster: a roster poll is refused, saying why.
    func testARosterPollIsRefused() async throws {
        let url = try SharedServer.database()
        let roster = try Roster(entries: [RosterEntry(name: "Ada", studentID: "s1", enrollment: DeviceKey.generate().enrollmentCode)])
        let controller = try PollController(options: PollOptions(joinCode: code, roster: roster, confirmByGATT: false), store: nil)
        do {
            _ = try await TallyLedgerLink.start(url: url, poll: 4, controller: controller, journalPath: "/nonexistent/j.sqlite", radioEpoch: 0)
            XCTFail("a roster poll was linked")
        } catch {
            XCTAssertEqual(error as? ReceiverError, .rosterPoll)
            XCTAssertTrue("\(error)".contains("receivers count anonymous polls only"), "\(error)")
        }
        XCTAssertEqual(try BallotLedger(url: url).questions(poll: 4), [], "nothing registered")
    }

    /// The next question the tally opens is registered, so that receivers count it.
    func testTheNextQuestionIsRegisteredForTheReceivers() async throws {
        let url = try SharedServer.database()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (controller, link, linked) = try await linkedTally(url: url, poll: 3, dir: dir)
        try await controller.nextQuestion()
        let instructor = try BallotLedger(url: url)
        // The registration runs on the link's worker and announces nothing here: polled, with a hang guard.
        try await eventually("question 2 registered", timeout: .seconds(30)) {
            (try? instructor.questions(poll: 3).map(\.number)) == [1, 2]
        }
        _ = await link.finish()
        linked.cancel()
        await linked.value
    }
    /// The ledger goes away mid-lecture: the tally keeps counting its own radio into its journal and
    /// ships it when the ledger is back (retries on the poll's clock, a `TestClock` here); the
    /// follower connects again and counts what a receiver wrote after the restart. Nothing lost.
    func testTheTallyKeepsCountingWhileTheLedgerIsAwayAndShipsItsBallotsWhenItIsBack() async throws {
        _ = try SharedServer.get()   // skips, or fails under CLICKER_REQUIRE_POSTGRES=1, without server binaries
        SharedServer.stop()
        let server = try PostgresTestServer()   // of this test's own: it goes away and comes back
        defer { server.stop() }
        let url = try server.makeDatabase("away")
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let clock = TestClock()
        let (controller, link, linked) = try await linkedTally(url: url, poll: 2, dir: dir, clock: PollClock(clock))
        let instructor = { try BallotLedger(url: url, migrate: false) }
        func inLedger() -> Int { (try? instructor().counted(poll: 2, question: 1).count) ?? -1 }

        for v in UInt32(1)...50 { await controller.ingest(report(v, answer: 0, at: UInt64(v))) }
        try await eventually("the first 50 in the ledger", timeout: .seconds(30)) { inLedger() == 50 }

        try server.halt()
        for v in UInt32(51)...100 { await controller.ingest(report(v, answer: 1, at: 100 + UInt64(v))) }
        let meanwhile = await controller.results().voters
        XCTAssertEqual(meanwhile, 100, "counting goes on while the ledger is away")
        try server.start()
        // Retries are paced by the poll's clock: moved a second at a time until the journal is shipped.
        try await eventually("the 50 counted while the ledger was away are shipped", timeout: .seconds(60)) {
            clock.advance(by: .seconds(1))
            return inLedger() == 100
        }

        // A receiver writes 20 voters after the restart: the follower, connected again, brings them.
        let token = try instructor().issueReceiverToken(poll: 2, validUntil: Int64(Date().timeIntervalSince1970) + 3600)
        let receiver = try BallotLedger(url: token.url(replacingCredentialsOf: url), migrate: false)
        try receiver.write(batch: (UInt32(101)...120).map {
            LedgerBallot(poll: 2, question: 1, voter: VoterKey(mode: .anonymous, voterID: $0), sequence: 1, answer: .choice(2),
                         verified: false, heardAt: 1, address: DeviceAddress(rawValue: UInt64($0)))
        })
        try await until(controller.changeFeed.subscribe(), "the receiver's 20 counted by the tally", timeout: .seconds(60)) {
            await controller.results().voters == 120
        }
        let status = await link.finish().status
        linked.cancel()
        await linked.value
        XCTAssertEqual(status.journaled, 0, "nothing left in the tally's journal")
        XCTAssertEqual(status.shipped, 100, "each of its own ballots shipped once")
        XCTAssertGreaterThanOrEqual(status.connections, 2, "it connected again")
        XCTAssertEqual(inLedger(), 120)
        let counts = await controller.results().counts
        XCTAssertEqual(counts, ["A": 50, "B": 50, "C": 20, "D": 0])
    }
}
