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
        XCTAssertEqual(try Answer(parsing: "B>A>C"), try Answer(parsing: "B>A"))
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
        XCTAssertEqual(reason("A>C"), .notAPermutation("A>C"))
        XCTAssertEqual(reason("A>A"), .notAPermutation("A>A"))
    }

    func testWireBytesRoundTripForEveryWellFormedValue() {
        var all: [Answer] = (0..<8).map { .choice(UInt8($0)) } + [.trueFalse(false), .trueFalse(true)]
        all += (1...255).map { .multiSelect(UInt8($0)) }
        for k in 0..<UInt16(40320) { if let r = Ranking(lehmerCode: k) { all.append(.ranking(r)) } }
        XCTAssertEqual(all.count, 8 + 2 + 255 + 40320)
        for a in all {
            let w = a.wireBytes
            XCTAssertEqual(Answer(wire: w.0, w.1, w.2), a)
            XCTAssertEqual(try Answer(parsing: a.description), a, "\(a)")
        }
    }

    func testEveryByteTripleDecodesOrIsRejectedConsistently() {
        // Exhaustive over kind bytes 0…5 and all 65536 values: the decoder accepts exactly
        // 8 + 2 + 255 + 40320 triples, and re-encodes each to itself.
        var accepted = 0
        for k in UInt8(0)...5 {
            for v in 0...0xFFFF {
                let hi = UInt8(v >> 8), lo = UInt8(v & 0xFF)
                if let a = Answer(wire: k, hi, lo) {
                    accepted += 1
                    let w = a.wireBytes
                    XCTAssertTrue(w == (k, hi, lo))
                }
            }
        }
        XCTAssertEqual(accepted, 8 + 2 + 255 + 40320)
        XCTAssertNil(Answer(wire: 0xFF, 0, 0))
        XCTAssertFalse(Answer.choice(8).isWellFormed)
        XCTAssertFalse(Answer.multiSelect(0).isWellFormed)
    }

    func testRankingsOfAllLengthsRoundTrip() {
        func permutations(_ n: Int) -> [[UInt8]] {
            if n == 0 { return [[]] }
            return permutations(n - 1).flatMap { p in (0...p.count).map { i in var q = p; q.insert(UInt8(n - 1), at: i); return q } }
        }
        for n in 1...6 {
            var codes = Set<UInt16>()
            for p in permutations(n) {
                let r = Ranking(order: p)
                XCTAssertNotNil(r)
                XCTAssertEqual(r?.order(count: n), p)
                codes.insert(r?.lehmerCode ?? 0xFFFF)
            }
            XCTAssertEqual(codes.count, (1...n).reduce(1, *))
        }
        XCTAssertEqual(Ranking(order: [7, 6, 5, 4, 3, 2, 1, 0])?.lehmerCode, 40319)
        XCTAssertEqual(Ranking(order: [0])?.lehmerCode, 0)
        XCTAssertNil(Ranking(lehmerCode: 40320))
        XCTAssertNil(Ranking(order: []))
        XCTAssertNil(Ranking(order: [0, 1, 2, 3, 4, 5, 6, 7, 8]))
        // C moved: not a ranking of only the first two options.
        XCTAssertNil(Ranking(order: [2, 0, 1])?.order(count: 2))
    }

    func testFitsQuestion() {
        XCTAssertTrue(Answer.choice(3).fits(options: 4))
        XCTAssertFalse(Answer.choice(4).fits(options: 4))
        XCTAssertTrue(Answer.multiSelect(0b1111).fits(options: 4))
        XCTAssertFalse(Answer.multiSelect(0b1_0000).fits(options: 4))
        XCTAssertTrue(Answer.multiSelect(0xFF).fits(options: 8))
    }
}

final class AnswerPrintingTests: XCTestCase {
    func testPrintedFormsAreUnambiguous() throws {
        XCTAssertEqual(Answer.multiSelect(0b1000).description, "D+")
        XCTAssertEqual(try Answer(parsing: "D+"), .multiSelect(0b1000))
        XCTAssertEqual(Answer.ranking(Ranking(lehmerCode: 0)!).description, "A>B")
        XCTAssertEqual(try Answer(parsing: "A>B"), .ranking(Ranking(lehmerCode: 0)!))
        XCTAssertThrowsError(try Answer(parsing: "+D"))
    }
}
