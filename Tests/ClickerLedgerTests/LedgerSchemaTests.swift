@testable import ClickerLedger
import ClickerTally
import ClickerTransport
import ClickerWire
import PostgresClient
import XCTest

/// Versioned migrations, registration and the ledger's refusals.
final class LedgerSchemaTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    func testAVersionOneDatabaseUpgradesAndKeepsItsBallots() throws {
        let url = try SharedServer.database()
        let db = try PostgresConnection(url: url)
        XCTAssertEqual(try LedgerSchema.migrate(db, to: 1), 0)
        // A version-1 ledger with one counted ballot, as a build of that version wrote it.
        try db.execute("INSERT INTO polls VALUES (5, 42, 'latestWins')")
        try db.execute("INSERT INTO questions VALUES (5, 1)")
        try db.execute("INSERT INTO ballots VALUES (5, 1, 0, 77, 3, '\\x010002', false, 1000, '\\x00aa01000001')")
        XCTAssertThrowsError(try db.execute("SELECT 1 FROM ballot_spans")) {
            XCTAssertEqual(($0 as? PostgresError)?.sqlState, "42P01")   // undefined table: still version 1
        }

        let ledger = try BallotLedger(url: url)
        let versions = try db.execute("SELECT version FROM ledger_schema_version ORDER BY version").rows.map { try $0.int(0) }
        XCTAssertEqual(versions, Array(1...Int64(LedgerSchema.version)))
        let voter = VoterKey(mode: .anonymous, voterID: 77)
        let kept = try XCTUnwrap(ledger.counted(poll: 5, question: 1)[voter])
        XCTAssertEqual(kept, CountedBallot(sequence: 3, answer: .choice(2), verified: false, heardAt: 1000,
                                           address: DeviceAddress(rawValue: 0x00AA_0100_0001), lowestSequence: 3,
                                           highestSequence: 3, firstHeard: 1000, lastHeard: 1000))
        // Written on by this build: the span widens and the later sequence counts.
        try ledger.write(LedgerBallot(poll: 5, question: 1, voter: voter, sequence: 4, answer: .choice(1), verified: false,
                                      heardAt: 2000, address: DeviceAddress(rawValue: 1)))
        let now = try XCTUnwrap(ledger.counted(poll: 5, question: 1)[voter])
        XCTAssertEqual([now.sequence, now.lowestSequence, now.highestSequence], [4, 3, 4])
        XCTAssertEqual([now.firstHeard, now.lastHeard], [1000, 2000])
        // Opening again changes nothing.
        XCTAssertEqual(try LedgerSchema.migrate(db), LedgerSchema.version)
        XCTAssertEqual(try db.execute("SELECT count(*) FROM ledger_schema_version").rows.first?.int(0), Int64(LedgerSchema.version))
    }

    func testADatabaseOfANewerSchemaIsRefusedNamingBothVersions() throws {
        let url = try SharedServer.database()
        _ = try BallotLedger(url: url)
        let newer = LedgerSchema.version + 1
        try PostgresConnection(url: url).execute("INSERT INTO ledger_schema_version (version) VALUES ($1)", [.int(Int64(newer))])
        XCTAssertThrowsError(try BallotLedger(url: url)) { error in
            XCTAssertEqual(error as? LedgerError, .schemaTooNew(database: newer, known: LedgerSchema.version))
            let text = "\(error)"
            XCTAssertTrue(text.contains("schema version \(newer)") && text.contains("version \(LedgerSchema.version))"), text)
        }
    }

    func testRegistrationKeepsTheVoteIDAndChangePolicyAndUnknownQuestionsAreRefused() throws {
        let ledger = try BallotLedger(url: try SharedServer.database())
        try ledger.register(poll: 1, voteID: 3, policy: .firstResponseOnly, questions: [1])
        try ledger.register(poll: 1, voteID: 3, policy: .firstResponseOnly, questions: [1, 2])
        XCTAssertThrowsError(try ledger.register(poll: 1, voteID: 3, policy: .latestWins, questions: [3])) {
            XCTAssertEqual($0 as? LedgerError, .registrationConflict(poll: 1, stored: "vote ID 3, change policy firstResponseOnly",
                                                                     asked: "vote ID 3, change policy latestWins"))
        }
        XCTAssertThrowsError(try ledger.register(poll: 1, voteID: 4, policy: .firstResponseOnly, questions: [3])) {
            XCTAssertEqual("\($0)", "poll 1 is in the ledger with vote ID 3, change policy firstResponseOnly, "
                           + "not vote ID 4, change policy firstResponseOnly")
        }
        let b = LedgerBallot(poll: 1, question: 3, voter: VoterKey(mode: .roster, voterID: 1), sequence: 1, answer: .choice(0),
                             verified: true, heardAt: 1, address: DeviceAddress(rawValue: 1))
        // Question 3 came with the refused registration, which added nothing.
        XCTAssertThrowsError(try ledger.write(b)) { XCTAssertEqual($0 as? LedgerError, .unknownQuestion(poll: 1, question: 3)) }
        var ok = b
        ok.question = 2
        XCTAssertThrowsError(try ledger.write(batch: [ok, b])) { XCTAssertEqual($0 as? LedgerError, .unknownQuestion(poll: 1, question: 3)) }
        // The batch is all or nothing: its good ballot is not there either.
        XCTAssertEqual(try ledger.counts(poll: 1, question: 2), [:])
        try ledger.write(ok)
        XCTAssertEqual(try ledger.counts(poll: 1, question: 2), [.choice(0): 1])
    }

    /// A question registered again with other answers (the tally's question file and `ledger open`'s
    /// disagree) is refused, whichever field differs, and the refused registration adds nothing.
    func testAQuestionRegisteredAgainWithOtherAnswersIsRefused() throws {
        let ledger = try BallotLedger(url: try SharedServer.database())
        let first = QuestionSpec(number: 1, options: 3, kinds: [.choice, .numeric], numeric: NumericRange(decimals: 1, lowest: -10, highest: 10))
        try ledger.register(poll: 1, voteID: 3, policy: .latestWins, specs: [first])
        // Titles, option texts, decimals and grading stay with the tally: registering them again is no conflict.
        var retitled = first
        retitled.title = "Which?"
        retitled.optionTexts = ["x", "y", "z"]
        retitled.numeric = NumericRange(decimals: 3, lowest: -10, highest: 10)
        retitled.correct = [.choice(1)]
        try ledger.register(poll: 1, voteID: 3, policy: .latestWins, specs: [retitled])

        var others: [QuestionSpec] = []
        for options in [1, 2, 4, 8] { var s = first; s.options = options; others.append(s) }
        for kinds: Set<Answer.Kind> in [[.choice], [.numeric], [.choice, .numeric, .trueFalse], [.multiSelect]] {
            var s = first; s.kinds = kinds; others.append(s)
        }
        for range in [NumericRange(lowest: -10, highest: 11), NumericRange(lowest: -9, highest: 10), nil] {
            var s = first; s.numeric = range; others.append(s)
        }
        for other in others {
            let two = QuestionSpec.choice(2, options: 5)
            XCTAssertThrowsError(try ledger.register(poll: 1, voteID: 3, policy: .latestWins, specs: [two, other]), "\(other)") { error in
                guard case .registrationConflict(poll: 1, let stored, let asked) = error as? LedgerError else {
                    return XCTFail("\(error)")
                }
                XCTAssertEqual(stored, "question 1 with 3 options, answers choice and numeric, numbers -10…10")
                XCTAssertTrue(asked.hasPrefix("question 1 with "), asked)
                XCTAssertNotEqual(stored, asked)
            }
            // Question 2 came with the refused registration, which added nothing.
            XCTAssertEqual(try ledger.questions(poll: 1).map(\.number), [1])
        }
        XCTAssertEqual(try ledger.questions(poll: 1), [QuestionSpec(number: 1, options: 3, kinds: [.choice, .numeric],
                                                                    numeric: NumericRange(lowest: -10, highest: 10))])
    }
}
