import struct ClickerTransport.SplitMix64
import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

/// Graded roster polls: the correctness rule of each kind, and each student's scores per question
/// and in total, from ballots counted by the real pipeline.
final class GradingTests: XCTestCase {
    func ranking(_ order: [UInt8]) -> Answer { .ranking(Ranking(order: order)!) }  // test constants

    func testCorrectnessIsExactForEveryKind() {
        let single = QuestionSpec(number: 1, options: 4, kinds: [.choice], correct: [.choice(1), .choice(3)])
        XCTAssertTrue(Gradebook.isCorrect(.choice(1), for: single))
        XCTAssertTrue(Gradebook.isCorrect(.choice(3), for: single), "any of the correct answers scores")
        XCTAssertFalse(Gradebook.isCorrect(.choice(0), for: single))

        let tf = QuestionSpec(number: 2, kinds: [.trueFalse], correct: [.trueFalse(false)])
        XCTAssertTrue(Gradebook.isCorrect(.trueFalse(false), for: tf))
        XCTAssertFalse(Gradebook.isCorrect(.trueFalse(true), for: tf))

        let multi = QuestionSpec(number: 3, options: 5, kinds: [.multiSelect], correct: [.multiSelect(0b00101)])
        XCTAssertTrue(Gradebook.isCorrect(.multiSelect(0b00101), for: multi))
        XCTAssertFalse(Gradebook.isCorrect(.multiSelect(0b00001), for: multi), "a subset is not the set")
        XCTAssertFalse(Gradebook.isCorrect(.multiSelect(0b10101), for: multi), "a superset is not the set")
        let lone = QuestionSpec(number: 3, options: 5, kinds: [.multiSelect], correct: [.choice(2)])
        XCTAssertTrue(Gradebook.isCorrect(.multiSelect(0b100), for: lone), "a lone letter means that option alone")

        let numeric = QuestionSpec(number: 4, kinds: [.numeric], numeric: NumericRange(decimals: 1, lowest: 0, highest: 100),
                                   correct: [.numeric(35)])
        XCTAssertTrue(Gradebook.isCorrect(.numeric(35), for: numeric))
        XCTAssertFalse(Gradebook.isCorrect(.numeric(36), for: numeric), "no tolerance: 3.6 is not 3.5")

        let ranked = QuestionSpec(number: 5, options: 4, kinds: [.ranking], correct: [ranking([1, 0])])
        XCTAssertTrue(Gradebook.isCorrect(ranking([1, 0]), for: ranked))
        XCTAssertFalse(Gradebook.isCorrect(ranking([1, 0, 2]), for: ranked), "ranking more options is another order")
        XCTAssertFalse(Gradebook.isCorrect(ranking([0, 1]), for: ranked))
        XCTAssertFalse(Gradebook.isCorrect(ranking([1]), for: ranked))
        let first = QuestionSpec(number: 5, options: 4, kinds: [.ranking], correct: [.choice(2)])
        XCTAssertTrue(Gradebook.isCorrect(ranking([2]), for: first))
        XCTAssertFalse(Gradebook.isCorrect(ranking([2, 0]), for: first))

        // Scores: points when correct, 0 when wrong or unanswered, nothing for an ungraded question.
        let worth = QuestionSpec(number: 6, kinds: [.choice], correct: [.choice(0)], points: 2.5)
        XCTAssertEqual(Gradebook.score(.choice(0), for: worth).points, 2.5)
        XCTAssertEqual(Gradebook.score(.choice(1), for: worth).points, 0)
        XCTAssertEqual(Gradebook.score(nil, for: worth).points, 0)
        XCTAssertEqual(Gradebook.score(nil, for: worth).correct, false)
        XCTAssertEqual(Gradebook.score(.choice(1), for: .choice(7)).points, nil)
        XCTAssertEqual(Gradebook.score(.choice(1), for: .choice(7)).correct, nil)
        XCTAssertEqual(Gradebook.score(.choice(1), for: single).points, 1, "1 point when the question declares none")
    }

    /// Four students, a set with one question of each kind (one ungraded), ballots sealed and
    /// counted by the pipeline (changes and an unenrolled device included).
    func testScoresEachStudentPerQuestionAndInTotal() throws {
        var rng = SplitMix64(seed: 1414)
        let keys = (0..<5).map { _ in DeviceKey.generate(using: &rng) }
        let roster = try Roster(entries: (0..<4).map {
            RosterEntry(name: "Student \($0)", studentID: "s\($0)", enrollment: keys[$0].enrollmentCode)
        })
        let code = try JoinCode(parsing: "4821-K7QXM-3PF9A")
        var p = IngestPipeline(secret: pollSecret(code), roster: roster.rosterKeys, rosterOnly: true)
        let specs = [
            QuestionSpec(number: 1, options: 4, kinds: [.choice], correct: [.choice(2)], points: 2),
            QuestionSpec(number: 2, kinds: [.trueFalse], correct: [.trueFalse(true)]),
            QuestionSpec(number: 3, options: 4, kinds: [.multiSelect], correct: [.multiSelect(0b0011)], points: 1.5),
            QuestionSpec(number: 4, kinds: [.numeric], numeric: NumericRange(decimals: 1, lowest: 0, highest: 100),
                         correct: [.numeric(35)], points: 3),
            QuestionSpec(number: 5, options: 4, kinds: [.ranking], correct: [ranking([3, 1])]),
            QuestionSpec(number: 6, options: 3, kinds: [.choice]),  // ungraded
        ]
        for s in specs { p.tally.open(s) }
        let sealers = keys.map { BallotSealer(secret: pollSecret(code), deviceKey: $0, mode: .roster) }
        var t: UInt64 = 0
        func cast(_ student: Int, _ q: UInt8, _ a: Answer, seq: UInt16) -> RecordOutcome? {
            t += 1
            return p.ingest(AdvertisementReport(address: DeviceAddress(rawValue: 100 + UInt64(student)), rssi: nil,
                                                companyID: BallotFormat.companyID,
                                                data: sealers[student].advertisement(question: q, sequence: seq, answer: a),
                                                timestamp: .ms(t * 1000))).outcome
        }
        // Student 0: all correct (changes their mind on 1 to the right answer).
        XCTAssertEqual(cast(0, 1, .choice(0), seq: 1), .new)
        XCTAssertEqual(cast(0, 1, .choice(2), seq: 2), .changed(from: .choice(0)))
        XCTAssertEqual(cast(0, 2, .trueFalse(true), seq: 3), .new)
        XCTAssertEqual(cast(0, 3, .multiSelect(0b0011), seq: 4), .new)
        XCTAssertEqual(cast(0, 4, .numeric(35), seq: 5), .new)
        XCTAssertEqual(cast(0, 5, ranking([3, 1]), seq: 6), .new)
        XCTAssertEqual(cast(0, 6, .choice(0), seq: 7), .new)
        // Student 1: right, wrong (a subset), wrong number, a longer ranking; skips 2 and 6.
        XCTAssertEqual(cast(1, 1, .choice(2), seq: 1), .new)
        XCTAssertEqual(cast(1, 3, .multiSelect(0b0001), seq: 2), .new)
        XCTAssertEqual(cast(1, 4, .numeric(36), seq: 3), .new)
        XCTAssertEqual(cast(1, 5, ranking([3, 1, 0]), seq: 4), .new)
        // Student 2: only the ungraded question, and an answer not offered (never counts).
        XCTAssertEqual(cast(2, 6, .choice(2), seq: 1), .new)
        XCTAssertEqual(cast(2, 1, .choice(5), seq: 2), .rejected(.answerNotOffered))
        // Student 3 never answers; device 4 is not enrolled.
        XCTAssertEqual(cast(4, 1, .choice(2), seq: 1), .rejected(.unknownVoter))

        let book = Gradebook(roster: roster, tally: p.tally, keyring: p.keyring)
        XCTAssertEqual(book.questions.map(\.spec.number), [1, 2, 3, 4, 5, 6])
        XCTAssertEqual(book.questions.map(\.pointsPossible), [2, 1, 1.5, 3, 1, 0])
        XCTAssertEqual(book.pointsPossible, 8.5)
        XCTAssertEqual(book.questionsAsked, 6)
        XCTAssertEqual(book.students.map(\.entry.studentID), ["s0", "s1", "s2", "s3"])
        XCTAssertEqual(book.students.map { $0.scores.map(\.points) }, [
            [2, 1, 1.5, 3, 1, nil],
            [2, 0, 0, 0, 0, nil],
            [0, 0, 0, 0, 0, nil],
            [0, 0, 0, 0, 0, nil],
        ])
        XCTAssertEqual(book.students.map { $0.scores.map(\.correct) }, [
            [true, true, true, true, true, nil],
            [true, false, false, false, false, nil],
            [false, false, false, false, false, nil],
            [false, false, false, false, false, nil],
        ])
        XCTAssertEqual(book.students.map { $0.scores.map(\.answered) }, [
            [true, true, true, true, true, true],
            [true, false, true, true, true, false],
            [false, false, false, false, false, true],
            [false, false, false, false, false, false],
        ])
        XCTAssertEqual(book.students.map(\.answered), [6, 4, 1, 0])
        XCTAssertEqual(book.students.map(\.points), [8.5, 2, 0, 0])
        XCTAssertEqual(book.students[1].scores[4].answer, ranking([3, 1, 0]))
    }
}
