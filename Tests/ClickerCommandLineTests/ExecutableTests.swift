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

    /// `--kind` and `--options`: an answer the question does not offer is refused with what it takes,
    /// before the radio is opened (with no air to join, an accepted answer gets as far as the radio and
    /// fails there instead).
    func testVoterRefusesAnAnswerTheQuestionDoesNotOfferBeforeAdvertising() throws {
        let path = "/tmp/clicker-cli-test-\(getpid())-kind.sock"
        unlink(path)
        let code = "4821-ABCDE-FGHJK"
        func vote(_ rest: [String]) throws -> (status: Int32, stderr: String) {
            try run("clicker-vote", ["--radio", "sim", "--air", path, code] + rest)
        }
        let refused: [([String], String)] = [
            (["E", "--kind", "single", "--options", "4"], "answer: option E is not offered; this question takes one letter, A to D"),
            (["true", "--kind", "single"], "answer: 'true' does not answer this question; this question takes one letter, A to D"),
            (["A+A", "--kind", "multi", "--options", "3"],
             "answer: option A appears twice; this question takes one or more different letters from A to C, joined by +, like A+C"),
            (["C>A>D", "--kind", "ranked", "--options", "3"],
             "answer: option D is not offered; this question takes different letters from A to C in order of preference, like C>A (rank as many as you like)"),
            (["12.5", "--kind", "numeric", "--range", "0..10", "--decimals", "1"],
             "answer: 12.5 is out of range; this question takes a number with at most 1 decimal from 0.0 to 10.0"),
            (["3.5", "--kind", "numeric", "--range", "-5..5"],
             "answer: '3.5' is not a whole number; this question takes a whole number from -5 to 5"),
            (["A", "--kind", "truefalse"], "answer: 'A' does not answer this question; this question takes true or false"),
            (["B", "--options", "2"], "--options, --range and --decimals describe a question: give its --kind too"),
            (["B", "--kind", "single", "--options", "9"], "--options must be 2 to 8"),
            // The tally refuses a one-option question: the voter refuses it the same way.
            (["A", "--kind", "single", "--options", "1"], "--options must be 2 to 8: a question offers 2 to 8 options (A to H)"),
            (["3", "--kind", "numeric", "--range", "5..1"], "'5..1' is empty: its low end is above its high end; --range takes LOW..HIGH"),
            (["3", "--kind", "numeric", "--range", "0.0..1.0"], "answer: 3 is out of range; this question takes a number with at most 1 decimal from 0.0 to 1.0"),
        ]
        for (args, message) in refused {
            let (status, stderr) = try vote(args)
            XCTAssertNotEqual(status, 0, args.joined(separator: " "))
            XCTAssertTrue(stderr.contains(message), "\(args): \(stderr)")
            XCTAssertFalse(stderr.contains("no simulated air"), "\(args) reached the radio: \(stderr)")
        }
        for args in [["C", "--kind", "single", "--options", "4"], ["3.5", "--kind", "numeric", "--range", "0..10", "--decimals", "1"],
                     ["B", "--kind", "ranked"], ["false", "--kind", "truefalse"], ["A+C"],
                     // Without --kind the answer waits for the beacon's question, whose decimals it carries
                     // (protocol 4): 9.81 fits a question of 2 decimals, so it is not refused here.
                     ["9.81"]] {
            let (status, stderr) = try vote(args)
            XCTAssertNotEqual(status, 0)
            XCTAssertTrue(stderr.contains("no simulated air at \(path)"), "\(args) was refused: \(stderr)")
        }
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
