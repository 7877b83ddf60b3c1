import ClickerStore
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import TallyDaemon
import XCTest

/// `--resume` reads the open poll's question definition, rule and mode back from the database, so it
/// needs no flags; a flag that says otherwise is refused.
final class ResumeDefinitionTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    func store() throws -> ClickerStore {
        let dir = NSTemporaryDirectory() + "clicker-resume-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
    }

    func resume(_ db: ClickerStore, _ options: PollOptions? = nil, stated: ResumeFlags = ResumeFlags()) throws -> PollController {
        try PollController(options: options ?? PollOptions(joinCode: JoinCode.random(), confirmByGATT: false), store: db,
                           start: .resume(maxAge: .seconds(3600), stated: stated), clock: PollClock(TestClock(), origin: t0.addingTimeInterval(60)))
    }

    /// A poll of six answers, first response only, on question 2: a resume told nothing asks the
    /// same question (F still counts) under the same rule.
    func testResumeWithoutFlagsAsksTheStoredQuestion() async throws {
        let db = try store()
        let first = try PollController(options: PollOptions(joinCode: code, policy: .firstResponseOnly, options: 6,
                                                            confirmByGATT: false), store: db, clock: PollClock(TestClock(), origin: t0))
        try await first.nextQuestion()
        await first.ingest(sealedReport(code, voter: 1, answer: .choice(5), question: 2))
        XCTAssertEqual(try db.questions(poll: 1).map(\.definition), [.choice(options: 6), .choice(options: 6)])

        let second = try resume(db)
        let (options, spec) = await (second.options, second.spec)
        XCTAssertEqual(spec.options, 6)
        XCTAssertEqual(options.policy, .firstResponseOnly)
        await second.ingest(sealedReport(code, voter: 2, answer: .choice(4), question: 2))
        let r = await second.results()
        XCTAssertEqual(r.question, 2)
        XCTAssertEqual(r.voters, 2, "E and F are offered after the resume: \(r.rejected)")
        XCTAssertEqual(r.counts["F"], 1)
        XCTAssertEqual(r.counts["E"], 1)
        // The next question keeps the definition, for the next resume.
        try await second.nextQuestion()
        XCTAssertEqual(try db.questions(poll: 1).last?.definition, .choice(options: 6))
    }

    func testFlagsThatContradictTheStoredPollAreRefused() throws {
        let db = try store()
        _ = try PollController(options: PollOptions(joinCode: code, options: 5, confirmByGATT: false), store: db, clock: PollClock(TestClock(), origin: t0))
        XCTAssertThrowsError(try resume(db, stated: ResumeFlags(options: 4))) { error in
            XCTAssertEqual(error as? PollError, .resumeContradicts(flag: "--options 4", stored: "offers 5 answers"))
            XCTAssertTrue("\(error)".contains("leave the flag out"), "\(error)")
        }
        XCTAssertThrowsError(try resume(db, stated: ResumeFlags(policy: .firstResponseOnly))) {
            guard case .resumeContradicts(let flag, _)? = $0 as? PollError else { return XCTFail("\($0)") }
            XCTAssertEqual(flag, "--first-response-only")
        }
        XCTAssertThrowsError(try resume(db, stated: ResumeFlags(question: 3))) {
            XCTAssertEqual($0 as? PollError, .resumeContradicts(flag: "--question 3", stored: "is at question 1"))
        }
        XCTAssertThrowsError(try resume(db, stated: ResumeFlags(roster: true))) {
            XCTAssertEqual($0 as? PollError, .resumeModeMismatch(openIsRoster: false))
        }
        XCTAssertThrowsError(try resume(db, stated: ResumeFlags(kind: .trueFalse))) {
            XCTAssertEqual($0 as? PollError, .resumeContradicts(flag: "--kind", stored: "asks another kind of question"))
        }
        XCTAssertThrowsError(try resume(db, stated: ResumeFlags(kind: .ranking))) {
            XCTAssertEqual($0 as? PollError, .resumeContradicts(flag: "--kind", stored: "asks another kind of question"))
        }
        // Flags that agree are fine.
        XCTAssertNoThrow(try resume(db, stated: ResumeFlags(options: 5, policy: .latestWins, question: 1, kind: .choice)))
    }

    /// A roster poll resumes with the stored roster when none is given (no `--roster` needed).
    func testARosterPollResumesWithTheStoredRoster() async throws {
        let db = try store()
        let ada = DeviceKey.generate()
        let roster = try Roster(entries: [RosterEntry(name: "Ada", studentID: "s1", enrollment: ada.enrollmentCode)])
        try RosterBook.save(roster, to: db)
        _ = try PollController(options: PollOptions(joinCode: code, roster: roster, confirmByGATT: false), store: db, clock: PollClock(TestClock(), origin: t0))
        let resumed = try resume(db)
        let options = await resumed.options
        XCTAssertEqual(options.roster, roster)
    }
}

/// The store keeps everything a `QuestionSpec` carries.
final class QuestionDefinitionMappingTests: XCTestCase {
    func testASpecComesBackFromItsDefinition() {
        let specs = [
            QuestionSpec(number: 3, options: 5, kinds: [.ranking], title: "Rank", optionTexts: ["a", "b", "c", "d", "e"],
                         correct: [.ranking(Ranking(order: [1, 0])!)], points: 3),
            QuestionSpec(number: 4, options: 1, kinds: [.numeric], title: "π", numeric: NumericRange(decimals: 2, lowest: 300, highest: 400),
                         correct: [.numeric(314)], points: 0.5),
            QuestionSpec(number: 5, options: 2, kinds: [.trueFalse, .choice]),
        ]
        for s in specs {
            let d = QuestionDefinition(s)
            XCTAssertEqual(QuestionSpec(number: s.number, definition: d), s)
        }
        XCTAssertEqual(QuestionDefinition(specs[2]).kinds, [.choice, .trueFalse], "kinds in wire order")
        XCTAssertEqual(QuestionDefinition(specs[1]).numeric, .init(decimals: 2, lowest: 300, highest: 400))
    }
}
