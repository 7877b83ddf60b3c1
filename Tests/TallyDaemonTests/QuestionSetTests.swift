import ClickerQuestions
import ClickerStore
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import TallyDaemon
import XCTest

/// A poll that follows a question set: its questions open in order with their kinds, each question's
/// definition governs what is counted, and a resume goes on with the same set.
final class QuestionSetTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    let file = """
        questions:
          - title: Largest planet?
            kind: single
            options: [Mercury, Venus, Jupiter]
            correct: C
            points: 1
          - title: Noble gases
            kind: multi
            options: [Helium, Iron, Neon]
          - title: g in m/s²
            kind: numeric
            range: 9..10.5
            decimals: 1
          - title: Rank them
            kind: ranked
            options: [Swift, Rust, Go, C]
        """

    func store() throws -> ClickerStore {
        let dir = NSTemporaryDirectory() + "clicker-set-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
    }

    func setOptions() throws -> PollOptions {
        var o = PollOptions(joinCode: code, confirmByGATT: false)
        o.questionSet = try QuestionFile.parse(file, file: "lecture.yaml")
        return o
    }

    func testTheSetOpensInOrderAndEachQuestionCountsOnlyItsKind() async throws {
        let db = try store()
        let c = try PollController(options: try setOptions(), store: db, clock: PollClock(TestClock(), origin: t0))
        var spec = await c.spec
        XCTAssertEqual(spec.title, "Largest planet?")
        XCTAssertEqual(spec.kinds, [.choice])
        let shown = await c.viewModel(now: t0).question?.title
        XCTAssertEqual(shown, "Largest planet?", "the live view shows the question's title")
        await c.ingest(sealedReport(code, voter: 1, answer: .choice(2)))
        await c.ingest(sealedReport(code, voter: 2, answer: .choice(3)))         // D: not offered
        await c.ingest(sealedReport(code, voter: 3, answer: .trueFalse(true)))   // another kind
        var r = await c.results()
        XCTAssertEqual(r.voters, 1)
        XCTAssertEqual(r.rejected["answerNotOffered"], 2)

        try await c.nextQuestion()
        spec = await c.spec
        XCTAssertEqual(spec.number, 2)
        XCTAssertEqual(spec.kinds, [.multiSelect])
        XCTAssertEqual(spec.optionTexts, ["Helium", "Iron", "Neon"])
        await c.ingest(sealedReport(code, voter: 1, answer: .multiSelect(0b101), question: 2))
        await c.ingest(sealedReport(code, voter: 2, answer: .choice(0), question: 2))
        await c.ingest(sealedReport(code, voter: 3, answer: .multiSelect(0b1001), question: 2))  // D not offered
        r = await c.results()
        XCTAssertEqual(r.voters, 1)
        XCTAssertEqual(r.rejected["answerNotOffered"], 2)

        try await c.nextQuestion()
        spec = await c.spec
        XCTAssertEqual(spec.numeric, NumericRange(decimals: 1, lowest: 90, highest: 105))
        for (voter, value) in [(1, 98), (2, 105), (3, 106), (4, 89), (5, -98)] as [(UInt32, Int16)] {
            await c.ingest(sealedReport(code, voter: voter, answer: .numeric(value), question: 3))
        }
        await c.ingest(sealedReport(code, voter: 6, answer: .choice(0), question: 3))
        r = await c.results()
        XCTAssertEqual(r.voters, 2, "9.8 and 10.5 are in range")
        XCTAssertEqual(r.rejected["answerNotOffered"], 4, "10.6, 8.9, -9.8 and a letter are not")

        try await c.nextQuestion()
        await c.ingest(sealedReport(code, voter: 1, answer: .ranking(Ranking(order: [3, 0])!), question: 4))
        await c.ingest(sealedReport(code, voter: 2, answer: .ranking(Ranking(order: [4, 0])!), question: 4))
        r = await c.results()
        XCTAssertEqual(r.voters, 1)
        XCTAssertEqual(r.rejected["answerNotOffered"], 1, "E is not ranked in a four-option question")

        // After the last question of the set: a clear error, and question 4 is still the current one.
        do {
            try await c.nextQuestion()
            XCTFail("there is no fifth question")
        } catch let e as PollError {
            XCTAssertEqual(e, .endOfQuestionSet(count: 4))
            XCTAssertTrue(e.description.hasPrefix("question 4 was the last of the question set"), e.description)
        }
        let (q, open) = await (c.question, c.isOpen)
        XCTAssertEqual(q, 4)
        XCTAssertTrue(open, "a refused next leaves the question open")
        let status = await c.perform(.nextQuestion, exportDirectory: "/tmp")
        XCTAssertEqual(status, PollError.endOfQuestionSet(count: 4).description, "the n key shows the message")

        // Every definition was stored with its question, and the set with the poll.
        let stored = try db.questions(poll: 1).compactMap(\.definition)
        XCTAssertEqual(stored, try setOptions().questionSet.map(QuestionDefinition.init))
        XCTAssertEqual(try db.plan(poll: 1).count, 4)
    }

    /// `--question N` starts the set at its question N; beyond the set it is refused before any poll starts.
    func testStartingInsideTheSet() async throws {
        var o = try setOptions()
        o.firstQuestion = 3
        let c = try PollController(options: o, store: nil, clock: PollClock(TestClock(), origin: t0))
        let (q, spec) = await (c.question, c.spec)
        XCTAssertEqual(q, 3)
        XCTAssertEqual(spec.title, "g in m/s²")
        o.firstQuestion = 5
        let db = try store()
        XCTAssertThrowsError(try PollController(options: o, store: db, clock: PollClock(TestClock(), origin: t0))) {
            XCTAssertEqual($0 as? PollError, .notInQuestionSet(question: 5, count: 4))
        }
        XCTAssertEqual(try db.polls().count, 0)
    }

    /// A resume told nothing goes on with the stored set: the current question's kind still governs,
    /// `n` opens the set's next question; a different set on the command line is refused.
    func testResumeKeepsTheSet() async throws {
        let db = try store()
        let first = try PollController(options: try setOptions(), store: db, clock: PollClock(TestClock(), origin: t0))
        try await first.nextQuestion()
        await first.ingest(sealedReport(code, voter: 1, answer: .multiSelect(0b011), question: 2))

        let resume = PollStart.resume(maxAge: .seconds(3600))
        let second = try PollController(options: PollOptions(joinCode: JoinCode.random(), confirmByGATT: false),
                                        store: db, start: resume, clock: PollClock(TestClock(), origin: t0.addingTimeInterval(60)))
        let spec = await second.spec
        XCTAssertEqual(spec.kinds, [.multiSelect])
        XCTAssertEqual(spec.title, "Noble gases")
        await second.ingest(sealedReport(code, voter: 2, answer: .multiSelect(0b100), question: 2))
        await second.ingest(sealedReport(code, voter: 3, answer: .choice(1), question: 2))
        let r = await second.results()
        XCTAssertEqual(r.voters, 2)
        XCTAssertEqual(r.rejected["answerNotOffered"], 1)
        try await second.nextQuestion()
        let third = await second.spec
        XCTAssertEqual(third.title, "g in m/s²")
        XCTAssertEqual(third.numeric?.highest, 105)

        var other = try QuestionFile.parse(file, file: "lecture.yaml")
        other[3].title = "Rank these"
        XCTAssertThrowsError(try PollController(options: PollOptions(joinCode: JoinCode.random(), confirmByGATT: false), store: db,
                                                start: .resume(maxAge: .seconds(3600), stated: ResumeFlags(questionSet: other)),
                                                clock: PollClock(TestClock(), origin: t0.addingTimeInterval(60)))) {
            XCTAssertEqual($0 as? PollError, .resumeContradicts(flag: "--questions", stored: "follows another question set (4 questions)"))
        }
        XCTAssertNoThrow(try PollController(options: PollOptions(joinCode: JoinCode.random(), confirmByGATT: false), store: db,
                                            start: .resume(maxAge: .seconds(3600),
                                                           stated: ResumeFlags(questionSet: try QuestionFile.parse(file, file: "x"))),
                                            clock: PollClock(TestClock(), origin: t0.addingTimeInterval(60))))
    }

    /// `n` after an ad-hoc question with option texts asks the same kind with the same texts
    /// (docs/GUIDE.md, "Ad-hoc questions"), without the question's title or correct answer.
    func testNextKeepsTheOptionTextsNotTheTitle() async throws {
        var o = PollOptions(joinCode: code, confirmByGATT: false)
        var first = try AdHocQuestion.spec(number: 1, kind: "single", options: ["Paris", "Rome", "Oslo"], title: "Capital?")
        first.correct = [.choice(0)]
        o.adHoc = first
        let db = try store()
        let c = try PollController(options: o, store: db, clock: PollClock(TestClock(), origin: t0))
        try await c.nextQuestion()
        let spec = await c.spec
        XCTAssertEqual(spec, QuestionSpec(number: 2, options: 3, kinds: [.choice], optionTexts: ["Paris", "Rome", "Oslo"]))
        XCTAssertEqual(try db.questions(poll: 1).last?.definition,
                       QuestionDefinition(kinds: [.choice], options: 3, optionTexts: ["Paris", "Rome", "Oslo"]),
                       "stored so, for a resume")
    }

    /// Ad hoc: the first question's kind comes from the options, `n` asks the same kind again, and an
    /// ad-hoc question may follow a set only after its last question.
    func testAdHocQuestions() async throws {
        var o = PollOptions(joinCode: code, confirmByGATT: false)
        o.adHoc = try AdHocQuestion.spec(number: 1, kind: "truefalse", options: [], title: "Is it?")
        let c = try PollController(options: o, store: nil, clock: PollClock(TestClock(), origin: t0))
        await c.ingest(sealedReport(code, voter: 1, answer: .trueFalse(false)))
        await c.ingest(sealedReport(code, voter: 2, answer: .choice(0)))
        let r = await c.results()
        XCTAssertEqual(r.voters, 1)
        XCTAssertEqual(r.rejected["answerNotOffered"], 1)
        try await c.nextQuestion()
        var spec = await c.spec
        XCTAssertEqual(spec, QuestionSpec(number: 2, options: 2, kinds: [.trueFalse]), "same kind, no title")
        try await c.nextQuestion(AdHocQuestion.spec(number: 9, kind: "ranked", options: ["5"], title: "Order"))
        spec = await c.spec
        XCTAssertEqual(spec, QuestionSpec(number: 3, options: 5, kinds: [.ranking], title: "Order"))
        let letters = await c.liveCounts().counts.keys.sorted()
        XCTAssertEqual(letters, ["A", "B", "C", "D", "E"], "the view's letters follow the question")
        // OpenQuestion with a definition only while no question is open.
        let numeric = try AdHocQuestion.spec(number: 1, kind: "numeric", options: ["0..10"], title: nil)
        do { try await c.openQuestion(numeric); XCTFail("question 3 is open") } catch let e as PollError {
            XCTAssertEqual(e, .questionAlreadyOpen(3))
        }
        try await c.closeQuestion()
        try await c.openQuestion(numeric)
        let (q, s) = await (c.question, c.spec)
        XCTAssertEqual(q, 4)
        XCTAssertEqual(s.numeric, NumericRange(decimals: 0, lowest: 0, highest: 10))

        let set = try PollController(options: try setOptions(), store: nil, clock: PollClock(TestClock(), origin: t0))
        do { try await set.nextQuestion(numeric); XCTFail("the set has questions left") } catch let e as PollError {
            XCTAssertEqual(e, .questionSetNotFinished(next: 2, count: 4))
        }
        for _ in 2...4 { try await set.nextQuestion() }
        // After the set's last question: an ad-hoc question, then `n` asks its kind again.
        try await set.nextQuestion(numeric)
        try await set.nextQuestion()
        let (n, past) = await (set.question, set.spec)
        XCTAssertEqual(n, 6)
        XCTAssertEqual(past, QuestionSpec(number: 6, options: 1, kinds: [.numeric], numeric: numeric.numeric))
    }
}
