import Foundation
import PostgresClient
import PostgresTestSupport
import XCTest

/// A connection gives up on a network that stops answering, by default and as its URL says.
final class ConnectionLivenessTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    /// A TCP port that completes the handshake (the kernel does) but never says a word: a server
    /// that hangs, or a network that lost the answers.
    private func silentPort() throws -> (fd: Int32, port: Int) {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw XCTSkip("cannot listen on loopback") }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Connects to a silent server (`query` added to its URL) on a thread of its own, and waits at most
    /// a minute of real time for the outcome: without a timeout the connection would wait for ever, and
    /// so would the test. Nil if it did not return.
    private func connectToSilentServer(query: String = "", connectTimeout: Int) throws -> (error: PostgresError?, seconds: Double)? {
        let silent = try silentPort()
        defer { close(silent.fd) }
        var liveness = ConnectionLiveness.standard
        liveness.connectTimeout = connectTimeout
        let url = "postgres://u:p@127.0.0.1:\(silent.port)/db" + query
        let done = expectation(description: "connect returns")
        nonisolated(unsafe) var outcome: (PostgresError?, Double)?
        let start = Date()
        Thread.detachNewThread { [liveness] in
            var error: PostgresError?
            do { _ = try PostgresConnection(url: url, liveness: liveness) } catch let e { error = e as? PostgresError }
            outcome = (error, Date().timeIntervalSince(start))
            done.fulfill()
        }
        return XCTWaiter().wait(for: [done], timeout: 60) == .completed ? outcome : nil
    }

    func testAServerThatNeverAnswersIsGivenUpOnWithinTheConnectTimeout() throws {
        let outcome = try XCTUnwrap(connectToSilentServer(connectTimeout: 2), "the connection waited more than a minute on a silent server")
        XCTAssertEqual(outcome.error?.kind, .unreachable, "\(String(describing: outcome.error))")
        XCTAssertTrue("\(outcome.error.map { "\($0)" } ?? "")".contains("timeout"), "\(String(describing: outcome.error))")
        XCTAssertGreaterThanOrEqual(outcome.seconds, 1.9, "it waited out the timeout, not less")
    }

    func testTheURLsConnectTimeoutTakesPrecedence() throws {
        // A default that would wait ten minutes; the URL asks for 2 s.
        let outcome = try XCTUnwrap(connectToSilentServer(query: "?connect_timeout=2", connectTimeout: 600),
                                    "the URL's connect_timeout was not used")
        XCTAssertEqual(outcome.error?.kind, .unreachable)
        XCTAssertTrue("\(outcome.error.map { "\($0)" } ?? "")".contains("timeout"), "\(String(describing: outcome.error))")
    }

    /// The options are on the connection's socket, where the kernel applies them.
    func testTheSocketCarriesTheKeepalivesAndTheUserTimeout() throws {
        let url = try SharedServer.get().url()
        let db = try PostgresConnection(url: url)
        XCTAssertEqual(try option(db.socket, SOL_SOCKET, SO_KEEPALIVE), 1)
        XCTAssertEqual(try option(db.socket, Int32(IPPROTO_TCP), TCP_KEEPIDLE), 10)
        XCTAssertEqual(try option(db.socket, Int32(IPPROTO_TCP), TCP_KEEPINTVL), 5)
        XCTAssertEqual(try option(db.socket, Int32(IPPROTO_TCP), TCP_KEEPCNT), 3)
        XCTAssertEqual(try option(db.socket, Int32(IPPROTO_TCP), TCP_USER_TIMEOUT), 20_000)
        XCTAssertEqual(db.options["connect_timeout"], "10")
        XCTAssertEqual(try db.execute("SELECT 1").rows.first?.int(0), 1)

        let own = try PostgresConnection(url: url + "?keepalives_idle=30&tcp_user_timeout=5000&connect_timeout=3")
        XCTAssertEqual(try option(own.socket, Int32(IPPROTO_TCP), TCP_KEEPIDLE), 30, "the URL's value, not the default")
        XCTAssertEqual(try option(own.socket, Int32(IPPROTO_TCP), TCP_USER_TIMEOUT), 5000)
        XCTAssertEqual(try option(own.socket, Int32(IPPROTO_TCP), TCP_KEEPCNT), 3, "what the URL leaves out is the default")
        XCTAssertEqual(own.options["connect_timeout"], "3")

        let off = try PostgresConnection(url: url + "?keepalives=0")
        XCTAssertEqual(try option(off.socket, SOL_SOCKET, SO_KEEPALIVE), 0, "a URL may turn keepalives off")
    }

    private func option(_ fd: Int32, _ level: Int32, _ name: Int32) throws -> Int32 {
        var value: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, level, name, &value, &length) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EINVAL) }
        return value
    }
}
