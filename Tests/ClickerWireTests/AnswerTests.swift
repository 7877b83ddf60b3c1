import ClickerWire
import XCTest

final class AnswerTests: XCTestCase {
    func testLettersRoundTrip() throws {
        for (i, l) in ["A", "B", "C", "D", "E", "F", "G", "H"].enumerated() {
            let a = try Answer(parsing: l)
            XCTAssertEqual(a, .choice(UInt8(i)))
            XCTAssertEqual(a.description, l)
            XCTAssertEqual(try Answer(parsing: l.lowercased()), a)
        }
        XCTAssertEqual(try Answer(parsing: "true"), .trueFalse(true))
        XCTAssertEqual(try Answer(parsing: "No"), .trueFalse(false))
        XCTAssertEqual(try Answer(parsing: "A+C+H"), .multiSelect(0b1000_0101))
        XCTAssertEqual(Answer.multiSelect(0b1000_0101).description, "A+C+H")
        XCTAssertEqual(try Answer(parsing: "C>A>B").description, "C>A>B")
        // Partial rankings: unranked options are not implied.
        XCTAssertNotEqual(try Answer(parsing: "B>A>C"), try Answer(parsing: "B>A"))
        XCTAssertEqual(try Answer(parsing: "C>").description, "C>")
        XCTAssertEqual(try Answer(parsing: "42"), .numeric(42))
        XCTAssertEqual(try Answer(parsing: "-3").description, "-3")
        XCTAssertEqual(try Answer(parsing: "-32768"), .numeric(-32768))
    }

    func testParseErrors() {
        func reason(_ s: String) -> AnswerParseError? {
            do { _ = try Answer(parsing: s); return nil } catch { return error }
        }
        XCTAssertEqual(reason(""), .empty)
        XCTAssertEqual(reason("I"), .badLetter("I"))
        XCTAssertEqual(reason("AB"), .badLetter("AB"))
        XCTAssertEqual(reason("A+A"), .repeatedLetter("A"))
        XCTAssertEqual(reason("+A"), .badLetter(""))
        XCTAssertEqual(reason("A++C"), .badLetter(""))
        XCTAssertEqual(reason("A>A"), .repeatedLetter("A"))
        XCTAssertEqual(reason("A>B>C>D>E>F>G>H>A"), .repeatedLetter("A"))
        XCTAssertEqual(reason(">A"), .badLetter(""))
        XCTAssertEqual(reason("32768"), .numberOutOfRange("32768"))
        XCTAssertEqual(reason("-"), .badNumber("-"))
        XCTAssertEqual(reason("4x"), .badNumber("4x"))
        // A decimal typed without the question's form: the message names the flags that read it.
        XCTAssertEqual(reason("9.81"), .decimalNeedsForm("9.81", decimals: 2))
        XCTAssertEqual("\(AnswerParseError.decimalNeedsForm("9.81", decimals: 2))",
                       "'9.81' has decimals: a decimal answer needs the question's decimals, --kind numeric --decimals 2 (or more)")
        XCTAssertEqual(reason("1.2.3"), .badNumber("1.2.3"))
        XCTAssertEqual(reason("1."), .badNumber("1."))
    }

    /// Rankings of k = 1…8 options: Σ 8!/(8−k)! arrangements.
    static let rankingCount = (1...8).map { Ranking.arrangements(count: $0) }.reduce(0, +)

    func testWireBytesRoundTripForEveryWellFormedValue() {
        XCTAssertEqual(Self.rankingCount, 109_600)
        var all: [Answer] = (0..<8).map { .choice(UInt8($0)) } + [.trueFalse(false), .trueFalse(true)]
        all += (1...255).map { .multiSelect(UInt8($0)) }
        all += (Int(Int16.min)...Int(Int16.max)).map { .numeric(Int16($0)) }
        for k in 1...8 {
            for c in 0..<Ranking.arrangements(count: k) { if let r = Ranking(count: k, code: UInt16(c)) { all.append(.ranking(r)) } }
        }
        XCTAssertEqual(all.count, 8 + 2 + 255 + 65536 + Self.rankingCount)
        XCTAssertEqual(Set(all).count, all.count, "every value is a different answer")
        for a in all {
            let w = a.wireBytes
            XCTAssertEqual(Answer(wire: w.0, w.1, w.2), a)
            XCTAssertEqual(try Answer(parsing: a.description), a, "\(a)")
        }
    }

    func testEveryByteTripleDecodesOrIsRejectedConsistently() {
        // Exhaustive over kind bytes 0…0x4A and all 65536 values: the decoder accepts exactly
        // 8 + 2 + 255 + 65536 + Σ 8!/(8−k)! triples, and re-encodes each to itself.
        var accepted = 0
        for k in UInt8(0)...0x4A {
            for v in 0...0xFFFF {
                let hi = UInt8(v >> 8), lo = UInt8(v & 0xFF)
                if let a = Answer(wire: k, hi, lo) {
                    accepted += 1
                    let w = a.wireBytes
                    XCTAssertTrue(w == (k, hi, lo))
                }
            }
        }
        XCTAssertEqual(accepted, 8 + 2 + 255 + 65536 + Self.rankingCount)
        XCTAssertNil(Answer(wire: 0xFF, 0, 0))
        XCTAssertNil(Answer(wire: 0x04, 0, 0), "kind 04 (version 1 rankings) is gone")
        XCTAssertNil(Answer(wire: 0x40, 0, 0))
        XCTAssertNil(Answer(wire: 0x49, 0, 0))
        XCTAssertNil(Answer(wire: 0x48, 0x9D, 0x80), "40320 is not below 8!")
        XCTAssertFalse(Answer.choice(8).isWellFormed)
        XCTAssertFalse(Answer.multiSelect(0).isWellFormed)
    }

    func testRankingsOfAllLengthsRoundTrip() {
        for k in 1...8 {
            var orders = Set<[UInt8]>()
            for c in 0..<Ranking.arrangements(count: k) {
                guard let r = Ranking(count: k, code: UInt16(c)) else { return XCTFail("k \(k) code \(c)") }
                XCTAssertEqual(Int(r.code), c)
                XCTAssertEqual(Ranking(order: r.order), r)
                orders.insert(r.order)
            }
            XCTAssertEqual(orders.count, Ranking.arrangements(count: k))
            XCTAssertNil(Ranking(count: k, code: UInt16(Ranking.arrangements(count: k))))
        }
        // The document's examples (PROTOCOL.md §4): C>A>B is digits 2, 0, 0 → 2·7·6 = 84.
        XCTAssertEqual(Ranking(order: [2, 0, 1])?.code, 84)
        XCTAssertEqual(Ranking(order: [7, 6, 5, 4, 3, 2, 1, 0])?.code, 40319)
        XCTAssertEqual(Ranking(order: [0])?.code, 0)
        XCTAssertNil(Ranking(order: []))
        XCTAssertNil(Ranking(order: [0, 1, 2, 3, 4, 5, 6, 7, 0]))
        XCTAssertNil(Ranking(order: [8]))
        XCTAssertNil(Ranking(order: [1, 1]))
    }

    func testFitsQuestion() {
        XCTAssertTrue(Answer.choice(3).fits(options: 4))
        XCTAssertFalse(Answer.choice(4).fits(options: 4))
        XCTAssertTrue(Answer.multiSelect(0b1111).fits(options: 4))
        XCTAssertFalse(Answer.multiSelect(0b1_0000).fits(options: 4))
        XCTAssertTrue(Answer.multiSelect(0xFF).fits(options: 8))
        XCTAssertTrue(Answer.ranking(Ranking(order: [2, 0])!).fits(options: 3))
        XCTAssertFalse(Answer.ranking(Ranking(order: [3])!).fits(options: 3))
    }
}

final class AnswerPrintingTests: XCTestCase {
    func testPrintedFormsAreUnambiguous() throws {
        XCTAssertEqual(Answer.multiSelect(0b1000).description, "D+")
        XCTAssertEqual(try Answer(parsing: "D+"), .multiSelect(0b1000))
        XCTAssertEqual(Answer.ranking(Ranking(order: [0, 1])!).description, "A>B")
        XCTAssertEqual(try Answer(parsing: "A>B"), .ranking(Ranking(order: [0, 1])!))
        // One ranked option prints `C>`, never `C` (the single choice).
        XCTAssertEqual(Answer.ranking(Ranking(order: [2])!).description, "C>")
        XCTAssertEqual(try Answer(parsing: "C>"), .ranking(Ranking(order: [2])!))
        XCTAssertEqual(try Answer(parsing: "C"), .choice(2))
        XCTAssertThrowsError(try Answer(parsing: "+D"))
    }
}
