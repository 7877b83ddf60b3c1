import ClickerTally
import ClickerWire
import ProjectorPage
import XCTest

/// While a count step is pending the page says how many votes are not yet shown (absent when none,
/// and while the counts are hidden).
final class NotYetShownPageTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    /// The page's snapshot carries the number, and the page shows it.
    func testTheProjectorSnapshotCarriesIt() throws {
        let s = ProjectorSnapshot(joinCode: code, roster: false, spec: .choice(1), open: true, hidden: false, voters: 0,
                                  counts: ["A": 0], notYetShown: 3)
        XCTAssertEqual(s.notYetShown, 3)
        let hidden = ProjectorSnapshot(joinCode: code, roster: false, spec: .choice(1), open: true, hidden: true, voters: 0,
                                       counts: [:], notYetShown: 3)
        XCTAssertNil(hidden.notYetShown)
        XCTAssertTrue(ProjectorPage.html.contains(#"<span id="pending">"#))
        XCTAssertTrue(ProjectorPage.html.contains("not yet shown"))
    }
}
