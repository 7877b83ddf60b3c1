import ClickerQuestions
import ClickerTally
import ClickerWire
import XCTest

/// The question file: a good one read field by field, and each kind of bad one with its exact message.
final class QuestionFileTests: XCTestCase {
    let good = """
        # Week 3
        questions:
          - title: Which planet is the largest?
            kind: single
            options: [Mercury, Venus, Jupiter, Mars]
            correct: C
            points: 1
          - title: Which are noble gases?
            kind: multi
            options:
              - Helium
              - Iron
              - Neon
            correct: A+C
            points: 2
          - title: The Sun is a star
            kind: truefalse
            correct: true
          - title: g in m/s²
            kind: numeric
            range: 0..20
            decimals: 2
            correct: [9.81, 9.8]
            points: 0.5
          - title: "Rank: most used first"
            kind: ranked
            options: [Swift, Rust, Go, C]
          - title: Any number
            kind: numeric
          - title: Norway?
            kind: single
            options: [yes, no, on, off]
        """

    func testAGoodFile() throws {
        let specs = try QuestionFile.parse(good, file: "week3.yaml")
        XCTAssertEqual(specs.map(\.number), [1, 2, 3, 4, 5, 6, 7])
        XCTAssertEqual(specs[0], QuestionSpec(number: 1, options: 4, kinds: [.choice], title: "Which planet is the largest?",
                                              optionTexts: ["Mercury", "Venus", "Jupiter", "Mars"], correct: [.choice(2)], points: 1))
        XCTAssertEqual(specs[1], QuestionSpec(number: 2, options: 3, kinds: [.multiSelect], title: "Which are noble gases?",
                                              optionTexts: ["Helium", "Iron", "Neon"], correct: [.multiSelect(0b101)], points: 2))
        XCTAssertEqual(specs[2], QuestionSpec(number: 3, options: 2, kinds: [.trueFalse], title: "The Sun is a star",
                                              correct: [.trueFalse(true)]))
        XCTAssertEqual(specs[3], QuestionSpec(number: 4, options: 1, kinds: [.numeric], title: "g in m/s²",
                                              numeric: NumericRange(decimals: 2, lowest: 0, highest: 2000),
                                              correct: [.numeric(981), .numeric(980)], points: 0.5))
        XCTAssertEqual(specs[4], QuestionSpec(number: 5, options: 4, kinds: [.ranking], title: "Rank: most used first",
                                              optionTexts: ["Swift", "Rust", "Go", "C"]))
        XCTAssertEqual(specs[5].numeric, NumericRange(decimals: 0), "no range: any 16-bit number")
        XCTAssertEqual(specs[6].optionTexts, ["yes", "no", "on", "off"], "texts stay texts, never booleans")
        // What each question offers follows its kind.
        XCTAssertTrue(specs[1].offers(.multiSelect(0b011)))
        XCTAssertFalse(specs[1].offers(.choice(0)))
        XCTAssertFalse(specs[1].offers(.multiSelect(0b1000)), "D is not offered")
        XCTAssertTrue(specs[3].offers(.numeric(2000)))
        XCTAssertFalse(specs[3].offers(.numeric(2001)))
        XCTAssertTrue(specs[4].offers(.ranking(Ranking(order: [3, 0])!)))
        XCTAssertFalse(specs[4].offers(.ranking(Ranking(order: [4])!)))
    }

    /// One bad file each, with the message an instructor reads.
    func testEachBadFileHasItsMessage() {
        let cases: [(String, String, UInt)] = [
            ("questions:\n  - title: Q\n    kind: single\n    options: [a, b]\n  - title: R\n    kind: multiple\n    options: [a, b]\n",
             "lecture.yaml:6: question 2: 'kind': 'multiple' is not one of single, multi, truefalse, numeric, ranked", #line),
            ("questions:\n  - kind: single\n    options: [a, b]\n",
             "lecture.yaml:2: question 1: 'title': missing", #line),
            ("questions:\n  - title: Q\n    options: [a, b]\n",
             "lecture.yaml:2: question 1: 'kind': missing: one of single, multi, truefalse, numeric, ranked", #line),
            ("questions:\n  - title: Q\n    kind: single\n    options: [a, b, c, d, e, f, g, h, i]\n",
             "lecture.yaml:4: question 1: 'options': 9 options, at most 8 (A to H)", #line),
            ("questions:\n  - title: Q\n    kind: ranked\n    options: [a]\n",
             "lecture.yaml:4: question 1: 'options': 1 option, at least 2", #line),
            ("questions:\n  - title: Q\n    kind: single\n",
             "lecture.yaml:2: question 1: 'options': missing: a single question lists its option texts", #line),
            ("questions:\n  - title: Q\n    kind: truefalse\n    options: [yes, no]\n",
             "lecture.yaml:4: question 1: 'options': a truefalse question offers true and false, no options", #line),
            ("questions:\n  - title: Q\n    kind: numeric\n    options: [a, b]\n",
             "lecture.yaml:4: question 1: 'options': a numeric question takes a number, no options", #line),
            ("questions:\n  - title: Q\n    kind: single\n    options: [a, b, c, d]\n    correct: E\n",
             "lecture.yaml:5: question 1: 'correct': 'E' is not one of the options A to D", #line),
            ("questions:\n  - title: Q\n    kind: multi\n    options: [a, b, c]\n    correct: [A+B, B+D]\n",
             "lecture.yaml:5: question 1: 'correct': 'D' is not one of the options A to C", #line),
            ("questions:\n  - title: Q\n    kind: numeric\n    range: 0..10\n    correct: 11\n",
             "lecture.yaml:5: question 1: 'correct': 11 is outside the range 0..10", #line),
            ("questions:\n  - title: Q\n    kind: truefalse\n    correct: maybe\n",
             "lecture.yaml:4: question 1: 'correct': 'maybe' is neither true nor false", #line),
            ("questions:\n  - title: Q\n    kind: numeric\n    range: 10..0\n",
             "lecture.yaml:4: question 1: 'range': '10..0' is empty: its low end is above its high end", #line),
            ("questions:\n  - title: Q\n    kind: numeric\n    range: 0 to 10\n",
             "lecture.yaml:4: question 1: 'range': '0 to 10' is not a range LOW..HIGH, like 0..100 or -2.5..2.5", #line),
            ("questions:\n  - title: Q\n    kind: numeric\n    decimals: 2\n    range: 0..400\n",
             "lecture.yaml:5: question 1: 'range': '400' does not fit the 16 bits a ballot carries (-327.68 to 327.67 with 2 decimals)", #line),
            ("questions:\n  - title: Q\n    kind: numeric\n    decimals: 5\n    range: 0.00001..0.00002\n",
             "lecture.yaml:4: question 1: 'decimals': '5' is not 0 to 4", #line),
            ("questions:\n  - title: Q\n    kind: numeric\n    range: 0..1.5\n",
             "lecture.yaml:4: question 1: 'range': '1.5' has more than 0 decimals", #line),
            ("questions:\n  - title: Q\n    kind: single\n    options: [a, b]\n    range: 0..3\n",
             "lecture.yaml:5: question 1: 'range': only a numeric question has a range", #line),
            ("questions:\n  - title: Q\n    kind: single\n    options: [a, b]\n    points: 2\n",
             "lecture.yaml:5: question 1: 'points': points need a correct answer ('correct')", #line),
            ("questions:\n  - title: Q\n    kind: single\n    options: [a, b]\n    colour: red\n",
             "lecture.yaml:5: question 1: 'colour' is not a field of a question (title, kind, options, correct, points, range, decimals)", #line),
            ("questions:\n  - title: Q\n    kind: single\n    options: [a, b]\n  - title: R\n    kind: truefalse\n    kind: single\n",
             "lecture.yaml:7: question 2: 'kind': given twice (first on line 6)", #line),
            ("questions:\n  - title: Q\n    kind: single\n    options: [a, b]\nquestions:\n  - title: R\n",
             "lecture.yaml:5: 'questions' is given twice in one mapping (first on line 1)", #line),
            ("questions:\n  - title: Q\n    kind: single\n    options: [a, b\n  - title: R\n",
             "lecture.yaml:5: not valid YAML: did not find expected ',' or ']'", #line),
            ("", "lecture.yaml:1: no questions: the file must hold 'questions:', a list of questions", #line),
            ("# nothing yet\n", "lecture.yaml:1: no questions: the file must hold 'questions:', a list of questions", #line),
            ("questions:\n", "lecture.yaml:1: 'questions' must be a list of questions (each starting with '- title:')", #line),
            ("quizzes:\n  - title: Q\n", "lecture.yaml:1: 'quizzes' is not a field of a question file (only 'questions')", #line),
        ]
        for (text, message, line) in cases {
            XCTAssertThrowsError(try QuestionFile.parse(text, file: "lecture.yaml"), line: line) { error in
                XCTAssertEqual("\(error)", message, line: line)
            }
        }
    }

    func testNumbersInTheStudentsUnits() {
        XCTAssertEqual(try NumericText.wire("9.81", decimals: 2).get(), 981)
        XCTAssertEqual(try NumericText.wire("-0.5", decimals: 2).get(), -50)
        XCTAssertEqual(try NumericText.wire("007", decimals: 0).get(), 7)
        XCTAssertEqual(NumericText.text(-50, decimals: 2), "-0.50")
        XCTAssertEqual(NumericText.text(981, decimals: 2), "9.81")
        XCTAssertEqual(NumericText.text(Int16.min, decimals: 0), "-32768")
        XCTAssertEqual(try NumericText.wire("-32768", decimals: 0).get(), .min)
        XCTAssertThrowsError(try NumericText.wire("32768", decimals: 0).get())
        XCTAssertThrowsError(try NumericText.wire("1.", decimals: 1).get())
        XCTAssertThrowsError(try NumericText.wire("", decimals: 0).get())
        XCTAssertEqual(NumericText.decimals(in: "-0.25..10.5"), 2)
    }

    /// Ad-hoc questions (command line, D-Bus) go through the same kinds.
    func testAdHocQuestions() throws {
        XCTAssertEqual(try AdHocQuestion.spec(number: 2, kind: "multi", options: ["5"], title: nil),
                       QuestionSpec(number: 2, options: 5, kinds: [.multiSelect]))
        XCTAssertEqual(try AdHocQuestion.spec(number: 1, kind: "ranked", options: ["Swift", "Go", "Rust"], title: " Rank "),
                       QuestionSpec(number: 1, options: 3, kinds: [.ranking], title: "Rank", optionTexts: ["Swift", "Go", "Rust"]))
        XCTAssertEqual(try AdHocQuestion.spec(number: 1, kind: "truefalse", options: [], title: "T"),
                       QuestionSpec(number: 1, options: 2, kinds: [.trueFalse], title: "T"))
        XCTAssertEqual(try AdHocQuestion.spec(number: 1, kind: "numeric", options: ["0.0..10.0"], title: nil).numeric,
                       NumericRange(decimals: 1, lowest: 0, highest: 100))
        XCTAssertEqual(try AdHocQuestion.spec(number: 1, kind: "numeric", options: [], title: nil, range: "-5..5", decimals: 2).numeric,
                       NumericRange(decimals: 2, lowest: -500, highest: 500))
        let refused: [(String, [String], String?, Int?, String)] = [
            ("multiple", ["4"], nil, nil, "'multiple' is not a question kind: one of single, multi, truefalse, numeric, ranked"),
            ("single", ["9"], nil, nil, "9 options: a question offers 2 to 8 (A to H)"),
            ("single", ["0"], nil, nil, "0 options: a question offers 2 to 8 (A to H)"),
            ("single", ["a", "b", "c", "d", "e", "f", "g", "h", "i"], nil, nil, "9 options: a question offers 2 to 8 (A to H)"),
            ("single", ["a", ""], nil, nil, "option 2 has no text"),
            ("truefalse", ["a", "b"], nil, nil, "a truefalse question offers true and false: give it no options"),
            ("single", ["4"], "0..3", nil, "a single question has no range or decimals: only a numeric question has"),
            ("numeric", [], "3..0", nil, "range: '3..0' is empty: its low end is above its high end"),
            ("numeric", [], nil, 5, "5 decimals: a numeric question has 0 to 4"),
            // A range written with more decimals than a ballot's scale takes, from the command line's
            // `--range` or from D-Bus (the range as the one option): refused, not clamped to 4 decimals.
            ("numeric", [], "0.00001..0.00002", nil,
             "range '0.00001..0.00002' has 5 decimals: a numeric question has 0 to 4 (the 16 bits a ballot carries)"),
            ("numeric", ["0.00001..0.00002"], nil, nil,
             "range '0.00001..0.00002' has 5 decimals: a numeric question has 0 to 4 (the 16 bits a ballot carries)"),
        ]
        for (kind, options, range, decimals, message) in refused {
            XCTAssertThrowsError(try AdHocQuestion.spec(number: 1, kind: kind, options: options, title: nil, range: range,
                                                        decimals: decimals)) {
                XCTAssertEqual("\($0)", message)
            }
        }
    }
}
