import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import TallyDaemon
import TerminalTestSupport
import TerminalView
import XCTest

/// While a count step is pending (counts move in steps of 10 voters and 5 s), the instructor's
/// screen and the projector say how many votes are not yet shown, and nothing of whose or which.
final class NotYetShownTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func report(voter: UInt32, answer: UInt8, sequence: UInt16 = 1) -> AdvertisementReport {
        let b = Ballot(voteID: code.voteID, question: 1, voterID: voter, sequence: sequence, answer: .choice(answer))
        return AdvertisementReport(address: DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(voter)), rssi: -60,
                                   companyID: BallotFormat.companyID,
                                   data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(code))), timestamp: .zero)
    }

    func testTheCountOfVotesNotYetShownIsOnTheModelAndGoesAtTheStep() async throws {
        let c = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let t0 = Date()
        for v in UInt32(1)...3 { await c.ingest(report(voter: v, answer: UInt8(v % 4))) }
        var model = await c.viewModel(status: nil, now: t0 + 60)
        XCTAssertEqual(model.voters, 0)
        XCTAssertEqual(model.answers.map(\.count), [0, 0, 0, 0])
        XCTAssertEqual(model.notYetShown, 3)
        // A voter changing their answer is still one voter not yet shown.
        await c.ingest(report(voter: 3, answer: 0, sequence: 2))
        model = await c.viewModel(status: nil, now: t0 + 60)
        XCTAssertEqual(model.notYetShown, 3)
        for v in UInt32(4)...10 { await c.ingest(report(voter: v, answer: 1)) }
        model = await c.viewModel(status: nil, now: t0 + 61)
        XCTAssertEqual(model.voters, 10)
        XCTAssertNil(model.notYetShown, "the step showed them all")
        // Hidden counts say nothing of pending votes either.
        await c.ingest(report(voter: 11, answer: 1))
        await c.setCountsShown(false)
        let hidden = await c.liveCounts(now: t0 + 62)
        XCTAssertEqual(hidden.notYetShown, 0)
    }

    /// The live view at 80×24 on a pseudo-terminal shows it beside the voters.
    func testTheScreenSaysHowManyVotesAreNotYetShown() async throws {
        let pty = try PseudoTerminal(width: 80, height: 24)
        let terminal = try TerminalSession(input: pty.secondary, output: pty.secondary, restoreOnSignals: false)
        _ = pty.readAvailable()
        var model = LiveViewTests.model
        model.voters = 0
        model.notYetShown = 3
        let stub = LiveViewTests.StubPoll(model: model)
        var view = LiveView(environment: ["NO_COLOR": "1"], clock: TestClock())
        _ = await view.step(stub, terminal: terminal, exportDirectory: "/x")
        let drawn = String(decoding: pty.readAvailable(), as: UTF8.self)
        XCTAssertTrue(drawn.contains("(+3 not yet shown)"), drawn)
        let screen = FrameRenderer.render(model, state: ViewState(), width: 80, height: 24).text
        XCTAssertTrue(screen.contains("Voters 0 (+3 not yet shown)"), screen)
        withExtendedLifetime(terminal) {}
    }
}
