#if canImport(Glibc)
import Glibc
#endif
import ClickerSim
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import Synchronization
import XCTest

/// The built binaries under attack: a `clicker-tally --radio sim` hosting the socket-shared air, four
/// `clicker-vote <join-code>` followers joining it, and a classmate's radio that joins the same air as an
/// attacker (`SimulatedAir.connectAttacker`), hears the tally's frames and forges one with the join code.
/// Real time, bounded: the run ends after 30 s at most.
final class BeaconAttackBinaryTests: XCTestCase {
    let code = "4821-K7QXM-3PF9A"  // test constant

    func binary(_ name: String) throws -> URL {
        let url = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: url.path) else {
            throw XCTSkip("\(url.path) not built (swift build --build-tests builds it)")
        }
        return url
    }

    /// Attack #5 end to end: when the first voter shows "sending B" for question 1, the classmate sends one
    /// forged STATE "question 1 closed" (counter 1 s above the tally's newest, 150 ms at 20 ms). The voters
    /// that hear it show "question-closed 1", then send B again on their own; every voter ends on
    /// "counted B", and the tally counts the four and logs the forgery. Before, every voter that had
    /// answered when it heard the forgery showed question 1 unanswered and sent nothing.
    func testAForgedCloseFromAClassmatesRadioErasesNoAnswer() async throws {
        let tallyURL = try binary("clicker-tally"), voteURL = try binary("clicker-vote")
        let dir = NSTemporaryDirectory() + "clicker-attack-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let path = "/tmp/clicker-attack-\(getpid()).sock"
        unlink(path)
        let env = ["XDG_RUNTIME_DIR": dir, "XDG_STATE_HOME": dir, "HOME": dir, "PATH": "/usr/bin:/bin"]

        let tally = Process()
        tally.executableURL = tallyURL
        tally.arguments = ["--radio", "sim", "--air", path, "--no-gatt-confirm", "--no-store", "--json", "--duration", "30",
                           "--join-code", code]
        tally.environment = env
        let tallyOut = Pipe(), tallyErr = Pipe()
        tally.standardOutput = tallyOut
        tally.standardError = tallyErr
        tally.standardInput = FileHandle.nullDevice
        try tally.run()
        defer { if tally.isRunning { tally.terminate() } }
        let tallyOutput = ProcessOutput(tallyOut.fileHandleForReading), tallyLog = ProcessOutput(tallyErr.fileHandleForReading)
        try await until("the tally hosts the air", within: .seconds(20)) { FileManager.default.fileExists(atPath: path) }

        let attacker = try await SimulatedAir.connectAttacker(path: path)
        let recording = try await attacker.startListening(companyID: BallotFormat.companyID, dutyCycle: .continuous)
        let heard = Mutex<[[UInt8]]>([])
        let recorder = Task { do { for try await r in recording { heard.withLock { $0.append(r.data) } } } catch {} }
        defer { recorder.cancel() }

        let n = 4
        var voters: [(process: Process, lines: ProcessOutput)] = []
        for i in 0..<n {
            let p = Process()
            p.executableURL = voteURL
            p.arguments = ["--radio", "sim", "--air", path, code]
            // Each student's own device: its own state directory, hence its own device key.
            let home = dir + "/student\(i)"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            p.environment = ["XDG_RUNTIME_DIR": home, "XDG_STATE_HOME": home, "HOME": home, "PATH": "/usr/bin:/bin"]
            let out = Pipe(), input = Pipe()
            p.standardOutput = out
            p.standardInput = input
            p.standardError = FileHandle.nullDevice
            try p.run()
            // The student types B once, when question 1 first shows.
            let writer = input.fileHandleForWriting
            voters.append((p, ProcessOutput(out.fileHandleForReading) { line in
                if line == "question 1 single 4" { writer.write(Data("B\n".utf8)); return true }
                return false
            }))
        }
        defer { for v in voters where v.process.isRunning { v.process.terminate() } }

        try await until("a voter sends B", within: .seconds(30)) {
            voters.contains { $0.lines.all.contains("sending B") }
        }
        let forger = BeaconForger(secret: PollSecret(deriving: try JoinCode(parsing: code)))
        var forged = try XCTUnwrap(forger.newestState(in: heard.withLock { $0 }), "the attacker heard the tally's STATE")
        guard case .open(let q) = forged.poll else { return XCTFail("\(forged.poll)") }
        // 1 s ahead of the newest it heard (within the voters' lead): the tally may seal again meanwhile.
        forged.counter += 100
        forged.poll = .questionClosed(q)
        forged.interval = .stop
        try await attacker.advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: try forger.seal(forged),
                                                        interval: .milliseconds(20), connectable: false))
        try await Task.sleep(for: .milliseconds(150))
        try await attacker.stopAdvertising()

        try await until("the forged close reaches a voter", within: .seconds(10)) {
            voters.contains { $0.lines.all.contains("question-closed 1") }
        }
        let ok = try? await until("every voter counted B after the forgery", within: .seconds(20)) {
            voters.allSatisfy { v in
                let l = v.lines.all
                guard let closed = l.lastIndex(of: "question-closed 1") else { return l.last == "counted B" }
                return l[closed...].contains("counted B") && l.last == "counted B"
            }
        }
        let shownClosed = voters.filter { $0.lines.all.contains("question-closed 1") }.count
        XCTAssertNotNil(ok, "\(shownClosed) voters shown the forged close; lines: \(voters.map(\.lines.all))")
        await attacker.shutdown()
        tally.terminate()
        tally.waitUntilExit()
        tallyOutput.wait()
        tallyLog.wait()
        XCTAssertTrue(tallyOutput.all.last?.contains("\"voters\":\(n)") == true, tallyOutput.all.joined(separator: "\n"))
        XCTAssertTrue(tallyLog.all.contains { $0.contains("forged beacon") }, "the tally logs the forgery")
        if ok != nil { print("forged close: \(shownClosed) of \(n) voters shown it; all counted B after it") }
    }

    /// Polls `condition` every 50 ms of wall time (real processes on a real-time air) for at most `limit`.
    func until(_ what: String, within limit: Duration, _ condition: () -> Bool) async throws {
        let clock = ContinuousClock(), end = clock.now + limit
        while clock.now < end {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        if !condition() { throw Timeout(what: what) }
    }

    struct Timeout: Error, CustomStringConvertible {
        var what: String
        var description: String { "timed out: \(what)" }
    }
}

/// The lines of a pipe, read on a thread of their own (blocking reads stay off the cooperative pool);
/// `react` sees each line once and may answer it (true: it did, and is not asked again).
final class ProcessOutput: Sendable {
    private let lines = Mutex<[String]>([])
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle, react: (@Sendable (String) -> Bool)? = nil) {
        Thread.detachNewThread { [self] in
            var buffer: [UInt8] = [], reacted = false
            while true {
                let d = handle.availableData
                if d.isEmpty { break }
                buffer += d
                while let i = buffer.firstIndex(of: 10) {
                    let line = String(decoding: buffer[..<i], as: UTF8.self)
                    buffer.removeFirst(i + 1)
                    self.lines.withLock { $0.append(line) }
                    if !reacted, let react { reacted = react(line) }
                }
            }
            self.done.signal()
        }
    }

    var all: [String] { lines.withLock { $0 } }

    /// Waits until the pipe's writer closed it.
    func wait() { done.wait() }
}
