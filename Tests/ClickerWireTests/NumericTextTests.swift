import ClickerWire
import XCTest

/// Numbers as typed against the wire's fixed point (docs/PROTOCOL.md §4), and the shared offer check.
final class NumericTextTests: XCTestCase {
    func testReadsInTheQuestionsDecimals() throws {
        XCTAssertEqual(try NumericText.wire("3.5", decimals: 1).get(), 35)
        XCTAssertEqual(try NumericText.wire("3", decimals: 1).get(), 30)
        XCTAssertEqual(try NumericText.wire(" -0.05 ", decimals: 2).get(), -5)
        XCTAssertEqual(try NumericText.wire("3276.7", decimals: 1).get(), 32767)
        XCTAssertEqual(try NumericText.wire("-3.2768", decimals: 4).get(), -32768)
        func error(_ t: String, _ d: Int) -> NumericTextError? {
            if case .failure(let e) = NumericText.wire(t, decimals: d) { return e }
            return nil
        }
        XCTAssertEqual(error("3.5", 0), .tooManyDecimals("3.5", decimals: 0))
        XCTAssertEqual(error("3.25", 1), .tooManyDecimals("3.25", decimals: 1))
        XCTAssertEqual(error("3276.8", 1), .outOfRange("3276.8", decimals: 1))
        XCTAssertEqual(error("99999999999999999999", 0), .outOfRange("99999999999999999999", decimals: 0))
        for bad in ["-", ".5", "3.", "1e3", "+3", "3,5", "--1", "1.2.3", "٣"] {
            XCTAssertEqual(error(bad, 2), .notANumber(bad), bad)
        }
        XCTAssertEqual(NumericText.decimals(in: "0.0..10.0"), 1)
        XCTAssertEqual(NumericText.decimals(in: "-5..5"), 0)
    }

    func testWritesAndReadsBackEveryValue() throws {
        XCTAssertEqual(NumericText.text(35, decimals: 1), "3.5")
        XCTAssertEqual(NumericText.text(5, decimals: 2), "0.05")
        XCTAssertEqual(NumericText.text(-5, decimals: 1), "-0.5")
        for d in 0...NumericText.maxDecimals {
            for v in stride(from: Int(Int16.min), through: Int(Int16.max), by: 7) + [Int(Int16.max)] {
                let value = Int16(v)
                XCTAssertEqual(try NumericText.wire(NumericText.text(value, decimals: d), decimals: d).get(), value)
            }
        }
    }

    /// The one writer of numbers (question bounds, statistics, histogram labels) takes any integer:
    /// a statistic scaled by one more decimal may not fit 16 bits.
    func testWritesAnyIntegerAndIgnoresANegativeScale() throws {
        XCTAssertEqual(NumericText.text(-327_685, decimals: 5), "-3.27685")
        XCTAssertEqual(NumericText.text(Int.min, decimals: 0), String(Int.min))
        XCTAssertEqual(NumericText.text(UInt8(7), decimals: 3), "0.007")
        XCTAssertEqual(NumericText.text(-15, decimals: -1), "-15")
        // A negative scale reads as none, like NumericRange takes it, rather than a bogus
        // "more than -1 decimals".
        XCTAssertEqual(try NumericText.wire("35", decimals: -1).get(), 35)
        XCTAssertEqual(try NumericText.wire("-2", decimals: -3).get(), -2)
        if case .failure(let e) = NumericText.wire("3.5", decimals: -1) {
            XCTAssertEqual(e, .tooManyDecimals("3.5", decimals: 0))
        } else {
            XCTFail("3.5 read with no decimals")
        }
    }

    func testOfferCheck() {
        XCTAssertTrue(Answer.choice(3).isOffered(kinds: [.choice], options: 4, range: nil))
        XCTAssertFalse(Answer.choice(4).isOffered(kinds: [.choice], options: 4, range: nil))
        XCTAssertFalse(Answer.trueFalse(true).isOffered(kinds: [.choice], options: 4, range: nil))
        XCTAssertTrue(Answer.numeric(100).isOffered(kinds: [.numeric], options: 4, range: 0...100))
        XCTAssertFalse(Answer.numeric(101).isOffered(kinds: [.numeric], options: 4, range: 0...100))
        XCTAssertTrue(Answer.numeric(-32768).isOffered(kinds: [.numeric], options: 4, range: nil))
        XCTAssertFalse(Answer.multiSelect(0b10001).isOffered(kinds: [.multiSelect], options: 4, range: nil))
    }
}
