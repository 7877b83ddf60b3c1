import Foundation
import TerminalView
import XCTest

/// Frames rendered to text for fixed states, compared with `Snapshots/<name>.txt`.
/// Set `CLICKER_RECORD_SNAPSHOTS=1` to rewrite the files after an intended change (the test then fails
/// once, to make sure recorded files are reviewed).
final class SnapshotTests: XCTestCase {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Snapshots")

    func assertSnapshot(_ name: String, _ model: TallyViewModel, state: ViewState = ViewState(), width: Int, height: Int,
                        file: StaticString = #filePath, line: UInt = #line) throws {
        let grid = FrameRenderer.render(model, state: state, width: width, height: height)
        XCTAssertEqual(grid.width, width)
        XCTAssertEqual(grid.height, height)
        let text = grid.text
        let url = Self.directory.appendingPathComponent(name + ".txt")
        if ProcessInfo.processInfo.environment["CLICKER_RECORD_SNAPSHOTS"] == "1" {
            try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
            XCTFail("recorded snapshot \(name); rerun without CLICKER_RECORD_SNAPSHOTS", file: file, line: line)
            return
        }
        guard let expected = try? String(contentsOf: url, encoding: .utf8) else {
            XCTFail("missing snapshot \(url.path); record with CLICKER_RECORD_SNAPSHOTS=1", file: file, line: line)
            return
        }
        if expected != text {
            let e = expected.split(separator: "\n", omittingEmptySubsequences: false)
            let t = text.split(separator: "\n", omittingEmptySubsequences: false)
            let firstDiff = zip(e, t).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(e.count, t.count)
            XCTFail("snapshot \(name) differs at line \(firstDiff + 1):\nexpected: \(firstDiff < e.count ? String(e[firstDiff]) : "<none>")\n" +
                    "actual:   \(firstDiff < t.count ? String(t[firstDiff]) : "<none>")\nfull frame:\n\(text)", file: file, line: line)
        }
    }

    func testOpenWithVotes() throws {
        try assertSnapshot("open-with-votes-100x30", Fixtures.openWithVotes, width: 100, height: 30)
    }

    func testHiddenBars() throws {
        var m = Fixtures.openWithVotes
        m.countsHidden = true
        try assertSnapshot("hidden-bars-100x30", m, width: 100, height: 30)
    }

    func testClosed() throws {
        try assertSnapshot("closed-100x30", Fixtures.closed, width: 100, height: 30)
    }

    func testRadioErrorWithAlertAndBreakdown() throws {
        try assertSnapshot("radio-error-100x30", Fixtures.radioError, state: ViewState(showRejections: true), width: 100, height: 30)
    }

    func testNarrow80x24() throws {
        try assertSnapshot("open-with-votes-80x24", Fixtures.openWithVotes, width: 80, height: 24)
    }

    func testQuitConfirmation80x24() throws {
        try assertSnapshot("quit-confirmation-80x24", Fixtures.openWithVotes, state: ViewState(confirmingQuit: true), width: 80, height: 24)
    }

    func testNoQuestionNoAdapter80x24() throws {
        try assertSnapshot("no-question-80x24", Fixtures.noQuestion, width: 80, height: 24)
    }

    func testMultiSelectShowsOptionsAndCombinations() throws {
        try assertSnapshot("multi-select-100x30", Fixtures.multiSelect, width: 100, height: 30)
    }

    func testNumericShowsHistogramMedianAndQuartiles() throws {
        try assertSnapshot("numeric-100x30", Fixtures.numeric, width: 100, height: 30)
    }

    func testRankedShowsEveryRound() throws {
        try assertSnapshot("ranked-100x30", Fixtures.ranked, width: 100, height: 30)
        try assertSnapshot("ranked-80x24", Fixtures.ranked, width: 80, height: 24)
        try assertSnapshot("ranked-compact-50x12", Fixtures.ranked, width: 50, height: 12)
    }

    func testHiddenCountsHideTheKindsLines() throws {
        var m = Fixtures.ranked
        m.countsHidden = true
        let text = FrameRenderer.render(m, state: ViewState(), width: 100, height: 30).text
        XCTAssertFalse(text.contains("Round"), text)
        XCTAssertFalse(text.contains("Winner"), text)
    }

    func testTooSmallCompact() throws {
        try assertSnapshot("compact-50x12", Fixtures.openWithVotes, width: 50, height: 12)
    }
}
