import ClickerLedger
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import Logging
import PostgresTestSupport
@testable import Receivers
import Synchronization
import TallyDaemon
import XCTest

/// The ledger is away when the lecture starts: the instructor's tally starts and counts, a receiver
/// waits for it; both go on when it is back. A ledger that refuses stops them at once instead.
final class LedgerAwayAtStartTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func report(_ voter: UInt32, answer: UInt8, question: UInt8 = 1, at ms: UInt64) -> AdvertisementReport {
        anonymousReport(code, voter: voter, answer: answer, question: question, at: ms)
    }

    func controller(clock: PollClock = PollClock(ContinuousClock()), options count: Int = 4) throws -> PollController {
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.beacon = .off
        options.options = count
        return try PollController(options: options, store: nil, clock: clock)
    }

    /// A server of the test's own, which it halts and starts.
    func ownServer(_ name: String) throws -> (PostgresTestServer, String) {
        _ = try SharedServer.get()   // skips, or fails under CLICKER_REQUIRE_POSTGRES=1, without server binaries
        SharedServer.stop()
        let server = try PostgresTestServer()
        return (server, try server.makeDatabase(name))
    }

    /// The tally starts while the ledger is down (a fresh database: not even migrated yet), counts 100
    /// voters over two questions, and when the ledger is back registers the poll and both questions,
    /// ships all 100, each once, and closes question 1 (closed while the ledger was down) after its 60.
    func testATallyStartedWhileTheLedgerIsDownCountsAndRegistersAndShipsWhenItIsBack() async throws {
        let (server, url) = try ownServer("late")
        defer { server.stop() }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try server.halt()
        let clock = TestClock()
        let controller = try controller(clock: PollClock(clock))
        let link = try await TallyLedgerLink.start(url: url, poll: 6, controller: controller, journalPath: dir + "/tally.sqlite",
                                                   radioEpoch: 0)
        let linked = Task { await link.run(logger: Logger(label: "test")) }
        for v in UInt32(1)...60 { await controller.ingest(report(v, answer: UInt8(v % 4), at: UInt64(v))) }
        try await controller.nextQuestion()
        for v in UInt32(61)...100 { await controller.ingest(report(v, answer: 1, question: 2, at: 100 + UInt64(v))) }
        let journaled = await link.shipper.sync()
        XCTAssertEqual(journaled.journaled, 100, "all in the journal while the ledger is down")
        XCTAssertEqual(journaled.shipped, 0)
        XCTAssertNotNil(journaled.databaseError)

        try server.start()
        let ledger = { try BallotLedger(url: url, migrate: false) }
        // Retries are paced by the poll's clock: moved a second at a time until the journal is shipped.
        try await eventually("the 100 shipped once the ledger is back", timeout: .seconds(60)) {
            clock.advance(by: .seconds(1))
            let q1 = (try? ledger().counted(poll: 6, question: 1).count) ?? 0
            let q2 = (try? ledger().counted(poll: 6, question: 2).count) ?? 0
            return q1 == 60 && q2 == 40
        }
        XCTAssertEqual(try ledger().questions(poll: 6).map(\.number), [1, 2], "both questions registered, for the receivers")
        // Question 1, closed by the tally while the ledger was down, is closed there once its 60 are in.
        try await eventually("question 1 closed in the ledger", timeout: .seconds(60)) {
            clock.advance(by: .seconds(1))
            return (try? ledger().closedQuestions(poll: 6)) == [1]
        }
        XCTAssertEqual(try ledger().counted(poll: 6, question: 1).count, 60)
        let status = await link.finish().status
        linked.cancel()
        await linked.value
        XCTAssertEqual(status.shipped, 100, "each ballot shipped once")
        XCTAssertEqual(status.journaled, 0)
        XCTAssertNil(status.databaseError)
    }

    /// A ledger that answers and refuses stops the tally before the lecture: a question that
    /// `ledger open` registered with other answers (3 options, the tally offers 4), or wrong credentials.
    func testATallyWhoseLedgerRefusesDoesNotStart() async throws {
        let url = try SharedServer.database()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try BallotLedger(url: url).register(poll: 8, voteID: code.voteID, policy: .latestWins, specs: [.choice(1, options: 3)])
        do {
            _ = try await TallyLedgerLink.start(url: url, poll: 8, controller: controller(), journalPath: dir + "/t.sqlite", radioEpoch: 0)
            XCTFail("a tally offering 4 answers was linked to a question of 3")
        } catch {
            XCTAssertEqual("\(error)".contains("question 1 with 3 options, answers choice, not question 1 with 4 options"), true, "\(error)")
        }
        let three = try controller(options: 3)
        let link = try await TallyLedgerLink.start(url: url, poll: 8, controller: three, journalPath: dir + "/t.sqlite", radioEpoch: 0)
        _ = await link.finish()

        let wrong = url.replacingOccurrences(of: PostgresTestServer.password, with: "not-the-password")
        do {
            _ = try await TallyLedgerLink.start(url: wrong, poll: 8, controller: three, journalPath: dir + "/t2.sqlite", radioEpoch: 0)
            XCTFail("wrong credentials were taken")
        } catch {
            XCTAssertTrue("\(error)".contains("password authentication failed"), "\(error)")
        }
    }

    /// A receiver started while the ledger is down waits for it, asking again on its clock with a
    /// growing pause (1, 2, 4, 8, 10, 10 s), then joins and counts.
    func testAReceiverStartedWhileTheLedgerIsDownWaitsAndJoinsWhenItIsBack() async throws {
        let (server, url) = try ownServer("wait")
        defer { server.stop() }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 3, voteID: code.voteID, policy: .latestWins, specs: [.choice(1)])
        let receiverURL = try instructor.issueReceiverToken(poll: 3, validUntil: Int64(Date().timeIntervalSince1970) + 3600)
            .url(replacingCredentialsOf: url)
        try server.halt()

        let clock = TestClock()
        let (tries, told) = AsyncStream<String>.makeStream()
        let secret = pollSecret(code)
        let joining = Task { [receiverURL, dir] in
            try await LedgerReceiver.join(url: receiverURL, secret: secret, journalPath: dir + "/r.sqlite", radioEpoch: 0,
                                          clock: clock) { told.yield("\($0)") }
        }
        var pauses: [Duration] = []
        var attempts = tries.makeAsyncIterator()
        for _ in 0..<6 {
            let said = await attempts.next()
            XCTAssertTrue(said?.contains("cannot connect to PostgreSQL") == true, "\(String(describing: said))")
            // The receiver sleeps on the clock until it asks again.
            await clock.waitForSleepers(1)
            let deadline = try XCTUnwrap(clock.nextDeadline)
            pauses.append(clock.now.duration(to: deadline))
            clock.advance(to: deadline)
        }
        XCTAssertEqual(pauses, [1, 2, 4, 8, 10, 10].map { .seconds($0) })
        _ = await attempts.next()   // the seventh try, before the server is back
        try server.start()
        await clock.waitForSleepers(1)
        clock.advance(to: try XCTUnwrap(clock.nextDeadline))
        let receiver = try await joining.value
        XCTAssertEqual(receiver.poll.poll, 3)
        await receiver.take((UInt32(1)...20).map { report($0, answer: 2, at: UInt64($0)) })
        let status = await receiver.finish()
        XCTAssertEqual(status.shipped, 20)
        XCTAssertEqual(try BallotLedger(url: url).counts(poll: 3, question: 1), [.choice(2): 20])
    }

    /// A refusal is not waited for: an expired token fails the join at once.
    func testAReceiverWithAClosedPollIsRefusedAtOnce() async throws {
        let url = try SharedServer.database()
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 4, voteID: code.voteID, policy: .latestWins, specs: [.choice(1)])
        let receiverURL = try instructor.issueReceiverToken(poll: 4, validUntil: Int64(Date().timeIntervalSince1970) + 3600)
            .url(replacingCredentialsOf: url)
        _ = try instructor.close(poll: 4)
        let waits = Mutex(0)
        do {
            _ = try await LedgerReceiver.join(url: receiverURL, secret: pollSecret(code), journalPath: "/nonexistent/r.sqlite",
                                              radioEpoch: 0, clock: TestClock()) { _ in waits.withLock { $0 += 1 } }
            XCTFail("a closed poll's token joined")
        } catch {
            XCTAssertNotNil(error as? ReceiverError, "\(error)")
        }
        XCTAssertEqual(waits.withLock { $0 }, 0, "a refusal is not waited for")
    }
}
