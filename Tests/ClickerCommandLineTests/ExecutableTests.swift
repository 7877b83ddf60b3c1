#if canImport(Glibc)
import Glibc
#endif
import ClickerSim
import Foundation
import XCTest

/// The built executables, run as a person runs them, for the messages they print.
final class ExecutableTests: XCTestCase {
    /// `clicker-vote` and `clicker-tally` sit beside the test bundle in the build directory.
    func executable(_ name: String) throws -> URL {
        let bundle = URL(fileURLWithPath: CommandLine.arguments.first { $0.hasSuffix(".xctest") } ?? "/proc/self/exe")
            .resolvingSymlinksInPath()
        let url = bundle.deletingLastPathComponent().appendingPathComponent(name)
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: url.path), "\(name) not built (swift build --build-tests)")
        return url
    }

    /// Runs `name` with `arguments` and a private state directory; its exit status and stderr.
    func run(_ name: String, _ arguments: [String]) throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = try executable(name)
        process.arguments = arguments
        let state = NSTemporaryDirectory() + "clicker-cli-\(UUID().uuidString)"
        process.environment = ["XDG_STATE_HOME": state, "HOME": state, "PATH": "/usr/bin:/bin",
                               "XDG_RUNTIME_DIR": state]
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    func testVoterWithoutATallySaysToStartOne() throws {
        let path = "/tmp/clicker-cli-test-\(getpid())-none.sock"
        unlink(path)
        let (status, stderr) = try run("clicker-vote", ["--radio", "sim", "--air", path, "4821-ABCDE-FGHJK", "B"])
        XCTAssertNotEqual(status, 0)
        XCTAssertTrue(stderr.contains("no simulated air at \(path): start `clicker-tally --radio sim` first"), stderr)
    }

    func testSecondTallyOnATakenAirIsRefused() throws {
        let air = SimulatedAir(AirConfiguration(seed: 1, clock: .realTime()))
        defer { air.stop() }
        let path = "/tmp/clicker-cli-test-\(getpid())-taken.sock"
        unlink(path)
        let host = try air.host(path: path)
        defer { host.close() }
        let (status, stderr) = try run("clicker-tally", ["--radio", "sim", "--air", path, "--no-store", "--duration", "5"])
        XCTAssertNotEqual(status, 0, stderr)
        XCTAssertTrue(stderr.contains("\(path) is already hosted by another clicker-tally"), stderr)
    }

    func testALongAnswerIsNotEchoedWhole() throws {
        let typed = String(repeating: "Q", count: 300)
        let (status, stderr) = try run("clicker-vote", ["--radio", "sim", "4821-ABCDE-FGHJK", typed])
        XCTAssertNotEqual(status, 0)
        let line = try XCTUnwrap(stderr.split(separator: "\n").first { $0.contains("answer:") }, stderr)
        XCTAssertTrue(line.contains("is not an option letter"), String(line))
        XCTAssertLessThan(line.filter { $0 == "Q" }.count, 200, String(line))
    }

    func testVoterVersion() throws {
        let process = Process()
        process.executableURL = try executable("clicker-vote")
        process.arguments = ["--version"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        XCTAssertTrue(String(decoding: data, as: UTF8.self).hasPrefix("clicker-vote 0."), String(decoding: data, as: UTF8.self))
    }
}
