import ClickerTally
import ClickerWire
import XCTest

/// Results per kind, on small inputs checked by hand.
final class KindResultsTests: XCTestCase {
    func numeric(_ values: [Int16], decimals: Int = 0, range: NumericRange? = nil) -> NumericResults {
        var counts: [Answer: Int] = [:]
        for v in values { counts[.numeric(v), default: 0] += 1 }
        let spec = QuestionSpec(number: 1, kinds: [.numeric], numeric: range ?? NumericRange(decimals: decimals))
        guard case .numeric(let n) = KindResults(spec: spec, counts: counts) else {
            XCTFail("not numeric results")
            return NumericResults(values: [], decimals: 0)
        }
        return n
    }

    func testQuartilesAreTheMediansOfTheHalves() {
        let even = numeric([8, 3, 1, 5, 2, 7, 4, 6])
        XCTAssertEqual(even.lowerQuartile.map(even.text(halfUnits:)), "2.5")
        XCTAssertEqual(even.median.map(even.text(halfUnits:)), "4.5")
        XCTAssertEqual(even.upperQuartile.map(even.text(halfUnits:)), "6.5")
        // Odd: the median is in neither half.
        let odd = numeric([5, 1, 4, 2, 3])
        XCTAssertEqual([odd.lowerQuartile, odd.median, odd.upperQuartile].map { $0.map(odd.text(halfUnits:)) }, ["1.5", "3", "4.5"])
        XCTAssertEqual(odd.minimum.map(odd.text(halfUnits:)), "1")
        XCTAssertEqual(odd.maximum.map(odd.text(halfUnits:)), "5")
        // Repeated values count once per ballot.
        let repeated = numeric([2, 2, 2, 9])
        XCTAssertEqual([repeated.lowerQuartile, repeated.median, repeated.upperQuartile], [4, 4, 11])
        let one = numeric([7])
        XCTAssertEqual([one.lowerQuartile, one.median, one.upperQuartile], [14, 14, 14])
        let none = numeric([])
        XCTAssertNil(none.median)
        XCTAssertEqual(none.bins, [])
    }

    func testStatisticsAndBinsUseTheQuestionsDecimals() {
        // Wire 15, 20, 25, -5 with one decimal: 1.5, 2.0, 2.5, -0.5.
        let n = numeric([15, 20, 25, -5], decimals: 1)
        XCTAssertEqual(n.median.map(n.text(halfUnits:)), "1.75")
        XCTAssertEqual(n.lowerQuartile.map(n.text(halfUnits:)), "0.5")
        XCTAssertEqual(n.minimum.map(n.text(halfUnits:)), "-0.5")
        XCTAssertEqual(n.bins.map(n.label), ["-0.5", "1.5", "2.0", "2.5"])
        let report = KindReport(.numeric(n))
        XCTAssertEqual(report.median, 1.75)
        XCTAssertEqual(report.bins?.first?.from, -0.5)
    }

    func testFewDistinctValuesGetABinEachManyGetEqualWidths() {
        XCTAssertEqual(numeric([1, 1, 3, 5, 5, 5]).bins.map(\.count), [2, 1, 3])
        // 0…99, one ballot each: ten bins 0–9 … 90–99 of ten ballots.
        let wide = numeric((0...99).map { Int16($0) })
        XCTAssertEqual(wide.bins.count, 10)
        XCTAssertEqual(wide.bins.map(\.count), Array(repeating: 10, count: 10))
        XCTAssertEqual(wide.label(wide.bins[1]), "10–19")
        // 3…27 spans 25 values: widths of 5 from 0 cover it in six bins.
        let mid = numeric((3...27).map { Int16($0) })
        XCTAssertEqual(mid.bins.map { [$0.lowest, $0.highest] }, [[0, 4], [5, 9], [10, 14], [15, 19], [20, 24], [25, 29]])
        XCTAssertEqual(mid.bins.map(\.count), [2, 5, 5, 5, 5, 3])
        // Negative values bin below zero.
        let negative = numeric((-12...(-1)).map { Int16($0) })
        XCTAssertEqual(negative.bins.first?.lowest, -12)
        XCTAssertEqual(negative.bins.reduce(0) { $0 + $1.count }, 12)
    }

    func testMultiSelectCountsEachOptionAndEachExactCombination() {
        let spec = QuestionSpec(number: 1, options: 4, kinds: [.multiSelect], optionTexts: ["red", "green", "blue", "grey"])
        // A+C ×3, A ×2, B+C ×3, A+B+C ×1.
        let counts: [Answer: Int] = [.multiSelect(0b0101): 3, .multiSelect(0b0001): 2, .multiSelect(0b0110): 3,
                                     .multiSelect(0b0111): 1]
        guard case .multiSelect(let m) = KindResults(spec: spec, counts: counts) else { return XCTFail("kind") }
        XCTAssertEqual(m.ballots, 9)
        XCTAssertEqual(m.options.map(\.count), [6, 4, 7, 0])
        XCTAssertEqual(m.options.map(\.text), ["red", "green", "blue", "grey"])
        XCTAssertEqual(m.combinations.map(\.answer), ["A+C", "B+C", "A+", "A+B+C"])
        XCTAssertEqual(m.combinations.map(\.count), [3, 3, 2, 1])
        XCTAssertEqual(m.combinations[0].options, ["A", "C"])
    }

    func testChoiceAndTrueFalseCountEveryOffered() {
        guard case .choice(let c) = KindResults(spec: .choice(1, options: 3), counts: [.choice(1): 4]) else { return XCTFail("kind") }
        XCTAssertEqual(c.options.map { "\($0.option)=\($0.count)" }, ["A=0", "B=4", "C=0"])
        let tf = QuestionSpec(number: 2, kinds: [.trueFalse])
        guard case .trueFalse(let t) = KindResults(spec: tf, counts: [.trueFalse(false): 2]) else { return XCTFail("kind") }
        XCTAssertEqual(t.options.map { "\($0.option)=\($0.count)" }, ["true=0", "false=2"])
    }

    func testRankedResultsGiveEveryRoundInLetters() {
        func r(_ s: String) -> Answer { .ranking(Ranking(order: s.split(separator: ">").map { UInt8($0.unicodeScalars.first!.value - 65) })!) }
        let spec = QuestionSpec(number: 1, options: 3, kinds: [.ranking])
        guard case .ranked(let rr) = KindResults(spec: spec, counts: [r("A>B>C"): 4, r("B>C"): 3, r("C>B"): 2, r("C>"): 1])
        else { return XCTFail("kind") }
        XCTAssertEqual(rr.rounds.count, 2)
        XCTAssertEqual(rr.rounds[0].votes.map { "\($0.option)=\($0.count)" }, ["A=4", "B=3", "C=3"])
        // C and B tie at 3 in round 1 with no earlier round: the later letter, C, goes.
        XCTAssertEqual(rr.rounds[0].eliminated, "C")
        XCTAssertEqual(rr.rounds[1].votes.map { "\($0.option)=\($0.count)" }, ["A=4", "B=5"])
        XCTAssertEqual(rr.rounds[1].exhausted, 1)
        XCTAssertEqual(rr.rounds[1].active, 9)
        XCTAssertEqual(rr.outcome, .winner)
        XCTAssertEqual(rr.leaders, ["B"])
        XCTAssertEqual(rr.summary, "winner B (5 of 9 active ballots, round 2)")
        let report = KindReport(.ranked(rr))
        XCTAssertEqual(report.winner, "B")
        XCTAssertEqual(report.rounds?.map(\.eliminated), ["C", nil])

        guard case .ranked(let tie) = KindResults(spec: spec, counts: [r("A>B"): 2, r("B>A"): 2]) else { return XCTFail("kind") }
        XCTAssertEqual(tie.outcome, .tie)
        XCTAssertEqual(KindReport(.ranked(tie)).tied, ["A", "B"])
    }
}
