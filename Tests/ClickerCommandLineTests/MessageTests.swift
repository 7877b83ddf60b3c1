import ClickerCommandLine
import ClickerSim
import ClickerWire
import XCTest

final class MessageTests: XCTestCase {
    /// A 300-character answer echoed by the parser is cut short; the hint at the end survives.
    func testAnEchoedLongAnswerIsCutShort() throws {
        let typed = String(repeating: "Z", count: 300)
        XCTAssertThrowsError(try Answer(parsing: typed)) { error in
            let message = Failure("answer: \(error)").description
            XCTAssertLessThanOrEqual(message.count, 200, message)
            XCTAssertEqual(Failure(message).description, message, "a message wrapped twice is cut once")
            XCTAssertTrue(message.hasPrefix("answer: 'ZZZ"), message)
            XCTAssertTrue(message.hasSuffix("is not an option letter (A to H)"), message)
            XCTAssertTrue(message.contains("characters cut"), message)
        }
        // Every line is bounded on its own; short lines and the line structure are kept.
        let text = "short\n" + String(repeating: "x", count: 1000) + "\nend"
        let lines = MessageText.clipped(text).split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(lines.count, 3)
        XCTAssertEqual(lines.first, "short")
        XCTAssertEqual(lines.last, "end")
        XCTAssertLessThanOrEqual(lines[1].count, MessageText.wordLimit)
        XCTAssertEqual(MessageText.clipped(String(repeating: "y", count: MessageText.wordLimit)),
                       String(repeating: "y", count: MessageText.wordLimit), "a word at the limit is whole")
        // Echoed input with spaces in it is bounded too.
        let spaced = String(repeating: "ab ", count: 5000)
        XCTAssertLessThanOrEqual(MessageText.clipped(spaced).count, MessageText.lineLimit)
    }

    /// A message of our own words is never cut, however long: the hint in its middle stays.
    func testALongMessageOfWordsIsKeptWhole() {
        let message = "the adapter hci0 is blocked by rfkill (soft): run `rfkill unblock bluetooth` as root, then start "
            + "clicker-tally again; if it is blocked again at once, a desktop applet or airplane mode blocks it: turn "
            + "Bluetooth on there; on a laptop, a hardware switch or a key may block it (hard): see `rfkill list`"
        XCTAssertGreaterThan(message.count, 250)
        XCTAssertEqual(Failure(message).description, message)
    }

    func testControlCharactersInAFailureAreNeutralised() {
        let message = Failure("roster name \u{1B}[2Jgone\nsecond line").description
        XCTAssertFalse(message.unicodeScalars.contains("\u{1B}"))
        XCTAssertTrue(message.contains("\n"), "our own newlines are kept")
    }

    func testRadioFailuresSayWhatToDo() {
        let none = Failure.radio(AirSocketError.noAir(path: "/run/user/1000/clicker-air.sock")).description
        XCTAssertTrue(none.hasPrefix("no simulated air at /run/user/1000/clicker-air.sock: start `clicker-tally --radio sim` first"),
                      none)
        let taken = Failure.radio(AirSocketError.inUse(path: "/tmp/a.sock")).description
        XCTAssertTrue(taken.contains("/tmp/a.sock is already hosted by another clicker-tally"), taken)
        XCTAssertTrue(taken.contains("--air"), taken)
        XCTAssertEqual(Failure.radio(TransportErrorStandIn()).description, "some radio error")
    }

    func testVersionNamesReleaseAndBallotProtocol() {
        let text = ClickerVersion.text(program: "clicker-vote")
        XCTAssertEqual(text, "clicker-vote \(ClickerVersion.release) (ballot protocol \(BallotFormat.version))")
        XCTAssertEqual(ClickerVersion.ballotProtocol, 2)
    }
}

private struct TransportErrorStandIn: Error, CustomStringConvertible {
    var description: String { "some radio error" }
}
