import ClickerLedger
import ClickerTestSupport
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import Synchronization
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

    /// `ledger watch` prints the counts at start and again when a receiver's commit changes them.
    func testLedgerWatchPrintsTheCountsWhenACommitChangesThem() async throws {
        let url = try SharedServer.database()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 21, voteID: 21, policy: .latestWins, questions: [1, 2])
        let receiver = try BallotLedger(url: try instructor.issueReceiverToken(poll: 21, validUntil: Int64(Date().timeIntervalSince1970) + 3600)
                                            .url(replacingCredentialsOf: url), migrate: false)
        let (watch, out, err) = try process("clicker-tally", ["ledger", "watch", "--store", url, "--poll", "21", "--duration", "60"], home: dir)
        defer { if watch.isRunning { watch.terminate() } }
        let printed = Mutex("")
        out.fileHandleForReading.readabilityHandler = { h in
            let chunk = String(decoding: h.availableData, as: UTF8.self)
            printed.withLock { $0 += chunk }
        }
        defer { out.fileHandleForReading.readabilityHandler = nil }
        try await eventually("the first line", timeout: .seconds(30)) { printed.withLock { $0.contains("no ballots yet\n") } }
        func ballot(_ voter: UInt32, _ question: UInt8, _ answer: UInt8) -> LedgerBallot {
            LedgerBallot(poll: 21, question: question, voter: VoterKey(mode: .anonymous, voterID: voter), sequence: 1,
                         answer: .choice(answer), verified: false, heardAt: 0, address: DeviceAddress(rawValue: UInt64(voter)))
        }
        try receiver.write(batch: [ballot(1, 1, 0), ballot(2, 1, 1), ballot(3, 1, 1), ballot(1, 2, 2)])
        try await eventually("the counts after the commit", timeout: .seconds(30)) {
            printed.withLock { $0.contains("q1: A 1, B 2 (3 voters); q2: C 1 (1 voter)\n") }
        }
        // The instructor's tally closes question 1: a line says so, counts unchanged.
        XCTAssertTrue(try instructor.closeQuestion(poll: 21, question: 1))
        try await eventually("the close marked", timeout: .seconds(30)) {
            printed.withLock { $0.contains("q1 (closed): A 1, B 2 (3 voters); q2: C 1 (1 voter)\n") }
        }
        watch.terminate()
        watch.waitUntilExit()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertFalse(printed.withLock { $0 }.contains("cannot be read"), stderr)
    }
    /// The instructor's tally with `--ledger`, on one simulated air, and a receiver on another (the far
    /// side of the hall): the tally's results have the voters of both airs, once each, and the ledger
    /// has the tally's own voters as well as the receiver's.
    func testATallyWithTheLedgerCountsTheReceiversVotersWithItsOwn() async throws {
        let url = try SharedServer.database()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let tallyAir = "/tmp/clicker-tally-air-\(getpid()).sock", receiverAir = "/tmp/clicker-receiver-air-\(getpid()).sock"
        unlink(tallyAir)
        unlink(receiverAir)
        let (opened, token, openErr) = try finished("clicker-tally", ["ledger", "open", "--store", url, "--join-code", code, "--poll", "11"],
                                                    home: dir)
        XCTAssertEqual(opened, 0, openErr)
        let (receiver, _, receiverErr) = try process("clicker-tally", [
            "receiver", "--store", token.trimmingCharacters(in: .whitespacesAndNewlines), "--join-code", code, "--radio", "sim",
            "--air", receiverAir, "--journal", dir + "/receiver.sqlite", "--duration", "90"], home: dir)
        defer { if receiver.isRunning { receiver.terminate() } }
        let (tally, tallyOut, tallyErr) = try process("clicker-tally", [
            "--radio", "sim", "--air", tallyAir, "--join-code", code, "--no-store", "--no-gatt-confirm", "--ledger", url,
            "--ledger-poll", "11", "--ledger-journal", dir + "/tally.sqlite", "--duration", "90", "--json"], home: dir)
        defer { if tally.isRunning { tally.terminate() } }
        try await eventually("both airs hosted", timeout: .seconds(30)) {
            FileManager.default.fileExists(atPath: tallyAir) && FileManager.default.fileExists(atPath: receiverAir)
        }
        var voters: [Process] = []
        defer { for v in voters where v.isRunning { v.terminate() } }
        for (i, (air, answer)) in [(tallyAir, "A"), (tallyAir, "D"), (receiverAir, "B"), (receiverAir, "B"), (receiverAir, "C")].enumerated() {
            let home = dir + "/student\(i)"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            voters.append(try process("clicker-vote", ["--radio", "sim", "--air", air, "--question", "1", code, answer], home: home).0)
        }
        let instructor = try BallotLedger(url: url)
        try await eventually("the five ballots are in the ledger", timeout: .seconds(60)) {
            try instructor.counts(poll: 11, question: 1) == [.choice(0): 1, .choice(1): 2, .choice(2): 1, .choice(3): 1]
        }
        tally.terminate()
        let out = String(decoding: tallyOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let err = String(decoding: tallyErr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        tally.waitUntilExit()
        XCTAssertEqual(tally.terminationStatus, 0, err)
        let json = try XCTUnwrap(out.split(separator: "\n").last.map { Data($0.utf8) })
        let results = try XCTUnwrap(JSONSerialization.jsonObject(with: json) as? [String: Any], out)
        XCTAssertEqual(results["voters"] as? Int, 5, out)
        XCTAssertEqual(results["counts"] as? [String: Int], ["A": 1, "B": 2, "C": 1, "D": 1], out)
        // A and D were heard only on the tally's air: in the ledger, they came from the tally. (A voter
        // may send its ballot again under a new sequence: at least 2 ballots, and none left over.)
        XCTAssertTrue(err.contains("ledger poll 11: it committed "), err)
        XCTAssertFalse(err.contains("wait in the journal"), err)
        receiver.terminate()
        receiver.waitUntilExit()
        _ = receiverErr
    }
}
