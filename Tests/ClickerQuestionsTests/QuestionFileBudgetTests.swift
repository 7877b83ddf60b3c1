import ClickerQuestions
import XCTest

/// Files that ask the YAML parser for work out of proportion to their size are refused before they
/// are parsed into nodes, with a line: aliases, deep nesting, a large file.
final class QuestionFileBudgetTests: XCTestCase {
    /// A file of `levels` anchors, each a mapping whose nine keys are lists holding the level
    /// below: building level k hashes nine copies of level k - 1 (about ninefold work per level).
    func bomb(levels: Int) -> String {
        var lines = ["questions:", "  - title: &l0 [x, y]"]
        for k in 1...levels {
            let keys = (1...9).map { "? [*l\(k - 1), \($0)] : 0" }.joined(separator: ", ")
            lines.append("    kind\(k): &l\(k) {\(keys)}")
        }
        lines.append("    options: {? *l\(levels) : 1}")
        return lines.joined(separator: "\n")
    }

    /// Six, seven and nine levels (seconds of parsing at six on a parser that expands them, 79 s at
    /// seven, more than 150 s at nine in issue 37) are refused at the first alias, on line 3, in well
    /// under a second: the check reads events, never builds a node.
    func testAnAliasBombIsRefusedBeforeParsing() {
        for levels in [6, 7, 9] {
            let text = bomb(levels: levels)
            XCTAssertLessThan(text.utf8.count, 1100 + (levels - 6) * 180)
            let start = ContinuousClock.now
            XCTAssertThrowsError(try QuestionFile.parse(text, file: "bomb.yaml")) { error in
                XCTAssertEqual("\(error)", "bomb.yaml:3: an alias ('*…'): a question file uses no anchors or aliases")
            }
            let took = ContinuousClock.now - start
            XCTAssertLessThan(took, .seconds(1), "\(levels) levels: the refusal took \(took)")
        }
    }

    func testNestingDeeperThanTheBoundIsRefusedWithItsLine() {
        let deep = "questions:\n  - title: x\n    kind: single\n    options: " + String(repeating: "[", count: 40)
            + "a" + String(repeating: "]", count: 40)
        XCTAssertThrowsError(try QuestionFile.parse(deep, file: "deep.yaml")) { error in
            XCTAssertEqual("\(error)", "deep.yaml:4: lists and mappings nested more than 16 deep")
        }
    }

    func testAFileAboveTheSizeBoundIsRefusedUnread() {
        let big = "questions:\n" + String(repeating: "# padding\n", count: QuestionFile.maxBytes / 10 + 1)
        XCTAssertThrowsError(try QuestionFile.parse(big, file: "big.yaml")) { error in
            XCTAssertTrue("\(error)".hasPrefix("big.yaml:1: the file is "), "\(error)")
        }
    }

    /// Anchors alone cost nothing and stay allowed; a good file still parses.
    func testAnAnchorWithoutAliasStillParses() throws {
        let text = "questions:\n  - title: &t Largest planet?\n    kind: single\n    options: [a, b]\n"
        XCTAssertEqual(try QuestionFile.parse(text, file: "a.yaml").first?.title, "Largest planet?")
    }
}
