import ClickerSim
import ClickerTransport
import ClickerWire
import Foundation
import XCTest

/// What a student sees of `clicker-vote`, run as a student runs it against a beacon the test sends
/// on the simulated air: on a terminal (sentences) and through a pipe (a board's script).
final class StudentLinesTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    /// `clicker-vote CODE B`, the form on the projector page: B is cast for the open question that
    /// takes it, counted, and the voter goes on to the next question when the beacon says so.
    func testAnAnswerOnTheCommandLineFollowsTheBeacon() async throws {
        let beacon = try TestBeacon(code: code, name: "first")
        defer { beacon.close() }
        let vote = try VoteProcess(["--radio", "sim", "--air", beacon.path, code.description, "B"], terminal: false)
        let voter = try await vote.voterID(code)
        try vote.start()
        defer { _ = vote.finish() }
        let q1 = BeaconQuestion(number: 1, kind: .single, options: 4)
        let q2 = BeaconQuestion(number: 2, kind: .single, options: 4)
        var line = await vote.next()
        XCTAssertEqual(line, "waiting")
        try await beacon.send([try beacon.state(.open(q1), 100)])
        let lines = await vote.next(2)
        XCTAssertEqual(lines, ["question 1 single 4", "sending B"])
        try await beacon.send([try beacon.state(.open(q1), 100), try beacon.acks(1, voterID: voter, sequence: 1)])
        line = await vote.next()
        XCTAssertEqual(line, "counted B")
        try await beacon.send([try beacon.state(.open(q2), 100)])
        line = await vote.next()
        XCTAssertEqual(line, "question 2 single 4")
        vote.type("C")
        line = await vote.next()
        XCTAssertEqual(line, "sending C")
    }

    /// On a terminal: the question once, with its title, and a prompt that says what to type; a
    /// line that is no answer and an answer the question does not take are each answered with what
    /// to do; no log line on stderr.
    func testTheTerminalShowsTheQuestionOnceAndSaysWhatToType() async throws {
        let beacon = try TestBeacon(code: code, name: "terminal")
        defer { beacon.close() }
        let vote = try VoteProcess(["--radio", "sim", "--air", beacon.path, code.description], terminal: true)
        try vote.start()
        var line = await vote.next()
        XCTAssertEqual(line, "Waiting for the tally's beacon…")
        let (q1, pages) = try beacon.question(1, .truefalse, options: 0, text: QuestionText(title: "Is the sky blue?"))
        // The STATE first, then its text, as a tally sends them.
        try await beacon.send([try beacon.state(.open(q1), 100)])
        try await beacon.send([try beacon.state(.open(q1), 100)] + pages)
        let shown = await vote.next(2)
        XCTAssertEqual(shown, ["Question 1: Is the sky blue?", "Type your answer: true or false."])
        vote.type("maybe")
        line = await vote.next()
        XCTAssertEqual(line, "maybe is not an answer: 'maybe' does not answer this question; it takes true or false. Type another answer.")
        vote.type("B")
        line = await vote.next()
        XCTAssertEqual(line, "B does not answer question 1: it takes true or false. Type another answer.")
        vote.type("true")
        line = await vote.next()
        XCTAssertEqual(line, "Sending true…")
        let errors = vote.finish()
        XCTAssertEqual(errors, "", "no log lines on a student's terminal")
    }

    /// A join code no tally beacons: the student is told what to check, and an answer typed then is
    /// said to wait for a question.
    func testAWrongJoinCodeSaysWhatToCheckAndTypedAnswersWait() async throws {
        let beacon = try TestBeacon(code: code, name: "wrong")
        defer { beacon.close() }
        try await beacon.send([try beacon.state(.open(BeaconQuestion(number: 1, kind: .single, options: 4)), 100)])
        let vote = try VoteProcess(["--radio", "sim", "--air", beacon.path, "4821-ABCDE-FGHJM"], terminal: true)
        try vote.start()
        var line = await vote.next()
        XCTAssertEqual(line, "Waiting for the tally's beacon…")
        line = await vote.next()   // after BeaconFollower.noBeaconAfter
        XCTAssertEqual(line?.hasPrefix("No poll is heard for this join code. Check the code against the instructor's screen"), true,
                       line ?? "")
        XCTAssertEqual(line?.contains("--question"), false, "a student is not told about tallies that do not beacon")
        vote.type("A")
        line = await vote.next()
        XCTAssertEqual(line, "A will be sent when a question opens.")
        _ = vote.finish()
    }

    /// The tally that hosted the simulated air stops and starts again, hosting a new air on the same
    /// socket: the voter joins it and follows the resumed poll without a restart.
    func testAFollowerRejoinsATallyThatRestarted() async throws {
        let first = try TestBeacon(code: code, name: "restart")
        let vote = try VoteProcess(["--radio", "sim", "--air", first.path, code.description], terminal: false)
        try vote.start()
        defer { _ = vote.finish() }
        var line = await vote.next()
        XCTAssertEqual(line, "waiting")
        try await first.send([try first.state(.open(BeaconQuestion(number: 1, kind: .single, options: 4)), 100)])
        line = await vote.next()
        XCTAssertEqual(line, "question 1 single 4")
        try await first.send([try first.state(.closed, nil)])
        line = await vote.next()
        XCTAssertEqual(line, "poll-closed")
        first.close()
        let again = try TestBeacon(code: code, name: "restart", counter: first.lastCounter + 100)
        defer { again.close() }
        try await again.send([try again.state(.open(BeaconQuestion(number: 2, kind: .single, options: 4)), 100)])
        line = await vote.next()
        XCTAssertEqual(line, "question 2 single 4")
        vote.type("B")
        line = await vote.next()
        XCTAssertEqual(line, "sending B")
    }

    /// `clicker-vote --help` names the options a student needs: --radio and --roster.
    func testHelpShowsRadioAndRoster() throws {
        let process = Process()
        process.executableURL = try VoteProcess.executable()
        process.arguments = ["--help"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertTrue(text.contains("--radio"), text)
        XCTAssertTrue(text.contains("--roster"), text)
    }
}
