#if canImport(Glibc)
import Glibc
#endif
import ClickerSim
import ClickerTransport
import ClickerWire
import Foundation
import XCTest

/// `clicker-vote <join-code>` (no answer, no --question), run as a board's script runs it (stdout a
/// pipe), against a beacon this test broadcasts on the simulated air: one status line per change.
final class FollowTheBeaconTests: XCTestCase {
    func testTheVoterPrintsOneLinePerChangeAsTheBeaconSays() async throws {
        let name = "clicker-vote"
        let bundle = URL(fileURLWithPath: CommandLine.arguments.first { $0.hasSuffix(".xctest") } ?? "/proc/self/exe")
            .resolvingSymlinksInPath()
        let exe = bundle.deletingLastPathComponent().appendingPathComponent(name)
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: exe.path), "\(name) not built")
        let air = SimulatedAir(AirConfiguration(seed: 5, clock: .realTime()))
        defer { air.stop() }
        let path = "/tmp/clicker-cli-test-\(getpid())-follow.sock"
        unlink(path)
        let host = try air.host(path: path)
        defer { host.close() }
        let code = try JoinCode(parsing: "4821-ABCDE-FGHJK")
        let key = BeaconKey(PollSecret(deriving: code))
        let tally = air.central()
        var counter: UInt32 = 1
        func beacon(_ poll: BeaconPoll, _ ms: Int?) async throws {
            counter += 1
            let s = BeaconState(voteID: key.voteID, counter: counter, mode: .anonymous, poll: poll,
                                interval: ms.flatMap { BeaconInterval(milliseconds: $0) } ?? .stop)
            try await tally.broadcast(BroadcastPayload(companyID: BallotFormat.companyID, frames: [try BeaconCodec.seal(s, key: key)],
                                                       interval: .milliseconds(20)))
        }

        let process = Process()
        process.executableURL = exe
        process.arguments = ["--radio", "sim", "--air", path, code.description]
        let state = NSTemporaryDirectory() + "clicker-cli-\(UUID().uuidString)"
        process.environment = ["XDG_STATE_HOME": state, "HOME": state, "PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": state]
        let out = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardInput = input
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // Lines read on a thread of their own (blocking reads stay off the cooperative pool).
        let (lines, sink) = AsyncStream<String>.makeStream()
        let handle = out.fileHandleForReading
        Thread.detachNewThread {
            let reader = LineReader(handle)
            while let line = reader.next() { sink.yield(line) }
            sink.finish()
        }
        var reader = lines.makeAsyncIterator()
        var line: String?

        line = await reader.next(); XCTAssertEqual(line, "waiting")
        let q2 = BeaconQuestion(number: 2, kind: .single, options: 4)
        try await beacon(.open(q2), 100)
        line = await reader.next(); XCTAssertEqual(line, "question 2 single 4")
        input.fileHandleForWriting.write(Data("E\n".utf8))
        line = await reader.next(); XCTAssertEqual(line, "not-offered E")
        input.fileHandleForWriting.write(Data("C\n".utf8))
        line = await reader.next(); XCTAssertEqual(line, "sending C")
        try await beacon(.questionClosed(q2), nil)
        line = await reader.next(); XCTAssertEqual(line, "question-closed 2")
        try await beacon(.closed, nil)
        line = await reader.next(); XCTAssertEqual(line, "poll-closed")
        process.terminate()
        process.waitUntilExit()
    }
}

/// Lines of a pipe, read with a blocking read (the test's own thread; each line is an acknowledged event).
final class LineReader {
    let handle: FileHandle
    var buffer: [UInt8] = []
    init(_ handle: FileHandle) { self.handle = handle }
    func next() -> String? {
        while true {
            if let i = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<i], as: UTF8.self)
                buffer.removeFirst(i + 1)
                return line
            }
            let d = handle.availableData
            if d.isEmpty { return nil }
            buffer += d
        }
    }
}
