#if canImport(Glibc)
import ClickerTestSupport
import ClickerWire
import Foundation
import Glibc
import ProjectorPage
import ProjectorTestSupport
import ProjectorWeb
import Synchronization
import TallyDaemon
import XCTest

/// Attack #3 of the security review against the real server: 1,100 keep-alive connections, each
/// refused with 403 and held open, to a tally process whose file descriptors are limited to 1,024
/// (systemd's default soft limit). The server runs in a child process of its own with that limit;
/// the attacking connections and the valid client are this process's. The child lives, and a valid
/// client is served while the attacker holds its connections.
final class HeldConnectionsTests: XCTestCase {
    static let childVariable = "CLICKER_WEB_CHILD"
    static let token = "held-connections-test-token"
    static let descriptorLimit: rlim_t = 1024
    static let attackers = 1100

    /// The child: the page's server with `descriptorLimit` descriptors, its port written to
    /// `<dir>/port`, until `<dir>/done` appears.
    func testServeWithFewDescriptorsUntilTold() async throws {
        guard let v = getenv(Self.childVariable) else { throw XCTSkip("runs in a child process started by its parent test") }
        let dir = String(cString: v)
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = Self.descriptorLimit
        XCTAssertEqual(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit), 0)
        let controller = try PollController(options: PollOptions(joinCode: try JoinCode(parsing: "4821-ABCDE-FGHJK"),
                                                                 confirmByGATT: false), store: nil)
        let server = try await ProjectorServer.start(controller: controller, address: ProjectorAddress(host: "127.0.0.1", port: 0),
                                                     token: Self.token)
        FileManager.default.createFile(atPath: dir + "/port.tmp", contents: Data("\(server.address.port)".utf8))
        rename(dir + "/port.tmp", dir + "/port")
        while !FileManager.default.fileExists(atPath: dir + "/done") {
            try await Task.sleep(for: .milliseconds(50))
        }
        await server.stop()
    }

    func testElevenHundredHeldRefusedConnectionsNeitherKillNorStarveTheServer() async throws {
        guard getenv(Self.childVariable) == nil else { throw XCTSkip("the parent's test") }
        // This side holds 1,100 sockets and more: its own limit up to the hard one.
        var mine = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &mine)
        guard mine.rlim_max >= rlim_t(Self.attackers + 256) else { throw XCTSkip("hard descriptor limit \(mine.rlim_max)") }
        mine.rlim_cur = mine.rlim_max
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &mine)

        let dir = NSTemporaryDirectory() + "clicker-held-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = dir + "/child.log"
        let pid = try ChildTestProcess.spawn("ProjectorWebTests.HeldConnectionsTests/testServeWithFewDescriptorsUntilTold",
                                             environment: ["\(Self.childVariable)=\(dir)"], output: log)
        var reaped = false
        defer {
            FileManager.default.createFile(atPath: dir + "/done", contents: nil)
            if !reaped { var s: Int32 = 0; waitpid(pid, &s, 0) }
        }
        var listening: Int?
        try await eventually("the child's server listens", timeout: .seconds(120)) {
            listening = (try? String(contentsOfFile: dir + "/port", encoding: .utf8)).flatMap { Int($0) }
            return listening != nil
        }
        let port = try XCTUnwrap(listening)

        // The attack: every connection sends one refused request and is held open.
        var held = HeldSockets(port: port, count: Self.attackers,
                               request: "GET /?token=wrong HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: keep-alive\r\n\r\n")
        defer { held.closeAll() }
        try await eventually("every attacking connection sent its request", timeout: .seconds(120)) { held.progress() }
        XCTAssertEqual(held.sent, Self.attackers)

        // The attacker keeps its connections busy (another refused request on each, about every
        // second: no idle timeout frees them), yet the server closes every one of them.
        var polls = 0
        try await eventually("the server closes every refused connection", timeout: .seconds(20)) {
            polls += 1
            if polls % 100 == 0 { held.resend() }
            return held.closedByPeer() >= Self.attackers
        }

        // A valid client is served while the attacker goes on, and the child lives.
        let finished = Finished()
        async let fetched = Self.fetch(port: port, path: "/?token=\(Self.token)", then: finished)
        while !finished.value {
            held.resend()
            try await Task.sleep(for: .seconds(1))
        }
        let page = try await fetched
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.body, ProjectorPage.bytes)
        let again = try await HTTPTestClient.fetch(port: port, path: "/results.json?token=\(Self.token)", timeout: .seconds(60))
        XCTAssertEqual(again.status, 200)
        var status: Int32 = 0
        XCTAssertEqual(waitpid(pid, &status, WNOHANG), 0, "the tally's process lives")

        FileManager.default.createFile(atPath: dir + "/done", contents: nil)
        XCTAssertEqual(waitpid(pid, &status, 0), pid)
        reaped = true
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        XCTAssertEqual(status, 0, "the child ended cleanly (status \(status)):\n\(output.suffix(2000))")
    }

    static func fetch(port: Int, path: String, then finished: Finished) async throws -> HTTPTestClient.Response {
        defer { finished.set() }
        return try await HTTPTestClient.fetch(port: port, path: path, timeout: .seconds(20))
    }
}

/// Set once, from another task.
final class Finished: Sendable {
    private let flag = Mutex(false)
    var value: Bool { flag.withLock { $0 } }
    func set() { flag.withLock { $0 = true } }
}

/// Non-blocking client sockets that connect, send one request each, and stay open.
struct HeldSockets {
    var fds: [Int32] = []
    var sentFlags: [Bool] = []
    var eof: [Bool] = []
    let request: [UInt8]

    init(port: Int, count: Int, request: String) {
        self.request = Array(request.utf8)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { continue }
            _ = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            fds.append(fd)
        }
        sentFlags = Array(repeating: false, count: fds.count)
        eof = Array(repeating: false, count: fds.count)
    }

    var sent: Int { sentFlags.filter { $0 }.count }

    /// Sends the request on every socket that has connected; true once all have sent it.
    mutating func progress() -> Bool {
        for i in fds.indices where !sentFlags[i] {
            var p = pollfd(fd: fds[i], events: Int16(POLLOUT), revents: 0)
            guard poll(&p, 1, 0) == 1, p.revents & Int16(POLLOUT) != 0 else { continue }
            let n = request.withUnsafeBytes { send(fds[i], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n == request.count { sentFlags[i] = true }
        }
        return sent == fds.count
    }

    /// Another refused request on every socket still open.
    mutating func resend() {
        for i in fds.indices where sentFlags[i] && !eof[i] {
            _ = request.withUnsafeBytes { send(fds[i], $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        }
    }

    /// Sockets whose server side has closed (read returns 0 or an error after the response).
    mutating func closedByPeer() -> Int {
        var buffer = [UInt8](repeating: 0, count: 4096)
        for i in fds.indices where !eof[i] {
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fds[i], $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if n > 0 { continue }
                if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) { eof[i] = true }
                break
            }
        }
        return eof.filter { $0 }.count
    }

    func closeAll() { for fd in fds { close(fd) } }
}
#endif
