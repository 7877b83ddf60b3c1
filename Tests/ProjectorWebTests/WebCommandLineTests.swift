import Foundation
import ProjectorPage
import ProjectorTestSupport
import ProjectorWeb
import Synchronization
import XCTest

/// The built `clicker-tally` with `--web`: it says where the page is, serves it while the poll runs,
/// and refuses an address beyond loopback unless told so.
final class WebCommandLineTests: XCTestCase {
    var binary: String {
        get throws {
            let bin = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
                .appendingPathComponent("clicker-tally").path
            guard FileManager.default.isExecutableFile(atPath: bin) else {
                throw XCTSkip("\(bin) not built (swift build --build-tests builds it)")
            }
            return bin
        }
    }

    func launch(_ args: [String]) throws -> (Process, Pipe, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: try binary)
        p.arguments = args
        let dir = NSTemporaryDirectory() + "clicker-web-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        p.environment = ["XDG_RUNTIME_DIR": dir, "XDG_STATE_HOME": dir, "PATH": "/usr/bin:/bin"]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        return (p, out, err)
    }

    func testARunServesThePageWhileItCounts() async throws {
        let (process, out, err) = try launch(["--simulate", "40", "--simulate-speed", "20", "--no-store", "--air",
                                              NSTemporaryDirectory() + "clicker-web-air-\(UUID().uuidString)",
                                              "--web", "127.0.0.1:0", "--duration", "12"])
        addTeardownBlock { if process.isRunning { process.terminate() } }
        // The URL is the first line on stderr once the server listens.
        let url: String = try await withCheckedThrowingContinuation { continuation in
            let seen = Mutex((text: "", done: false))
            err.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                let line: String?? = seen.withLock { s in
                    guard !s.done else { return nil }
                    s.text += String(decoding: data, as: UTF8.self)
                    if let r = s.text.range(of: "projector page: "), let end = s.text[r.upperBound...].firstIndex(of: "\n") {
                        s.done = true
                        return .some(String(s.text[r.upperBound..<end]))
                    }
                    if data.isEmpty { s.done = true; return .some(nil) }
                    return nil
                }
                guard let line else { return }
                handle.readabilityHandler = nil
                if let line { continuation.resume(returning: line) } else {
                    continuation.resume(throwing: HTTPTestClientError.noResponse)
                }
            }
        }
        let match = try XCTUnwrap(url.wholeMatch(of: /http:\/\/127\.0\.0\.1:(\d+)\//), url)
        let port = try XCTUnwrap(Int(match.1))
        let page = try await HTTPTestClient.fetch(port: port, path: "/")
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.body, ProjectorPage.bytes)
        var events = try await EventReader(port: port)
        let (snapshot, _) = try await events.snapshot { $0.voters > 0 }
        XCTAssertEqual(snapshot.results?.bars.map(\.option), ["A", "B", "C", "D"])
        XCTAssertEqual(snapshot.results?.bars.reduce(0) { $0 + $1.count }, snapshot.voters)
        // The first epoch of live counts (10 voters, 5 s) came; the run ends (its duration) and the stream with it.
        while try await events.next() != nil {}
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        _ = out.fileHandleForReading.readDataToEndOfFile()
    }

    func testAnAddressBeyondLoopbackNeedsWebPublic() throws {
        for (args, message) in [
            (["--web", "0.0.0.0:8080"], "add --web-public"),
            (["--web", "8080x"], "is not a port"),
            (["--web", "::1:8080"], "goes in brackets"),
            (["--web-public"], "--web-public goes with --web"),
            (["daemon", "--web", "192.168.1.2:80"], "add --web-public"),
        ] {
            let (p, _, err) = try launch(args + (args[0] == "daemon" ? [] : ["--no-store", "--duration", "0.1"]))
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            XCTAssertEqual(p.terminationStatus, 64, "\(args): \(text)")
            XCTAssertTrue(text.contains(message), "\(args): \(text)")
        }
    }

    /// Off loopback (`0.0.0.0`, with `--web-public`), the tally warns that the page is reachable from
    /// other machines, before it prints the URLs: one per address of this machine, none of them the
    /// wildcard, each with the same read-only token, loopback last.
    func testAWildcardAddressWarnsAndPrintsAURLPerAddress() throws {
        let (p, out, err) = try launch(["--simulate", "4", "--no-store", "--air",
                                        NSTemporaryDirectory() + "clicker-web-air-\(UUID().uuidString)",
                                        "--web", "0.0.0.0:0", "--web-public", "--duration", "1"])
        let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        _ = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, text)
        let lines = text.split(separator: "\n").map(String.init)
        let warning = try XCTUnwrap(lines.firstIndex { $0.contains("warning: the projector page listens on 0.0.0.0:") }, text)
        XCTAssertTrue(lines[warning].contains("beyond this machine, and shows the join code"), lines[warning])
        // And what plain HTTP gives away (attack #10 of the security review).
        XCTAssertTrue(lines.contains { $0.contains(ProjectorServer.plainHTTPWarning) }, text)
        let urls = lines.compactMap { line in line.range(of: "projector page: ").map { String(line[$0.upperBound...]) } }
        XCTAssertFalse(urls.isEmpty, text)
        XCTAssertLessThan(warning, try XCTUnwrap(lines.firstIndex { $0.contains("projector page: http") }))
        let tokens = Set(urls.compactMap { $0.firstMatch(of: /\?token=([0-9a-f]{32})$/).map { String($0.1) } })
        XCTAssertEqual(tokens.count, 1, "\(urls)")
        XCTAssertEqual(tokens.count == 1 ? urls.count : 0, urls.filter { $0.contains("?token=") }.count)
        XCTAssertFalse(urls.contains { $0.contains("0.0.0.0") }, "\(urls)")
        XCTAssertTrue(urls.last?.hasPrefix("http://127.0.0.1:") ?? false, "\(urls)")
    }
}
