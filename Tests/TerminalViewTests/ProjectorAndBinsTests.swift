import TerminalView
import XCTest

/// At 80×24: the projector page's address is on screen while the poll runs, and a numeric
/// question with more bins than rows says how many more on a row of its own, never over a count.
final class ProjectorAndBinsTests: XCTestCase {
    func rowTexts(_ g: Grid) -> [String] { g.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }

    func testTheProjectorAddressIsOnScreen() {
        var m = Fixtures.openWithVotes
        m.projectorURL = "http://192.168.1.20:8080/?token=Q2x1c2tlcg"
        for state in [ViewState(), ViewState(showRejections: true)] {
            let rows = rowTexts(FrameRenderer.render(m, state: state, width: 80, height: 24))
            XCTAssertTrue(rows.contains { $0.contains("Projector page  http://192.168.1.20:8080/?token=Q2x1c2tlcg") },
                          rows.joined(separator: "\n"))
            XCTAssertTrue(rows.contains { $0.contains("Voters 120") })
            XCTAssertTrue(rows.contains { $0.contains("Radio  hci0") })
        }
    }

    func testEightBinsAt80x24SayHowManyMoreOnARowOfTheirOwn() {
        var m = Fixtures.numeric
        m.answers = (0..<8).map { TallyViewModel.Answer(label: "\($0 * 5)–\($0 * 5 + 4)", count: $0 + 1) }
        let rows = rowTexts(FrameRenderer.render(m, state: ViewState(), width: 80, height: 24))
        let more = rows.filter { $0.contains("more") }
        XCTAssertEqual(more.count, 1, rows.joined(separator: "\n"))
        XCTAssertFalse(more[0].contains("%"), "the count of the hidden bins is drawn over a bar's percentage: \(more[0])")
        let shown = rows.filter { $0.contains("%") }.count
        XCTAssertTrue(more[0].contains("+\(8 - shown) more"), "\(shown) bars shown: \(more[0])")
    }
}
