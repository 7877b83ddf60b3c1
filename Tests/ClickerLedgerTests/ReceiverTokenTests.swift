import ClickerLedger
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import PostgresClient
import XCTest

/// What a receiver token lets its holder do in the ledger, enforced by PostgreSQL (a role per token,
/// row-level security), against a real server.
final class ReceiverTokenTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    /// Ten years from the tests' wall time: a token that does not expire during a test.
    let later = Int64(Date().timeIntervalSince1970) + 10 * 365 * 86_400

    func ballot(poll: Int64, voter: UInt32, answer: UInt8 = 1) -> LedgerBallot {
        LedgerBallot(poll: poll, question: 1, voter: VoterKey(mode: .anonymous, voterID: voter), sequence: 1,
                     answer: .choice(answer), verified: false, heardAt: 1_000, address: DeviceAddress(rawValue: UInt64(voter)))
    }

    func testAReceiverReadsAndWritesItsOwnPollOnly() throws {
        let url = try SharedServer.database()
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 1, voteID: 11, policy: .latestWins, specs: [.choice(1, options: 3)])
        try instructor.register(poll: 2, voteID: 22, policy: .latestWins, questions: [1])
        try instructor.write(ballot(poll: 2, voter: 5))
        let token = try instructor.issueReceiverToken(poll: 1, validUntil: later)
        let receiverURL = token.url(replacingCredentialsOf: url)
        XCTAssertTrue(receiverURL.hasPrefix("postgres://\(token.role):\(token.password)@127.0.0.1:"), receiverURL)

        let receiver = try BallotLedger(url: receiverURL, migrate: false)
        XCTAssertEqual(try receiver.receiverPoll(), ReceiverPoll(poll: 1, voteID: 11, policy: .latestWins))
        XCTAssertEqual(try receiver.questions(poll: 1), [.choice(1, options: 3)])
        XCTAssertEqual(try receiver.questions(poll: 2), [], "another poll's questions are not visible")
        try receiver.write(ballot(poll: 1, voter: 7))
        try receiver.write(batch: [ballot(poll: 1, voter: 8), ballot(poll: 1, voter: 7, answer: 2)])
        XCTAssertEqual(try instructor.counts(poll: 1, question: 1), [.choice(1): 2])

        // Another poll's ballots: neither written nor read.
        XCTAssertThrowsError(try receiver.write(ballot(poll: 2, voter: 6))) { XCTAssertEqual(sqlState($0), "42501") }
        XCTAssertEqual(try receiver.counts(poll: 2, question: 1), [:])
        XCTAssertEqual(try instructor.counts(poll: 2, question: 1), [.choice(1): 1])
        // No registering, deleting, or changing the poll's rule.
        let db = try PostgresConnection(url: receiverURL)
        for statement in ["INSERT INTO polls VALUES (3, 1, 'latestWins')", "DELETE FROM ballots",
                          "UPDATE polls SET change_policy = 'firstResponseOnly'", "INSERT INTO questions (poll_id, question) VALUES (1, 9)",
                          "CREATE TABLE mine (x int)", "UPDATE ledger_receivers SET valid_until = now() + interval '1 year'"] {
            XCTAssertThrowsError(try db.execute(statement), statement) { XCTAssertEqual(sqlState($0), "42501", statement) }
        }
        XCTAssertEqual(try instructor.counts(poll: 1, question: 1), [.choice(1): 2])

        // What it does learn of other polls: their numbers, and when their counted ballots change.
        try db.execute("LISTEN \(LedgerSchema.channel)")
        try instructor.write(ballot(poll: 2, voter: 9))
        XCTAssertEqual(try db.notifications(waitingUpTo: .seconds(10)).map(\.payload), ["2"])
    }

    func testClosingThePollEndsItsTokensAndItTakesNoNewOnes() throws {
        let url = try SharedServer.database()
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 4, voteID: 44, policy: .latestWins, questions: [1])
        let token = try instructor.issueReceiverToken(poll: 4, validUntil: later)
        let receiverURL = token.url(replacingCredentialsOf: url)
        let receiver = try BallotLedger(url: receiverURL, migrate: false)
        try receiver.write(ballot(poll: 4, voter: 1))

        XCTAssertEqual(try instructor.close(poll: 4), 1)
        XCTAssertThrowsError(try receiver.write(ballot(poll: 4, voter: 2)), "its open connection is ended")
        XCTAssertThrowsError(try BallotLedger(url: receiverURL, migrate: false)) {
            guard case .database(let e) = $0 as? LedgerError else { return XCTFail("\($0)") }
            XCTAssertEqual(e.kind, .authentication)
        }
        XCTAssertThrowsError(try instructor.issueReceiverToken(poll: 4, validUntil: later)) {
            XCTAssertEqual($0 as? LedgerError, .pollClosed(poll: 4))
        }
        XCTAssertThrowsError(try instructor.issueReceiverToken(poll: 99, validUntil: later)) {
            XCTAssertEqual($0 as? LedgerError, .pollClosed(poll: 99))
        }
        XCTAssertEqual(try instructor.counts(poll: 4, question: 1), [.choice(1): 1], "what it wrote before stays")
    }

    func testATokenPastItsTimeNeitherLogsInNorWrites() throws {
        let url = try SharedServer.database()
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 5, voteID: 55, policy: .latestWins, questions: [1])
        let expired = try instructor.issueReceiverToken(poll: 5, validUntil: Int64(Date().timeIntervalSince1970) - 60)
        XCTAssertThrowsError(try BallotLedger(url: expired.url(replacingCredentialsOf: url), migrate: false)) {
            guard case .database(let e) = $0 as? LedgerError else { return XCTFail("\($0)") }
            XCTAssertEqual(e.kind, .authentication)
        }
        // A session opened in time: its statements are refused once the time has passed, though it
        // stays connected (PostgreSQL checks VALID UNTIL at login only; the policies check every row).
        let token = try instructor.issueReceiverToken(poll: 5, validUntil: later)
        let receiver = try BallotLedger(url: token.url(replacingCredentialsOf: url), migrate: false)
        try receiver.write(ballot(poll: 5, voter: 1))
        try PostgresConnection(url: url).execute("UPDATE ledger_receivers SET valid_until = now() - interval '1 second' WHERE role_name = $1",
                                                 [.text(token.role)])
        XCTAssertThrowsError(try receiver.write(ballot(poll: 5, voter: 2))) { XCTAssertEqual(sqlState($0), "42501") }
        XCTAssertThrowsError(try receiver.receiverPoll()) { XCTAssertEqual($0 as? LedgerError, .tokenNotValid) }
        XCTAssertEqual(try instructor.counts(poll: 5, question: 1), [.choice(1): 1])
    }

    func testQuestionDefinitionsRoundTripAndAReceiverNeedsTheCurrentSchema() throws {
        let url = try SharedServer.database()
        let instructor = try BallotLedger(url: url)
        let specs = [QuestionSpec(number: 1, options: 5, kinds: [.choice, .multiSelect]),
                     QuestionSpec(number: 2, kinds: [.numeric], numeric: NumericRange(decimals: 1, lowest: -50, highest: 300)),
                     QuestionSpec(number: 3, options: 2, kinds: [.trueFalse])]
        try instructor.register(poll: 6, voteID: 66, policy: .firstResponseOnly, specs: specs)
        let read = try instructor.questions(poll: 6)
        XCTAssertEqual(read.map(\.number), [1, 2, 3])
        XCTAssertEqual(read.map(\.options), [5, 4, 2])
        XCTAssertEqual(read.map(\.kinds), [[.choice, .multiSelect], [.numeric], [.trueFalse]])
        XCTAssertEqual(read[1].numeric.map { [$0.lowest, $0.highest] }, [-50, 300])
        XCTAssertNil(read[0].numeric)

        try PostgresConnection(url: url).execute("DELETE FROM ledger_schema_version WHERE version = $1", [.int(Int64(LedgerSchema.version))])
        XCTAssertThrowsError(try BallotLedger(url: url, migrate: false)) {
            XCTAssertEqual($0 as? LedgerError, .schemaTooOld(database: LedgerSchema.version - 1, known: LedgerSchema.version))
        }
    }
}
