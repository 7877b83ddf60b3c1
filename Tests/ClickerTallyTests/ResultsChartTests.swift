import Foundation
import XCTest

import ClickerTestSupport
@testable import ClickerTally
import ClickerTransport
import ClickerWire

/// The SVG chart: well-formed XML (parsed by Foundation's XMLParser, an independent parser), the
/// same counts as the results on every bar, escaped text.
final class ResultsChartTests: XCTestCase {
    /// Counts `answers` (one voter each) on a question of `spec` and returns its results.
    func results(_ spec: QuestionSpec, _ answers: [Answer]) throws -> QuestionResults {
        var tally = Tally(voteID: 4821)
        tally.open(spec)
        for (i, a) in answers.enumerated() {
            let b = Ballot(mode: .anonymous, voteID: 4821, question: spec.number, voterID: UInt32(i + 1), sequence: 1, answer: a)
            XCTAssertEqual(tally.record(b, from: DeviceAddress(rawValue: UInt64(i + 1)), at: .ms(UInt64(i))), .new, "\(a)")
        }
        return try XCTUnwrap(tally.results(question: spec.number))
    }

    func testSingleChoiceBarsCarryTheResultsCountsAndTheOptionTexts() throws {
        let spec = QuestionSpec(number: 3, options: 4, title: "Which is a prime?", optionTexts: ["4", "7", "9", "15"])
        let answers: [Answer] = [.choice(1), .choice(1), .choice(1), .choice(0), .choice(3)]
        let r = try results(spec, answers)
        let doc = try ParsedSVG(ResultsChart(results: r, spec: spec).svg())
        var expected: [String: Int] = [:]
        for (answer, n) in r.countTable { expected[answer.description] = n }
        XCTAssertEqual(doc.bars, expected, "one bar per offered option, with the tally's count")
        XCTAssertEqual(doc.bars, ["A": 1, "B": 3, "C": 0, "D": 1])
        XCTAssertEqual(doc.counts, doc.bars, "the number printed on each bar is its count")
        XCTAssertEqual(doc.texts(class: "option-text"), ["4", "7", "9", "15"])
        XCTAssertEqual(doc.texts(class: "label"), ["A", "B", "C", "D"])
        XCTAssertEqual(doc.texts(class: "title"), ["Which is a prime?"])
        XCTAssertEqual(doc.texts(class: "voters"), ["5 voters"])
        XCTAssertEqual(doc.title, "Question 3: Which is a prime?")
        // Bars scale with their counts: B is the longest, C has none.
        XCTAssertGreaterThan(doc.widths["B"] ?? 0, doc.widths["A"] ?? 0)
        XCTAssertEqual(doc.widths["C"], 0)
        XCTAssertEqual(doc.widths["A"], doc.widths["D"])
    }

    func testMarkupInTheTitleAndOptionTextsIsEscaped() throws {
        let hostile = "<&\"> '</text><script>alert(1)</script>"
        let spec = QuestionSpec(number: 1, options: 2, title: hostile, optionTexts: ["a < b & c", "\"quoted\"\u{07}\u{202E}"])
        let svg = ResultsChart(results: try results(spec, [.choice(0)]), spec: spec).svg()
        let doc = try ParsedSVG(svg)
        XCTAssertFalse(svg.contains("<script"), "markup in the title stays text")
        XCTAssertEqual(doc.texts(class: "title"), [SVGText.fitted(hostile, limit: 56)])
        XCTAssertEqual(doc.title, "Question 1: " + hostile, "the parser reads back exactly the title")
        XCTAssertEqual(doc.texts(class: "option-text"), ["a < b & c", "\"quoted\"\u{FFFD}\u{FFFD}"],
                       "a control character or a bidirectional override becomes U+FFFD")
        XCTAssertEqual(doc.bars, ["A": 1, "B": 0])
    }

    func testTrueFalseAndMultiSelectBars() throws {
        let tf = QuestionSpec(number: 2, options: 2, kinds: [.trueFalse])
        let tfDoc = try ParsedSVG(ResultsChart(results: try results(tf, [.trueFalse(true), .trueFalse(false), .trueFalse(true)]),
                                               spec: tf).svg())
        XCTAssertEqual(tfDoc.bars, ["true": 2, "false": 1])
        XCTAssertEqual(tfDoc.texts(class: "label"), ["True", "False"])
        XCTAssertEqual(tfDoc.texts(class: "title"), ["Question 2"], "no title: the question's number")

        // A+C, A, B+C+D: A chosen twice, B once, C twice, D once.
        let ms = QuestionSpec(number: 4, options: 4, kinds: [.multiSelect])
        let r = try results(ms, [.multiSelect(0b0101), .multiSelect(0b0001), .multiSelect(0b1110)])
        let doc = try ParsedSVG(ResultsChart(results: r, spec: ms).svg())
        // Each bar is the sum of the results' counts of the selections holding its option.
        var expected: [String: Int] = [:]
        for i in 0..<4 {
            expected[Answer.multiSelect(1 << UInt8(i)).description] = r.countTable.reduce(0) { sum, entry in
                guard case .multiSelect(let m) = entry.key, m & (1 << UInt8(i)) != 0 else { return sum }
                return sum + entry.value
            }
        }
        XCTAssertEqual(doc.bars, expected)
        XCTAssertEqual(doc.bars, ["A+": 2, "B+": 1, "C+": 2, "D+": 1])
        XCTAssertEqual(doc.texts(class: "voters"), ["3 voters"])
        XCTAssertEqual(doc.texts(class: "note").count, 1, "the chart says that bars do not add up to the voters")
    }

    func testNumericValuesAreBarsInDecimalNotation() throws {
        let spec = QuestionSpec(number: 5, options: 1, kinds: [.numeric], numeric: NumericRange(decimals: 1, lowest: -100, highest: 100))
        let r = try results(spec, [.numeric(25), .numeric(-5), .numeric(25)])
        let doc = try ParsedSVG(ResultsChart(results: r, spec: spec).svg())
        XCTAssertEqual(doc.bars, ["2.5": 2, "-0.5": 1])
    }

    func testSealedTotalsChart() throws {
        let chart = ResultsChart(question: 7, title: "Totals", optionTexts: ["yes"], choiceCounts: [4, 0, 9], voters: 13)
        let doc = try ParsedSVG(chart.svg())
        XCTAssertEqual(doc.bars, ["A": 4, "B": 0, "C": 9])
        XCTAssertEqual(doc.texts(class: "option-text"), ["yes"])
    }

    func testBarsUseTheOkabeItoPaletteInOrder() throws {
        let spec = QuestionSpec.choice(1, options: 8)
        let doc = try ParsedSVG(ResultsChart(results: try results(spec, []), spec: spec).svg())
        XCTAssertEqual(doc.fills, ResultsChart.palette)
        XCTAssertEqual(doc.texts(class: "voters"), ["0 voters"])
        XCTAssertEqual(Set(doc.bars.values), [0], "no votes: every bar empty, no division by zero")
    }
}
