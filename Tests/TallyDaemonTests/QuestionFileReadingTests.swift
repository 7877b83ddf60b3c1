import Foundation
import Glibc
import XCTest

/// The built `clicker-tally` with a `--questions` path that is not a readable UTF-8 file: each says
/// what the path is, never "permission" (it used to for /dev/zero and a FIFO), and a Latin-1 file
/// names the line. A FIFO with no writer does not hang the start.
final class QuestionFileReadingTests: XCTestCase {
    func testEachUnreadableQuestionFileGetsItsReason() throws {
        let dir = NSTemporaryDirectory() + "clicker-qfile-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let fifo = dir + "/fifo.yaml"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let latin1 = dir + "/latin1.yaml"
        try Data("questions:\n  - title: Caf".utf8 + [0xE9] + Data("?\n    kind: truefalse\n".utf8))
            .write(to: URL(fileURLWithPath: latin1))
        let cases: [(path: String, says: String)] = [
            ("/dev/zero", "it is a character device, not a regular file"),
            (fifo, "it is a FIFO (named pipe), not a regular file"),
            (dir, "it is a directory, not a file"),
            (latin1, "line 2, column 15: byte 0xE9 is not UTF-8"),
            (dir + "/missing.yaml", "No such file or directory"),
        ]
        for (path, says) in cases {
            let run = try clickerTally(["--radio", "sim", "--no-gatt-confirm", "--duration", "0.2", "--json",
                                            "--db", dir + "/clicker.sqlite", "--questions", path], runtime: dir)
            XCTAssertEqual(run.status, 1, path)
            XCTAssertTrue(run.stderr.contains("cannot read the question file \(path): \(says)"), "\(path): \(run.stderr)")
            XCTAssertFalse(run.stderr.lowercased().contains("permission"), "\(path): \(run.stderr)")
        }
    }
}

/// Runs the built `clicker-tally` with `args` (standard input empty) and returns its status and output;
/// skips when it is not built. The one runner of the tally's executable for the tests of this target.
func clickerTally(_ args: [String], runtime: String) throws -> CommandLineTests.Run {
    let bin = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("clicker-tally").path
    guard FileManager.default.isExecutableFile(atPath: bin) else {
        throw XCTSkip("\(bin) not built (swift build --build-tests builds it)")
    }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: bin)
    p.arguments = args
    p.environment = ["XDG_RUNTIME_DIR": runtime, "PATH": "/usr/bin:/bin"]
    let out = Pipe(), err = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    try p.run()
    let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return CommandLineTests.Run(status: p.terminationStatus, stdout: String(decoding: o, as: UTF8.self),
                                stderr: String(decoding: e, as: UTF8.self))
}
