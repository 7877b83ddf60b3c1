import ClickerLedger
import ClickerTestSupport
import ClickerTally
import ClickerWire
import Foundation
import XCTest

/// The built executables: `clicker-tally ledger open` registers a poll and prints a receiver token,
/// `clicker-tally receiver` counts what `clicker-vote` voters send on its simulated air into the
/// ledger, and `clicker-tally ledger close` ends the token.
final class ReceiverCommandTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    let code = "4821-ABCDE-FGHJK"

    func binary(_ name: String) throws -> String {
        let path = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else { throw XCTSkip("\(path) not built (swift build --build-tests builds it)") }
        return path
    }

    func process(_ name: String, _ args: [String], home: String) throws -> (Process, Pipe, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try binary(name))
        p.arguments = args
        p.environment = ["XDG_RUNTIME_DIR": home, "XDG_STATE_HOME": home, "HOME": home, "PATH": "/usr/bin:/bin"]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        return (p, out, err)
    }

    /// Runs to the end; returns status, stdout and stderr.
    func finished(_ name: String, _ args: [String], home: String) throws -> (Int32, String, String) {
        let (p, out, err) = try process(name, args, home: home)
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    func testLedgerOpenReceiverAndCloseFromTheCommandLine() async throws {
        let url = try SharedServer.database()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let air = "/tmp/clicker-receiver-\(getpid()).sock"
        unlink(air)

        let (opened, token, openErr) = try finished("clicker-tally", ["ledger", "open", "--store", url, "--join-code", code, "--poll", "9",
                                                                      "--options", "3"], home: dir)
        XCTAssertEqual(opened, 0, openErr)
        let receiverURL = token.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(receiverURL.hasPrefix("postgres://clicker_receiver_"), receiverURL)

        let (receiver, receiverOut, receiverErr) = try process("clicker-tally", [
            "receiver", "--store", receiverURL, "--join-code", code, "--radio", "sim", "--air", air,
            "--journal", dir + "/journal.sqlite", "--duration", "60"], home: dir)
        defer { if receiver.isRunning { receiver.terminate() } }
        try await eventually("the receiver hosts the air", timeout: .seconds(30)) { FileManager.default.fileExists(atPath: air) }

        var voters: [Process] = []
        defer { for v in voters where v.isRunning { v.terminate() } }
        for (i, answer) in ["B", "B", "C"].enumerated() {
            let home = dir + "/student\(i)"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            voters.append(try process("clicker-vote", ["--radio", "sim", "--air", air, "--question", "1", code, answer], home: home).0)
        }
        let instructor = try BallotLedger(url: url)
        try await eventually("the three ballots are in the ledger", timeout: .seconds(30)) {
            try instructor.counts(poll: 9, question: 1) == [.choice(1): 2, .choice(2): 1]
        }
        for v in voters { v.terminate() }

        receiver.terminate()   // SIGTERM: the writer's last pass, then the summary
        let out = String(decoding: receiverOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let err = String(decoding: receiverErr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        receiver.waitUntilExit()
        XCTAssertEqual(receiver.terminationStatus, 0, err)
        XCTAssertTrue(out.contains("counted 3 ballots; the ledger committed 3"), out)
        XCTAssertTrue(err.contains("receiving for poll 9 (vote 4821)"), err)

        let (closed, closeOut, closeErr) = try finished("clicker-tally", ["ledger", "close", "--store", url, "--poll", "9"], home: dir)
        XCTAssertEqual(closed, 0, closeErr)
        XCTAssertTrue(closeOut.contains("poll 9 closed; 1 receiver token revoked"), closeOut)
        let (again, _, againErr) = try finished("clicker-tally", ["receiver", "--store", receiverURL, "--join-code", code, "--radio", "sim",
                                                                 "--air", air + "2", "--journal", dir + "/journal.sqlite",
                                                                 "--duration", "1"], home: dir)
        XCTAssertNotEqual(again, 0)
        XCTAssertTrue(againErr.contains("PostgreSQL refused the credentials"), againErr)

        // A join code of another poll is refused by name.
        let other = try finished("clicker-tally", ["ledger", "open", "--store", url, "--join-code", code, "--poll", "10"], home: dir)
        XCTAssertEqual(other.0, 0, other.2)
        let wrong = try finished("clicker-tally", ["receiver", "--store", other.1.trimmingCharacters(in: .whitespacesAndNewlines),
                                                   "--join-code", "1234-ABCDE-FGHJK", "--radio", "sim", "--air", air + "3",
                                                   "--journal", dir + "/journal.sqlite", "--duration", "1"], home: dir)
        XCTAssertNotEqual(wrong.0, 0)
        XCTAssertTrue(wrong.2.contains("the join code is of vote 1234, but the receiver token is for the poll of vote 4821"), wrong.2)
    }
}
