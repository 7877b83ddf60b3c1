import ClickerQuestions
import ClickerStore
import ClickerTally
import ClickerWire
import Foundation
@testable import TallyDaemon
import ClickerTransport
import XCTest

/// The gradebook CSVs of a scored roster poll, checked cell by cell against the layouts Canvas and
/// Moodle import (docs/GUIDE.md, "Gradebooks for Canvas and Moodle").
final class GradebookCSVTests: XCTestCase {
    /// RFC 4180 fields of CRLF-terminated rows (what Canvas's and Moodle's CSV readers see).
    static func cells(_ text: String) -> [[String]] {
        XCTAssertTrue(text.hasSuffix("\r\n"))
        var rows: [[String]] = [], row: [String] = [], field = "", quoted = false, wasQuoted = false
        var chars = Array(text.unicodeScalars)[...]
        while let c = chars.popFirst() {
            if quoted {
                if c == "\"" {
                    if chars.first == "\"" { field.unicodeScalars.append("\""); chars.removeFirst() } else { quoted = false }
                } else { field.unicodeScalars.append(c) }
            } else if c == "\"" && field.isEmpty && !wasQuoted {
                quoted = true; wasQuoted = true
            } else if c == "," {
                row.append(field); field = ""; wasQuoted = false
            } else if c == "\r" {
                XCTAssertEqual(chars.popFirst(), "\n", "CRLF line ends")
                row.append(field); rows.append(row); row = []; field = ""; wasQuoted = false
            } else { field.unicodeScalars.append(c) }
        }
        XCTAssertTrue(row.isEmpty && field.isEmpty)
        return rows
    }

    func book() throws -> Gradebook {
        let keys = (0..<3).map { _ in DeviceKey.generate() }
        let roster = try Roster(entries: [
            RosterEntry(name: "Lovelace, Ada", studentID: "s1", enrollment: keys[0].enrollmentCode),
            RosterEntry(name: "=cmd|' /C calc'!A0", studentID: "s2", enrollment: keys[1].enrollmentCode),
            RosterEntry(name: "Turing", studentID: "-7", enrollment: keys[2].enrollmentCode),
        ])
        let specs = [
            QuestionSpec(number: 2, options: 4, kinds: [.multiSelect], correct: [.multiSelect(0b101)], points: 1.5),
            QuestionSpec(number: 1, options: 4, kinds: [.choice], correct: [.choice(1)], points: 2),
            QuestionSpec(number: 3, kinds: [.trueFalse]),  // ungraded: participation only
            QuestionSpec(number: 4, kinds: [.numeric], numeric: NumericRange(decimals: 2, lowest: 0, highest: 1000),
                         correct: [.numeric(125)], points: 0.25),
        ]
        // answers[question in specs order][student]
        let answers: [[Answer?]] = [
            [.multiSelect(0b101), .multiSelect(0b001), nil],
            [.choice(1), .choice(1), nil],
            [.trueFalse(true), nil, .trueFalse(false)],
            [.numeric(125), .numeric(120), nil],
        ]
        return Gradebook(roster: roster, questions: specs, answers: answers)
    }

    func testCanvasGradebookCellByCell() throws {
        let text = GradebookCSV.canvas(try book(), prefix: "Clicker 2026-11-23 #2285")
        XCTAssertEqual(Self.cells(text), [
            ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
             "Clicker 2026-11-23 #2285 Q1", "Clicker 2026-11-23 #2285 Q2", "Clicker 2026-11-23 #2285 Q4",
             "Clicker 2026-11-23 #2285 participation", "Clicker 2026-11-23 #2285 correctness"],
            ["Points Possible", "", "", "", "", "2", "1.5", "0.25", "4", "3.75"],
            ["Lovelace, Ada", "", "s1", "", "", "2", "1.5", "0.25", "4", "3.75"],
            ["'=cmd|' /C calc'!A0", "", "s2", "", "", "2", "0", "0", "3", "2"],
            ["Turing", "", "-7", "", "", "0", "0", "0", "1", "0"],
        ])
        XCTAssertTrue(text.contains("\"Lovelace, Ada\""), "a comma in a name is quoted")
    }

    func testMoodleGradebookCellByCell() throws {
        let text = GradebookCSV.moodle(try book(), prefix: "Clicker 2026-11-23 #2285")
        XCTAssertEqual(Self.cells(text), [
            ["Full name", "ID number",
             "Clicker 2026-11-23 #2285 Q1", "Clicker 2026-11-23 #2285 Q2", "Clicker 2026-11-23 #2285 Q4",
             "Clicker 2026-11-23 #2285 participation", "Clicker 2026-11-23 #2285 correctness"],
            ["Lovelace, Ada", "s1", "2", "1.5", "0.25", "4", "3.75"],
            ["'=cmd|' /C calc'!A0", "s2", "2", "0", "0", "3", "2"],
            ["Turing", "-7", "0", "0", "0", "1", "0"],
        ])
    }

    /// A poll with no correct answers still grades participation, with no correctness column.
    func testUngradedPollHasParticipationOnly() throws {
        let key = DeviceKey.generate()
        let roster = try Roster(entries: [RosterEntry(name: "Ada", studentID: "s1", enrollment: key.enrollmentCode)])
        let g = Gradebook(roster: roster, questions: [.choice(1), .choice(2)], answers: [[.choice(0)], [nil]])
        XCTAssertEqual(Self.cells(GradebookCSV.canvas(g, prefix: "P")), [
            ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "P participation"],
            ["Points Possible", "", "", "", "", "2"],
            ["Ada", "", "s1", "", "", "1"],
        ])
    }

    /// A roster poll of a question file with correct answers of every kind, through the controller:
    /// the export's gradebook scores the ballots counted against the definitions stored with the
    /// poll, and a resumed poll (which reads them back from the database) exports the same cells.
    func testExportedGradebookOfARosterPollFromAQuestionFile() async throws {
        let code = try JoinCode(parsing: "4821-ABCDE-FGHJK")
        let file = """
            questions:
              - title: Largest planet?
                kind: single
                options: [Mercury, Venus, Jupiter, Mars]
                correct: C
                points: 2
              - title: Noble gases?
                kind: multi
                options: [Helium, Iron, Neon]
                correct: A+C
                points: 1.5
              - title: Warm-up, not graded
                kind: truefalse
              - title: g in m/s²
                kind: numeric
                range: 9..10.5
                decimals: 2
                correct: 9.81
              - title: Order of the planets from the Sun
                kind: ranked
                options: [Mars, Venus, Earth]
                correct: B>C>A
            """
        let keys = (0..<3).map { _ in DeviceKey.generate() }
        let roster = try Roster(entries: [
            RosterEntry(name: "Ada", studentID: "s1", enrollment: keys[0].enrollmentCode),
            RosterEntry(name: "Alan", studentID: "s2", enrollment: keys[1].enrollmentCode),
            RosterEntry(name: "Grace", studentID: "s3", enrollment: keys[2].enrollmentCode),
        ])
        let dir = NSTemporaryDirectory() + "clicker-gradebook-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let store = try ClickerStore(path: dir + "/db.sqlite", durability: .normal)
        var options = PollOptions(joinCode: code, roster: roster, confirmByGATT: false)
        options.questionSet = try QuestionFile.parse(file, file: "lecture.yaml")
        let controller = try PollController(options: options, store: store)
        var t: UInt64 = 0, sequence: [UInt16] = [0, 0, 0]
        func vote(_ student: Int, _ q: UInt8, _ a: Answer) async {
            t += 1
            sequence[student] += 1
            let s = BallotSealer(secret: pollSecret(code), deviceKey: keys[student], mode: .roster)
            await controller.ingest(AdvertisementReport(address: DeviceAddress(rawValue: 0xD000 + UInt64(student)), rssi: nil,
                                                        companyID: BallotFormat.companyID,
                                                        data: s.advertisement(question: q, sequence: sequence[student], answer: a),
                                                        timestamp: RadioInstant(nanoseconds: t * 1_000_000_000)))
        }
        func ranking(_ order: [UInt8]) throws -> Answer { .ranking(try XCTUnwrap(Ranking(order: order))) }
        await vote(0, 1, .choice(2)); await vote(1, 1, .choice(0)); await vote(2, 1, .choice(1)); await vote(2, 1, .choice(2))
        try await controller.nextQuestion()
        await vote(0, 2, .multiSelect(0b101)); await vote(1, 2, .multiSelect(0b001))
        try await controller.nextQuestion()
        await vote(0, 3, .trueFalse(true)); await vote(2, 3, .trueFalse(false))
        try await controller.nextQuestion()
        await vote(0, 4, .numeric(981)); await vote(1, 4, .numeric(980)); await vote(2, 4, .numeric(981))
        try await controller.nextQuestion()
        await vote(0, 5, try ranking([1, 2, 0])); await vote(1, 5, try ranking([1, 2])); await vote(2, 5, try ranking([1, 2, 0]))
        let pollID = try XCTUnwrap(try store.polls().first?.id)
        let p = GradebookCSV.prefix(try XCTUnwrap(try store.poll(pollID)))
        let canvas: [[String]] = [
            ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "\(p) Q1", "\(p) Q2", "\(p) Q4", "\(p) Q5",
             "\(p) participation", "\(p) correctness"],
            ["Points Possible", "", "", "", "", "2", "1.5", "1", "1", "5", "5.5"],
            ["Ada", "", "s1", "", "", "2", "1.5", "1", "1", "5", "5.5"],
            ["Alan", "", "s2", "", "", "0", "0", "0", "0", "4", "0"],
            ["Grace", "", "s3", "", "", "2", "0", "1", "1", "4", "4"],
        ]
        let moodle = [["Full name", "ID number"] + canvas[0].dropFirst(5)] + canvas.dropFirst(2).map { [$0[0], $0[2]] + $0.dropFirst(5) }
        func exported(_ c: PollController) async throws -> (canvas: [[String]], moodle: [[String]]) {
            let files = try await c.export(to: dir)
            func cells(_ suffix: String) throws -> [[String]] {
                Self.cells(try String(contentsOfFile: try XCTUnwrap(files.first { $0.hasSuffix(suffix) }), encoding: .utf8))
            }
            return (try cells("-gradebook-canvas.csv"), try cells("-gradebook-moodle.csv"))
        }
        var e = try await exported(controller)
        XCTAssertEqual(e.canvas, canvas)
        XCTAssertEqual(e.moodle, moodle)
        XCTAssertTrue(p.hasPrefix("Clicker 20") && p.hasSuffix("#\(IDText.vote(code.voteID))"), p)

        // Resumed: the definitions (correct answers, points) come back from the database.
        var again = PollOptions(joinCode: JoinCode.random(), roster: roster, confirmByGATT: false)
        again.questionSet = []
        let resumed = try PollController(options: again, store: store, start: .resume(maxAge: .seconds(3600), stated: ResumeFlags()))
        e = try await exported(resumed)
        XCTAssertEqual(e.canvas, canvas)
        XCTAssertEqual(e.moodle, moodle)
    }

    func testNumbers() {
        XCTAssertEqual([0, 2, 0.5, 1.25, 3.75, 1.0 / 3, 0.1 + 0.2, -1.5, 12_345].map(GradebookCSV.number),
                       ["0", "2", "0.5", "1.25", "3.75", "0.3333", "0.3", "-1.5", "12345"])
    }

    func testColumnsAreNamedAfterThePoll() {
        let poll = PollRecord(id: 1, voteID: Data([0x08, 0xED]), joinCode: nil, mode: .roster, title: nil,
                              createdAt: Date(timeIntervalSince1970: 1_795_424_100), closedAt: nil)
        XCTAssertEqual(GradebookCSV.prefix(poll), "Clicker 2026-11-23 #2285")
    }
}
