import ClickerLedger
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import Logging
import PostgresClient
import PostgresTestSupport
@testable import Receivers
import TallyDaemon
import XCTest

/// A question closed in the ledger takes no more ballots from anyone, receivers stop counting it, and
/// the linked tally closes it there once the ledger has every ballot of it the tally counted.
final class LedgerQuestionCloseTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func ballot(_ voter: UInt32, question: UInt8 = 1, sequence: UInt16 = 1, answer: UInt8, poll: Int64) -> LedgerBallot {
        LedgerBallot(poll: poll, question: question, voter: VoterKey(mode: .anonymous, voterID: voter), sequence: sequence,
                     answer: .choice(answer), verified: false, heardAt: Int64(voter), address: DeviceAddress(rawValue: UInt64(voter)))
    }

    func report(_ voter: UInt32, answer: UInt8, question: UInt8 = 1, at ms: UInt64) -> AdvertisementReport {
        anonymousReport(code, voter: voter, answer: answer, question: question, at: ms)
    }

    /// After the close, a receiver's batch of 100 new and 100 changed ballots of the question changes
    /// nothing of it, while the next question's 100 in the same batch count; a receiver's token may not
    /// close a question.
    func testAClosedQuestionTakesNoBallotsFromAnyWriterAndTheRestOfTheBatchCounts() throws {
        let url = try SharedServer.database()
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 1, voteID: code.voteID, policy: .latestWins, specs: [.choice(1), .choice(2)])
        try instructor.write(batch: (UInt32(1)...100).map { ballot($0, answer: 0, poll: 1) })
        let tokenURL = try instructor.issueReceiverToken(poll: 1, validUntil: Int64(Date().timeIntervalSince1970) + 3600)
            .url(replacingCredentialsOf: url)
        let receiver = try BallotLedger(url: tokenURL, migrate: false)
        XCTAssertThrowsError(try receiver.closeQuestion(poll: 1, question: 1), "a receiver closed a question") { error in
            XCTAssertEqual(sqlState(error), "42501", "\(error)")
        }
        XCTAssertEqual(try instructor.closeQuestion(poll: 1, question: 1), true)
        XCTAssertEqual(try instructor.closeQuestion(poll: 1, question: 1), false, "closed already")
        XCTAssertThrowsError(try instructor.closeQuestion(poll: 1, question: 9)) {
            XCTAssertEqual($0 as? LedgerError, .unknownQuestion(poll: 1, question: 9))
        }
        let before = try instructor.counted(poll: 1, question: 1)

        let late = (UInt32(101)...200).map { ballot($0, answer: 1, poll: 1) }
        let changed = (UInt32(1)...100).map { ballot($0, sequence: 2, answer: 3, poll: 1) }
        let next = (UInt32(1)...100).map { ballot($0, question: 2, answer: 2, poll: 1) }
        try receiver.write(batch: late + changed + next)
        try instructor.write(ballot(300, answer: 1, poll: 1))   // nor from the instructor's role
        // A stolen token's own SQL, not the ledger's upsert: 100 rows rewritten and 100 inserted, none taken;
        // nor may it reopen the question.
        let raw = try PostgresConnection(url: tokenURL)
        XCTAssertEqual(try raw.execute("UPDATE ballots SET answer = '\\x010003'::bytea, verified = true WHERE poll_id = 1 AND question = 1").affected, 0)
        XCTAssertEqual(try raw.execute("""
            INSERT INTO ballots (poll_id, question, voter_mode, voter_id, sequence, answer, verified, heard_at, address)
            SELECT 1, 1, 0, v, 9, '\\x010002'::bytea, true, 1, '\\x000000000001'::bytea FROM generate_series(1000, 1099) v
            """).affected, 0)
        XCTAssertThrowsError(try raw.execute("UPDATE questions SET closed_at = NULL WHERE poll_id = 1")) {
            XCTAssertEqual(($0 as? PostgresError)?.sqlState, "42501", "\($0)")
        }

        XCTAssertEqual(try instructor.counted(poll: 1, question: 1), before, "question 1 as it was at its close")
        XCTAssertEqual(try instructor.counts(poll: 1, question: 1), [.choice(0): 100])
        XCTAssertEqual(try instructor.counts(poll: 1, question: 2), [.choice(2): 100], "the batch's other ballots count")
        XCTAssertEqual(try receiver.closedQuestions(poll: 1), [1], "a receiver reads which questions are closed")
    }

    /// A receiver stops counting a question the ledger closed, once it looks (at most a second of its
    /// clock later), and one that joins after the close never counts it.
    func testAReceiverStopsCountingAClosedQuestion() async throws {
        let url = try SharedServer.database()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 2, voteID: code.voteID, policy: .latestWins, specs: [.choice(1), .choice(2)])
        let token = try instructor.issueReceiverToken(poll: 2, validUntil: Int64(Date().timeIntervalSince1970) + 3600)
        let clock = TestClock()
        let receiver = try await LedgerReceiver.join(url: token.url(replacingCredentialsOf: url), secret: pollSecret(code),
                                                     journalPath: dir + "/r.sqlite", radioEpoch: 0, clock: clock)
        await receiver.take((UInt32(1)...20).map { report($0, answer: 0, at: UInt64($0)) })
        var status = await receiver.sync()
        XCTAssertEqual(status.shipped, 20)

        try instructor.closeQuestion(poll: 2, question: 1)
        clock.advance(by: .seconds(1))
        status = await receiver.sync()
        XCTAssertEqual(status.closedQuestions, [1])
        await receiver.take((UInt32(21)...40).map { report($0, answer: 1, at: 100 + UInt64($0)) }
                            + (UInt32(1)...20).map { report($0, answer: 2, question: 2, at: 200 + UInt64($0)) })
        let (counted, open) = (await receiver.ballotsCounted, await receiver.pipeline.tally.openQuestions)
        XCTAssertEqual(counted, 40, "question 2's 20 only")
        XCTAssertEqual(open, [2])
        status = await receiver.finish()
        XCTAssertEqual(status.shipped, 40)
        XCTAssertEqual(try instructor.counts(poll: 2, question: 1), [.choice(0): 20])

        let later = try await LedgerReceiver.join(url: token.url(replacingCredentialsOf: url), secret: pollSecret(code),
                                                  journalPath: dir + "/r2.sqlite", radioEpoch: 0, clock: TestClock())
        await later.take((UInt32(41)...60).map { report($0, answer: 1, at: 300 + UInt64($0)) })
        let laterCounted = await later.ballotsCounted
        XCTAssertEqual(laterCounted, 0, "joined after the close: question 1 is not counted")
        _ = await later.finish()
    }

    /// The linked tally closes its question in the ledger when it moves on, after the ledger has its
    /// 50 ballots of it; a receiver's 30 written after that are not in the ledger, nor in the tally.
    func testTheTallyClosesItsQuestionInTheLedgerAfterItsBallotsOfIt() async throws {
        let url = try SharedServer.database()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.beacon = .off
        let controller = try PollController(options: options, store: nil)
        let link = try await TallyLedgerLink.start(url: url, poll: 3, controller: controller, journalPath: dir + "/t.sqlite", radioEpoch: 0)
        let linked = Task { await link.run(logger: Logger(label: "test")) }
        for v in UInt32(1)...50 { await controller.ingest(report(v, answer: UInt8(v % 4), at: UInt64(v))) }
        try await controller.nextQuestion()
        let instructor = try BallotLedger(url: url, migrate: false)
        // The close runs on the link's writer and announces nothing here: polled, with a hang guard.
        try await eventually("question 1 closed in the ledger", timeout: .seconds(30)) {
            (try? instructor.closedQuestions(poll: 3)) == [1]
        }
        XCTAssertEqual(try instructor.counted(poll: 3, question: 1).count, 50, "every ballot of it the tally counted, before the close")
        XCTAssertEqual(try instructor.questions(poll: 3).map(\.number), [1, 2])

        let receiver = try BallotLedger(url: instructor.issueReceiverToken(poll: 3, validUntil: Int64(Date().timeIntervalSince1970) + 3600)
                                            .url(replacingCredentialsOf: url), migrate: false)
        try receiver.write(batch: (UInt32(101)...130).map { ballot($0, answer: 1, poll: 3) } + [ballot(131, question: 2, answer: 0, poll: 3)])
        try await until(controller.changeFeed.subscribe(), "the receiver's question-2 ballot counted", timeout: .seconds(30)) {
            await controller.results(question: 2).voters == 1
        }
        XCTAssertEqual(try instructor.counted(poll: 3, question: 1).count, 50)
        let q1 = await controller.results(question: 1).voters
        XCTAssertEqual(q1, 50)
        let status = await link.finish().status
        linked.cancel()
        await linked.value
        XCTAssertEqual(status.shipped, 50)
        XCTAssertEqual(status.journaled, 0)
    }

    /// A tally that starts past a question (a resumed poll, or `--question 2`) closes it in the ledger,
    /// where `ledger open --questions` registered the whole set; the later ones stay open.
    func testATallyStartedPastAQuestionClosesItInTheLedger() async throws {
        let url = try SharedServer.database()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try BallotLedger(url: url).register(poll: 4, voteID: code.voteID, policy: .latestWins, specs: [.choice(1), .choice(2), .choice(3)])
        var options = PollOptions(joinCode: code, firstQuestion: 2, confirmByGATT: false)
        options.beacon = .off
        let controller = try PollController(options: options, store: nil)
        let link = try await TallyLedgerLink.start(url: url, poll: 4, controller: controller, journalPath: dir + "/t.sqlite", radioEpoch: 0)
        let linked = Task { await link.run(logger: Logger(label: "test")) }
        let instructor = try BallotLedger(url: url, migrate: false)
        try await eventually("question 1 closed in the ledger", timeout: .seconds(30)) {
            (try? instructor.closedQuestions(poll: 4)) == [1]
        }
        _ = await link.finish()
        linked.cancel()
        await linked.value
        XCTAssertEqual(try instructor.closedQuestions(poll: 4), [1], "questions 2 and 3 stay open")
    }
}
