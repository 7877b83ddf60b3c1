import ClickerTestSupport
import Foundation
import TallyDaemon
import TerminalTestSupport
import TerminalView
import XCTest

/// What the instructor's screen says is never cut: a long status wraps over the rows above it.
final class ScreenTextTests: XCTestCase {
    /// The first frame drawn on an 80×24 pseudo-terminal for `model`.
    func screen(_ model: TallyViewModel) async throws -> String {
        let pty = try PseudoTerminal(width: 80, height: 24)
        let terminal = try TerminalSession(input: pty.secondary, output: pty.secondary, restoreOnSignals: false)
        _ = pty.readAvailable()
        let stub = FixedPoll(model: model)
        var view = LiveView(environment: ["NO_COLOR": "1"], clock: TestClock())
        _ = await view.step(stub, terminal: terminal, exportDirectory: "/x")
        let text = String(decoding: pty.readAvailable(), as: UTF8.self)
        withExtendedLifetime(terminal) {}
        return text
    }

    func testALongStatusWrapsAndEveryWordIsOnScreen() async throws {
        let status = "the previous poll (vote 4821, started 2026-11-29T08:30Z) was still open: closed now, votes kept "
            + "(clicker-tally results --poll 4821, export --poll 4821); --resume would have continued it"
        XCTAssertGreaterThan(status.count, 2 * 76)
        var model = LiveViewTests.model
        model.alert = "flood of forged votes"
        model.status = status
        let drawn = try await screen(model)
        XCTAssertTrue(drawn.contains("continued"), "drawn on the terminal: \(drawn)")
        let text = FrameRenderer.render(model, state: ViewState(), width: 80, height: 24).text
        for word in ["previous", "(clicker-tally", "--resume", "continued", "it"] {
            XCTAssertTrue(text.contains(word), "\(word) missing: \(text)")
        }
        XCTAssertTrue(text.contains("ALERT: flood of forged votes"), text)
        XCTAssertTrue(text.contains("Voters 7"), "the stats row moved up, not away: \(text)")
    }
}

/// A poll that shows one model as it is, its status included.
actor FixedPoll: PollControl {
    let model: TallyViewModel
    init(model: TallyViewModel) { self.model = model }
    func viewModel(status: String?) async throws -> TallyViewModel { model }
    func perform(_ action: ViewAction, exportDirectory: String) async -> String? { nil }
}
