import ClickerStore
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import TallyDaemon
import XCTest

/// Which poll a controller runs: a new one on every start, `--resume` only when asked and only for a
/// recent poll, `newPoll()` in between, and never a join code the database already holds.
final class PollLifecycleTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    func store() throws -> ClickerStore {
        let dir = NSTemporaryDirectory() + "clicker-lifecycle-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
    }

    func options(_ c: JoinCode? = nil, policy: ChangePolicy = .latestWins) -> PollOptions {
        PollOptions(joinCode: c ?? code, policy: policy, confirmByGATT: false)
    }

    func testEveryStartIsANewPollWithItsOwnCode() async throws {
        let db = try store()
        let first = try PollController(options: options(PollController.unusedJoinCode(store: db)), store: db)
        let firstCode = await first.joinCode
        await first.ingest(sealedReport(firstCode, voter: 1, answer: .choice(1)))
        let secondCode = try PollController.unusedJoinCode(store: db)
        XCTAssertNotEqual(secondCode, firstCode)
        let second = try PollController(options: options(secondCode), store: db)
        let r = await second.results()
        XCTAssertEqual(r.voters, 0, "a new run does not carry the previous poll's votes")
        XCTAssertEqual(r.voteID, Int(secondCode.voteID))
        let polls = try db.polls()
        XCTAssertEqual(polls.count, 2)
        XCTAssertNotNil(polls[0].closedAt, "the previous poll is closed")
        XCTAssertNil(polls[1].closedAt)
        // The previous poll's ballots do not count in the new one.
        await second.ingest(sealedReport(firstCode, voter: 1, answer: .choice(1)))
        let after = await second.results()
        XCTAssertEqual(after.voters, 0)
    }

    /// `--resume` continues the open poll: same code, same counts, same per-voter rows.
    func testResumeRebuildsTheOpenPoll() async throws {
        let db = try store()
        let first = try PollController(options: options(), store: db, clock: PollClock(TestClock(), origin: t0))
        for v in UInt32(1)...30 { await first.ingest(sealedReport(code, voter: v, answer: .choice(UInt8(v % 4)))) }
        for v in UInt32(1)...5 { await first.ingest(sealedReport(code, voter: v, answer: .choice(3), sequence: 2)) }
        let before = await first.results()
        XCTAssertEqual(before.changes, 4, "voters 1, 2, 4 and 5 moved to D; voter 3 had D already")
        let second = try PollController(options: options(JoinCode.random()), store: db,
                                        start: .resume(maxAge: .seconds(3600)), clock: PollClock(TestClock(), origin: t0.addingTimeInterval(1800)))
        let resumedCode = await second.joinCode
        XCTAssertEqual(resumedCode, code, "the open poll's join code is resumed")
        let after = await second.results()
        XCTAssertEqual(after, before)
    }

    func testResumeIsRefusedForAPollOlderThanTheLimit() async throws {
        let db = try store()
        _ = try PollController(options: options(), store: db, clock: PollClock(TestClock(), origin: t0))
        let later = t0.addingTimeInterval(7 * 3600)
        XCTAssertThrowsError(try PollController(options: options(), store: db, start: .resume(maxAge: .seconds(6 * 3600)),
                                                clock: PollClock(TestClock(), origin: later))) { error in
            XCTAssertEqual(error as? PollError, .pollTooOld(age: .seconds(7 * 3600), limit: .seconds(6 * 3600)))
            XCTAssertEqual("\(error)", "the open poll started 7 hours ago, more than the 6 hours that --resume allows "
                + "(--resume-limit): run without --resume to start a new poll with a fresh join code")
        }
        let resumed = try PollController(options: options(), store: db, start: .resume(maxAge: .seconds(8 * 3600)), clock: PollClock(TestClock(), origin: later))
        let c = await resumed.joinCode
        XCTAssertEqual(c, code, "within a larger limit the same poll resumes")
        // Fractions of an hour are shown to a tenth.
        XCTAssertEqual("\(PollError.pollTooOld(age: .seconds(5400), limit: .seconds(900)))",
                       "the open poll started 1.5 hours ago, more than the 0.3 hours that --resume allows "
                        + "(--resume-limit): run without --resume to start a new poll with a fresh join code")
    }

    func testResumeNeedsAnOpenPollAndADatabase() throws {
        let db = try store()
        XCTAssertThrowsError(try PollController(options: options(), store: db, start: .resume(maxAge: .seconds(60)))) {
            XCTAssertEqual($0 as? PollError, .nothingToResume)
        }
        XCTAssertThrowsError(try PollController(options: options(), store: nil, start: .resume(maxAge: .seconds(60)))) {
            XCTAssertEqual($0 as? PollError, .resumeNeedsStore)
        }
    }

    /// A join code the database holds is refused, whether its poll is closed or still open, so the
    /// ballots its students' devices still send (or an attacker recorded) cannot count in a new poll.
    func testAUsedJoinCodeIsRefusedSoItsBallotsCannotBeReplayed() async throws {
        let db = try store()
        let old = try PollController(options: options(), store: db)
        let recorded = (UInt32(1)...10).map { sealedReport(code, voter: $0, answer: .choice(2)) }
        for r in recorded { await old.ingest(r) }
        XCTAssertThrowsError(try PollController(options: options(), store: db)) { error in
            XCTAssertEqual(error as? PollError, .joinCodeUsed(voteID: 4821, poll: 1))
            XCTAssertFalse("\(error)".contains("ABCDE"), "the message names the vote ID, not the secret")
        }
        _ = try PollController(options: options(try JoinCode(parsing: "1234-ZZZZZ-ZZZZZ")), store: db)
        XCTAssertThrowsError(try PollController(options: options(), store: db)) {
            XCTAssertEqual($0 as? PollError, .joinCodeUsed(voteID: 4821, poll: 1))
        }
        XCTAssertEqual(try db.polls().count, 2, "no poll was created for the refused code")
        // The running poll counts none of the recorded ballots.
        let current = try PollController(options: options(PollController.unusedJoinCode(store: db)), store: db)
        for r in recorded { await current.ingest(r) }
        let r = await current.results()
        XCTAssertEqual(r.voters, 0)
    }

    /// `newPoll()` ends the poll (closed in the database) and counts afresh under a new code.
    func testNewPollStartsAFreshPollWithoutRestarting() async throws {
        let db = try store()
        let controller = try PollController(options: options(), store: db)
        await controller.ingest(sealedReport(code, voter: 1, answer: .choice(0)))
        try await controller.closeQuestion()
        try await controller.nextQuestion()
        let voteID = try await controller.newPoll()
        let newCode = await controller.joinCode
        XCTAssertEqual(newCode.voteID, voteID)
        XCTAssertNotEqual(newCode, code)
        let (question, open) = (await controller.question, await controller.isOpen)
        XCTAssertEqual(question, 1)
        XCTAssertTrue(open)
        await controller.ingest(sealedReport(code, voter: 2, answer: .choice(1)))
        await controller.ingest(sealedReport(newCode, voter: 3, answer: .choice(2)))
        let r = await controller.results()
        XCTAssertEqual(r.voters, 1, "only the new poll's ballot counts")
        XCTAssertEqual(r.counts["C"], 1)
        let polls = try db.polls()
        XCTAssertEqual(polls.map { $0.closedAt == nil }, [false, true])
        XCTAssertEqual(polls[1].joinCode, newCode.description)
        do {
            try await controller.newPoll(joinCode: code)
            XCTFail("the first poll's code must be refused")
        } catch let e as PollError {
            XCTAssertEqual(e, .joinCodeUsed(voteID: 4821, poll: 1))
        }
    }

    /// The poll's one clock gives every time it records and shows: the poll's and each question's
    /// opening and closing (memory and database), each ballot's first hearing, the time a question
    /// was open, votes per second. Nothing reads the wall clock beside it.
    func testEveryTimeThePollRecordsComesFromItsClock() async throws {
        let db = try store()
        let clock = TestClock()
        let controller = try PollController(options: options(), store: db, clock: PollClock(clock, origin: t0))
        clock.advance(by: .seconds(30))
        try await controller.nextQuestion()
        clock.advance(by: .seconds(5))
        await controller.ingest(sealedReport(code, voter: 7, answer: .choice(2), question: 2))
        await controller.flush()
        let poll = try XCTUnwrap(try db.polls().last)
        // (Read before the close: closing an anonymous question deletes its ballots.)
        XCTAssertEqual(try db.ballots(poll: poll.id, question: 2).map(\.firstHeard), [t0 + 35])
        clock.advance(by: .seconds(85))
        let open = await controller.viewModel()
        XCTAssertEqual(open.question?.elapsed, .seconds(90), "open for 90 s of the poll's clock")
        XCTAssertEqual(open.votesPerSecond, 0, "the ballot 85 s ago is out of the 5 s window")
        try await controller.closeQuestion()
        clock.advance(by: .seconds(600))
        let closed = await controller.viewModel()
        XCTAssertEqual(closed.question?.elapsed, .seconds(90), "frozen at its closing")
        XCTAssertEqual(try db.polls().last?.createdAt, t0)
        let questions = try db.questions(poll: poll.id)
        XCTAssertEqual(questions.map(\.openedAt), [t0, t0 + 30])
        XCTAssertEqual(questions.last?.closedAt, t0 + 120)
    }
}

/// A sealed anonymous advertisement of `code`'s poll, from the address 0xC0…voter.
func sealedReport(_ code: JoinCode, voter: UInt32, answer: Answer, sequence: UInt16 = 1, question: UInt8 = 1,
                  at t: UInt64 = 1) -> AdvertisementReport {
    let b = Ballot(voteID: code.voteID, question: question, voterID: voter, sequence: sequence, answer: answer)
    return AdvertisementReport(address: DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(voter)), rssi: -60,
                               companyID: BallotFormat.companyID,
                               data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(code))),
                               timestamp: RadioInstant(nanoseconds: t * 1_000_000))
}
