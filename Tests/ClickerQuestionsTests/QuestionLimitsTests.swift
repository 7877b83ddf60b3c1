import ClickerQuestions
import XCTest

/// A question's title and option texts are bounded wherever the question comes from.
final class QuestionLimitsTests: XCTestCase {
    func testALongTitleOrOptionInAFileIsRefusedWithItsLine() {
        let title = String(repeating: "é", count: QuestionLimits.titleCharacters + 1)
        let file = "questions:\n  - title: \(title)\n    kind: truefalse\n"
        XCTAssertThrowsError(try QuestionFile.parse(file, file: "l.yaml")) { error in
            XCTAssertEqual("\(error)", "l.yaml:2: question 1: 'title': longer than 300 characters")
        }
        let atLimit = "questions:\n  - title: \(title.dropLast())\n    kind: truefalse\n"
        XCTAssertEqual(try QuestionFile.parse(atLimit, file: "l.yaml").first?.title?.count, 300)
        let option = String(repeating: "o", count: QuestionLimits.optionCharacters + 1)
        let options = "questions:\n  - title: T\n    kind: single\n    options:\n      - a\n      - \(option)\n"
        XCTAssertThrowsError(try QuestionFile.parse(options, file: "o.yaml")) { error in
            XCTAssertEqual("\(error)", "o.yaml:6: question 1: 'options': option 2 is longer than 120 characters")
        }
    }

    /// Ten megabytes of title (the command line's `--title`, D-Bus) are refused as fast as a short one.
    func testTenMegabytesOfTitleAreRefusedAdHoc() {
        let huge = String(repeating: "x", count: 10 << 20)
        XCTAssertThrowsError(try AdHocQuestion.spec(number: 1, kind: "single", options: ["4"], title: huge)) { error in
            XCTAssertEqual(error as? AdHocQuestionError, .titleTooLong)
            XCTAssertEqual("\(error)", "the title is longer than 300 characters")
        }
        XCTAssertThrowsError(try AdHocQuestion.spec(number: 1, kind: "single", options: ["a", huge], title: nil)) { error in
            XCTAssertEqual(error as? AdHocQuestionError, .optionTooLong(2))
        }
        XCTAssertNoThrow(try AdHocQuestion.spec(number: 1, kind: "single", options: ["4"],
                                                title: String(repeating: "x", count: 300)))
    }
}
