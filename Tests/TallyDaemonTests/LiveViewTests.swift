import ClickerTestSupport
import Foundation
import Logging
import TallyDaemon
import TerminalTestSupport
import TerminalView
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The live view's loop driven pass by pass on a real pseudo-terminal, with a stand-in poll.
final class LiveViewTests: XCTestCase {
    /// A poll that shows a fixed model, records the actions asked of it, and can fail like a lost daemon.
    actor StubPoll: PollControl {
        var model: TallyViewModel
        var failing: Bool
        private(set) var actions: [ViewAction] = []

        init(model: TallyViewModel, failing: Bool = false) {
            self.model = model
            self.failing = failing
        }

        func setFailing(_ f: Bool) { failing = f }
        func setVoters(_ n: Int) { model.voters = n; model.answers[0].count = n }
        func setQuestion(_ n: Int) { model.question?.number = n }

        func viewModel(status: String?) async throws -> TallyViewModel {
            if failing { throw TerminalError.notATerminal }
            var m = model
            m.status = status
            return m
        }

        func perform(_ action: ViewAction, exportDirectory: String) async -> String? {
            actions.append(action)
            return "did \(action)"
        }
    }

    static let model = TallyViewModel(title: "Physics 101", joinCode: "4821-K7QXM-3PF9A", anonymous: true,
                                      question: .init(number: 3, isOpen: true, elapsed: .seconds(12)),
                                      voters: 7, radio: .init(adapter: "hci0", scanning: true))

    /// Whether `text` sets a foreground or background colour (SGR 30–49).
    static func hasColour(_ text: String) -> Bool {
        guard let sgr = try? Regex("\u{1B}\\[(?:[0-9]+;)*[34][0-9](?:;[0-9]+)*m") else { return true }
        return text.contains(sgr)
    }

    /// Types `text` and waits until the terminal has it for the view to read.
    func type(_ text: String, into pty: PseudoTerminal) {
        pty.type(Array(text.utf8))
        var p = pollfd(fd: pty.secondary, events: Int16(POLLIN), revents: 0)
        XCTAssertEqual(poll(&p, 1, 2000), 1, "typed keys did not reach the terminal")
    }

    func testPassesDrawOnChangeOnlyAndKeysDriveThePoll() async throws {
        let pty = try PseudoTerminal(width: 80, height: 24)
        let terminal = try TerminalSession(input: pty.secondary, output: pty.secondary, restoreOnSignals: false)
        XCTAssertEqual(pty.readAvailable(), TerminalSequences.enter)
        let poll = StubPoll(model: Self.model)
        let clock = TestClock()
        var view = LiveView(environment: ["NO_COLOR": "1"], clock: clock)

        // First pass: the whole frame.
        let first = await view.step(poll, terminal: terminal, exportDirectory: "/x")
        guard case .shown(let bytes) = first, bytes > 0 else { return XCTFail("first pass drew nothing: \(first)") }
        let screen = String(decoding: pty.readAvailable(), as: UTF8.self)
        XCTAssertEqual(screen.utf8.count, bytes)
        XCTAssertTrue(screen.contains("Physics 101"), screen)
        XCTAssertFalse(Self.hasColour(screen), "NO_COLOR: no colour codes")

        // Nothing changed: nothing written.
        let idle = await view.step(poll, terminal: terminal, exportDirectory: "/x")
        XCTAssertEqual(idle, .shown(bytes: 0))
        XCTAssertEqual(pty.readAvailable(), [])

        // A vote arrives within a tenth of a second: held back (at most ten frames a second)...
        await poll.setVoters(8)
        let held = await view.step(poll, terminal: terminal, exportDirectory: "/x")
        XCTAssertEqual(held, .pending(retryAfter: .milliseconds(100)))
        XCTAssertEqual(pty.readAvailable(), [])
        // ...then only the changed cells are written, far less than a frame.
        clock.advance(by: .milliseconds(100))
        guard case .shown(let delta) = await view.step(poll, terminal: terminal, exportDirectory: "/x"), delta > 0 else {
            return XCTFail("the change was not drawn")
        }
        XCTAssertLessThan(delta, bytes / 4)
        XCTAssertEqual(pty.readAvailable().count, delta)

        // Keys: close, then quit, which asks first while the question is open; y confirms.
        type("c", into: pty)
        _ = await view.step(poll, terminal: terminal, exportDirectory: "/x")
        type("q", into: pty)
        let asked = await view.step(poll, terminal: terminal, exportDirectory: "/x")
        XCTAssertNotEqual(asked, .quit)
        type("y", into: pty)
        let confirmed = await view.step(poll, terminal: terminal, exportDirectory: "/x")
        XCTAssertEqual(confirmed, .quit)
        let actions = await poll.actions
        XCTAssertEqual(actions, [.closeQuestion])
        withExtendedLifetime(terminal) {}
    }

    func testWaitsForAFirstModelAndKeepsTheLastOneWhenThePollIsLost() async throws {
        let pty = try PseudoTerminal(width: 80, height: 24)
        let terminal = try TerminalSession(input: pty.secondary, output: pty.secondary, restoreOnSignals: false)
        _ = pty.readAvailable()
        let poll = StubPoll(model: Self.model, failing: true)
        let clock = TestClock()
        var view = LiveView(environment: ["TERM": "xterm-256color"], clock: clock)
        let before = await view.step(poll, terminal: terminal, exportDirectory: "/x")
        XCTAssertEqual(before, .waiting)
        XCTAssertEqual(pty.readAvailable(), [])

        await poll.setFailing(false)
        _ = await view.step(poll, terminal: terminal, exportDirectory: "/x")
        XCTAssertTrue(Self.hasColour(String(decoding: pty.readAvailable(), as: UTF8.self)), "colour unless NO_COLOR")
        await poll.setFailing(true)
        clock.advance(by: .milliseconds(120))
        guard case .shown(let n) = await view.step(poll, terminal: terminal, exportDirectory: "/x"), n > 0 else {
            return XCTFail("a lost poll must be said on screen")
        }
        let screen = String(decoding: pty.readAvailable(), as: UTF8.self)
        XCTAssertTrue(screen.contains("lost the daemon"), screen)
        withExtendedLifetime(terminal) {}
    }

    /// Watch only detaches: `q` quits at once although a question is open. A message from an
    /// action goes once another question is up, or after `statusLifetime`.
    func testWatchQuitsWithoutAskingAndStaleMessagesGo() async throws {
        let pty = try PseudoTerminal(width: 80, height: 24)
        let terminal = try TerminalSession(input: pty.secondary, output: pty.secondary, restoreOnSignals: false)
        _ = pty.readAvailable()
        let poll = StubPoll(model: Self.model)
        let clock = TestClock()
        var view = LiveView(environment: ["NO_COLOR": "1"], clock: clock, quitNeedsConfirmation: false)
        _ = await view.step(poll, terminal: terminal, events: [.key(.character("e"))], exportDirectory: "/x")
        XCTAssertTrue(String(decoding: pty.readAvailable(), as: UTF8.self).contains("did export"))

        // Another question comes up (`n` in another window): the export message is stale.
        await poll.setQuestion(4)
        clock.advance(by: .milliseconds(200))
        _ = await view.step(poll, terminal: terminal, events: [], exportDirectory: "/x")
        var screen = String(decoding: pty.readAvailable(), as: UTF8.self)
        XCTAssertFalse(screen.isEmpty, "the new question was not drawn")
        XCTAssertFalse(screen.contains("did export") , "the old message stays on screen")

        // `n` here: its own message stays, until its time is up.
        clock.advance(by: .milliseconds(200))
        _ = await view.step(poll, terminal: terminal, events: [.key(.character("n"))], exportDirectory: "/x")
        screen = String(decoding: pty.readAvailable(), as: UTF8.self)
        XCTAssertTrue(screen.contains("did nextQuestion"), screen)
        clock.advance(by: LiveView.statusLifetime)
        guard case .shown(let n) = await view.step(poll, terminal: terminal, events: [], exportDirectory: "/x"), n > 0 else {
            return XCTFail("the expired message was not cleared")
        }
        XCTAssertFalse(String(decoding: pty.readAvailable(), as: UTF8.self).contains("did"))

        let quit = await view.step(poll, terminal: terminal, events: [.key(.character("q"))], exportDirectory: "/x")
        XCTAssertEqual(quit, .quit, "watch does not ask: quitting only detaches")
        withExtendedLifetime(terminal) {}
    }

    /// Log lines written while the view is up go to a file, not onto the picture; the latest
    /// important one is shown on the status line.
    func testLogLinesDoNotReachTheTerminalWhileTheViewRuns() async throws {
        let pty = try PseudoTerminal(width: 80, height: 24)
        let terminal = try TerminalSession(input: pty.secondary, output: pty.secondary, restoreOnSignals: false)
        _ = pty.readAvailable()
        // The route's "stderr" is the view's terminal, as when clicker-tally runs in one.
        let route = LogRoute(stderr: pty.secondary, environment: [:])
        let logger = Logger(label: "clicker.bluez") { route.handler(label: $0) }

        // Not diverted: a line lands on the terminal as raw text (what broke the picture).
        logger.warning("bluetoothd (re)appeared; rebuilding the object mirror")
        XCTAssertTrue(String(decoding: pty.readAvailable(), as: UTF8.self).contains("warning clicker.bluez : bluetoothd"))

        let file = NSTemporaryDirectory() + "clicker-log-\(UUID().uuidString).log"
        addTeardownBlock { try? FileManager.default.removeItem(atPath: file) }
        XCTAssertEqual(try route.divert(toFile: file), file)
        let clock = TestClock()
        var view = LiveView(environment: ["NO_COLOR": "1"], clock: clock, log: route)
        let poll = StubPoll(model: Self.model)
        _ = await view.step(poll, terminal: terminal, events: [], exportDirectory: "/x")
        _ = pty.readAvailable()

        logger.warning("adapter hci0 went away")
        logger.info("using adapter hci1; 2 objects mirrored")
        XCTAssertEqual(pty.readAvailable(), [], "no log line written onto the live view")
        clock.advance(by: .milliseconds(200))
        guard case .shown(let n) = await view.step(poll, terminal: terminal, events: [], exportDirectory: "/x"), n > 0 else {
            return XCTFail("the notice was not shown")
        }
        let screen = String(decoding: pty.readAvailable(), as: UTF8.self)
        XCTAssertFalse(screen.contains("clicker.bluez"), "a raw log line reached the terminal: \(screen)")
        XCTAssertTrue(screen.contains("adapter hci0 went away"), "the warning is on the status line: \(screen)")
        XCTAssertFalse(screen.contains("using adapter hci1"), "info lines stay in the file")

        XCTAssertEqual(route.restore(), file)
        let logged = try String(contentsOfFile: file, encoding: .utf8)
        XCTAssertTrue(logged.contains("warning clicker.bluez : adapter hci0 went away"), logged)
        XCTAssertTrue(logged.contains("info clicker.bluez : using adapter hci1; 2 objects mirrored"), logged)
        var st = stat()
        XCTAssertEqual(stat(file, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        withExtendedLifetime(terminal) {}
    }
}
