import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import TallyDaemon
import TerminalTestSupport
import TerminalView
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// "Rejected" counts devices where the instructor looks: one unenrolled or misconfigured device
/// that sends hundreds of packets is one; the packets stay for `r` and the logs.
final class RejectedDevicesTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    /// A ballot of another poll's join code with the same vote ID (a tag that does not verify), from `address`.
    func forged(voter: UInt32, sequence: UInt16, address: UInt64) throws -> AdvertisementReport {
        let wrong = try JoinCode(parsing: "4821-ZZZZZ-ZZZZZ")
        let b = Ballot(voteID: wrong.voteID, question: 1, voterID: voter, sequence: sequence, answer: .choice(0))
        return AdvertisementReport(address: DeviceAddress(rawValue: address), rssi: -60, companyID: BallotFormat.companyID,
                                   data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(wrong))), timestamp: .zero)
    }

    func testOneDeviceSendingNineHundredPacketsIsOneRejectedDevice() async throws {
        let c = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        // A phone at a scanner's real rate for 30 s: 916 reports of its ballot, each re-sealed.
        for s in 0..<916 { await c.ingest(try forged(voter: 7, sequence: UInt16(s + 1), address: 0xC000_0000_0001)) }
        await c.ingest(try forged(voter: 8, sequence: 1, address: 0xC000_0000_0002))
        let model = try await c.viewModel(status: nil)
        // The flood control takes over from the tag check for the device that keeps sending: two
        // reasons, one device in both; each device counts once.
        let badTag = try XCTUnwrap(model.rejections.first { $0.reason == "badTag" })
        XCTAssertEqual(badTag.devices, 2)
        XCTAssertEqual(model.rejections.filter { $0.reason != "badTag" }.map(\.devices), [1])
        XCTAssertEqual(model.rejectedDevices, 2)
        XCTAssertEqual(model.rejectedTotal, 917, "packets, for r and the logs")
        let results = await c.results()
        XCTAssertEqual(results.rejected.values.reduce(0, +), 917)

        // The screen at 80×24: devices on the stats row; `r` shows the packets beside them.
        var screen = FrameRenderer.render(model, state: ViewState(), width: 80, height: 24).text
        XCTAssertTrue(screen.contains("Rejected 2 devices"), screen)
        XCTAssertFalse(screen.contains("917"), "no packet count where the instructor looks")
        screen = FrameRenderer.render(model, state: ViewState(showRejections: true), width: 80, height: 24).text
        XCTAssertTrue(screen.contains("badTag \(badTag.count) (2 devices)"), screen)
        // The live view on a pseudo-terminal draws that frame, and `r` toggles the breakdown.
        let pty = try PseudoTerminal(width: 80, height: 24)
        let terminal = try TerminalSession(input: pty.secondary, output: pty.secondary, restoreOnSignals: false)
        _ = pty.readAvailable()
        let stub = LiveViewTests.StubPoll(model: model)
        let clock = TestClock()
        var view = LiveView(environment: ["NO_COLOR": "1"], clock: clock)
        _ = await view.step(stub, terminal: terminal, exportDirectory: "/x")
        XCTAssertTrue(String(decoding: pty.readAvailable(), as: UTF8.self).contains("devices"))
        pty.type(Array("r".utf8))
        var p = pollfd(fd: pty.secondary, events: Int16(POLLIN), revents: 0)
        XCTAssertEqual(poll(&p, 1, 2000), 1)
        // At most ten frames a second: the key is taken, the frame drawn a tenth of a second later.
        _ = await view.step(stub, terminal: terminal, exportDirectory: "/x")
        clock.advance(by: .milliseconds(100))
        _ = await view.step(stub, terminal: terminal, exportDirectory: "/x")
        XCTAssertTrue(String(decoding: pty.readAvailable(), as: UTF8.self).contains("(1 device)"), "the breakdown drawn")
        withExtendedLifetime(terminal) {}
    }

    /// A new poll starts with no rejected devices: the last poll's are not counted on its question numbers.
    func testANewPollForgetsTheLastPollsRejectedDevices() async throws {
        let c = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        for d in 1...3 { await c.ingest(try forged(voter: UInt32(d), sequence: 1, address: 0xC000_0000_0000 + UInt64(d))) }
        var model = try await c.viewModel(status: nil)
        XCTAssertEqual(model.rejectedDevices, 3)
        _ = try await c.newPoll()
        model = try await c.viewModel(status: nil)
        XCTAssertEqual(model.rejectedDevices, 0)
        XCTAssertEqual(model.rejectedTotal, 0)
        await c.ingest(try forged(voter: 9, sequence: 1, address: 0xC000_0000_0009))
        model = try await c.viewModel(status: nil)
        XCTAssertEqual(model.rejectedDevices, 1, "\(model.rejections)")
    }
}
