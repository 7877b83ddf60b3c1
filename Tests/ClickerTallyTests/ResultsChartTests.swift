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

    /// A ranked question: the last round as bars with the winner marked, and every round in the table,
    /// each cell with the count's votes. Hand-counted: A>C ×5, B>C ×4, C ×1, C>B ×2. Round 1: A 5, B 4,
    /// C 3 of 12, no majority, C out. Round 2: the lone C ballot is exhausted, C>B moves to B: A 5,
    /// B 6 of 11 active, B wins.
    func testRankedChartShowsEveryRoundAndTheWinner() throws {
        let spec = QuestionSpec(number: 6, options: 3, kinds: [.ranking], title: "Best city",
                                optionTexts: ["<Paris>", "Rome & co", "Oslo"])
        func ranking(_ o: [UInt8]) throws -> Answer { .ranking(try XCTUnwrap(Ranking(order: o))) }
        var answers: [Answer] = []
        answers += try Array(repeating: ranking([0, 2]), count: 5)
        answers += try Array(repeating: ranking([1, 2]), count: 4)
        answers += [try ranking([2])]
        answers += try Array(repeating: ranking([2, 1]), count: 2)
        let r = try results(spec, answers)
        let svg = ResultsChart(results: r, spec: spec).svg()
        let doc = try ParsedSVG(svg)
        XCTAssertEqual(doc.roundOrder, [1, 2])
        XCTAssertEqual(doc.rounds[1], ParsedSVG.Round(active: 12, exhausted: 0, eliminated: "C", votes: ["A": 5, "B": 4, "C": 3]))
        XCTAssertEqual(doc.rounds[2], ParsedSVG.Round(active: 11, exhausted: 1, eliminated: nil, votes: ["A": 5, "B": 6]))
        // The same figures as the results' own rounds.
        guard case .ranked(let ranked) = r.byKind else { return XCTFail("\(r.byKind)") }
        for round in ranked.rounds {
            XCTAssertEqual(doc.rounds[round.number]?.votes, Dictionary(uniqueKeysWithValues: round.votes.map { ($0.option, $0.count) }))
            XCTAssertEqual(doc.rounds[round.number]?.active, round.active)
            XCTAssertEqual(doc.rounds[round.number]?.exhausted, round.exhausted)
        }
        XCTAssertEqual(doc.bars, ["A": 5, "B": 6], "the last round as bars")
        XCTAssertEqual(doc.barRounds, [2])
        XCTAssertEqual(doc.winners, ["B"])
        XCTAssertEqual(doc.texts(class: "label"), ["A", "B ✓"])
        XCTAssertEqual(doc.texts(class: "option-text"), ["<Paris>", "Rome & co"], "escaped, and read back as text")
        XCTAssertTrue(svg.contains("&lt;Paris&gt;") && svg.contains("Rome &amp; co"))
        XCTAssertEqual(doc.texts(class: "note"), ["Instant runoff: winner B (6 of 11 active ballots, round 2)."])
        XCTAssertEqual(doc.texts(class: "voters"), ["12 voters"])
    }

    /// A numeric question: one column per bin with its count, and the statistics in the question's
    /// units. Hand-counted (one decimal): -0.5, 1.2 ×2, 1.5, 2.0 ×3, 3.0: median (1.5 + 2.0) / 2 = 1.75,
    /// quartiles 1.2 (of -0.5 1.2 1.2 1.5) and 2.0 (of 2.0 2.0 2.0 3.0).
    func testNumericChartIsAHistogramWithMedianAndQuartiles() throws {
        let spec = QuestionSpec(number: 5, options: 1, kinds: [.numeric], numeric: NumericRange(decimals: 1, lowest: -100, highest: 100))
        let values: [Int16] = [-5, 12, 12, 15, 20, 20, 20, 30]
        let r = try results(spec, values.map { .numeric($0) })
        let doc = try ParsedSVG(ResultsChart(results: r, spec: spec).svg())
        XCTAssertEqual(doc.binOrder, ["-0.5", "1.2", "1.5", "2.0", "3.0"])
        XCTAssertEqual(doc.bins, ["-0.5": 1, "1.2": 2, "1.5": 1, "2.0": 3, "3.0": 1])
        XCTAssertEqual(doc.bars, [:], "no bar by option")
        let stats = try XCTUnwrap(doc.attributes(class: "statistics").first)
        XCTAssertEqual(stats["data-median"], "1.75")
        XCTAssertEqual(stats["data-lower-quartile"], "1.2")
        XCTAssertEqual(stats["data-upper-quartile"], "2.0")
        XCTAssertEqual(stats["data-minimum"], "-0.5")
        XCTAssertEqual(stats["data-maximum"], "3.0")
        XCTAssertEqual(doc.texts(class: "statistics"), ["Median 1.75 · quartiles 1.2 – 2.0 · range -0.5 – 3.0"])

        // Eleven distinct values: bins two wide, every ballot in one.
        let wide = QuestionSpec(number: 6, options: 1, kinds: [.numeric])
        let many = try ParsedSVG(ResultsChart(results: try results(wide, (0...10).map { .numeric(Int16($0)) }), spec: wide).svg())
        XCTAssertEqual(many.binOrder, ["0–1", "2–3", "4–5", "6–7", "8–9", "10–11"])
        XCTAssertEqual(many.bins.values.reduce(0, +), 11)
        XCTAssertEqual(many.bins["10–11"], 1)
        XCTAssertEqual(many.bins["4–5"], 2)
        XCTAssertEqual(many.texts(class: "label"), many.binOrder, "each bin's label under it")

        // Long labels (tenths, negative) are printed whole, in smaller type.
        let tenths = QuestionSpec(number: 7, options: 1, kinds: [.numeric], numeric: NumericRange(decimals: 1))
        let long = try ParsedSVG(ResultsChart(results: try results(tenths, (-125 ... -115).map { .numeric(Int16($0)) }), spec: tenths).svg())
        XCTAssertEqual(long.bins.values.reduce(0, +), 11)
        XCTAssertEqual(long.texts(class: "label"), long.binOrder)
        XCTAssertTrue(long.binOrder.contains("-12.6–-12.5"), "\(long.binOrder)")
    }

    func testBarsUseTheOkabeItoPaletteInOrder() throws {
        let spec = QuestionSpec.choice(1, options: 8)
        let doc = try ParsedSVG(ResultsChart(results: try results(spec, []), spec: spec).svg())
        XCTAssertEqual(doc.fills, ResultsChart.palette)
        XCTAssertEqual(doc.texts(class: "voters"), ["0 voters"])
        XCTAssertEqual(Set(doc.bars.values), [0], "no votes: every bar empty, no division by zero")
    }
}
