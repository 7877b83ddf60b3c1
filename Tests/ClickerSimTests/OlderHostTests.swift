#if canImport(Glibc)
import Glibc
#endif
import ClickerSim
import ClickerTransport
import OSThreads
import XCTest

/// A host of the air from before listening: it knows `hello` and answers every other type with
/// "unknown message type", as `AirHost` does for types it does not know.
private final class OlderHost: Sendable {
    let path: String
    private let listenFD: Int32

    init(path: String) throws {
        self.path = path
        listenFD = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listenFD, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0, listen(listenFD, 1) == 0 else { throw TransportError.radioUnavailable("older host: bind/listen") }
        let fd = listenFD
        guard OSThread.start(name: "older-host", { OlderHost.serveOne(fd) }) != nil else {
            throw TransportError.radioUnavailable("older host: thread")
        }
    }

    deinit {
        close(listenFD)
        unlink(path)
    }

    /// Serves one peer until it hangs up (blocking: runs on its own thread).
    private static func serveOne(_ listenFD: Int32) {
        let c = accept(listenFD, nil, nil)
        guard c >= 0 else { return }
        defer { close(c) }
        while let head = readExactly(c, 4) {
            let n = Int(head[0]) << 24 | Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
            guard n >= 5, let body = readExactly(c, n) else { return }
            let kind = body[0], id = Array(body[1..<5])
            let (code, extra): (UInt8, [UInt8]) = kind == 0x01
                ? (0, [0, 0, 0, 0xAA, 0x01, 0x00, 0x00, 0x09])
                : (5, Array("unknown message type \(kind)".utf8))
            let reply = be32(UInt32(6 + extra.count)) + [0x81] + id + [code] + extra
            _ = reply.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }

    private static func readExactly(_ fd: Int32, _ n: Int) -> [UInt8]? {
        var out: [UInt8] = []
        var b = [UInt8](repeating: 0, count: n)
        while out.count < n {
            let got = b.withUnsafeMutableBytes { read(fd, $0.baseAddress, n - out.count) }
            guard got > 0 else { return nil }
            out += b[0..<got]
        }
        return out
    }
}

final class OlderHostTests: XCTestCase {
    /// A peripheral of today joining a host of before listening: it joins and advertises as before, and its
    /// listening stream says plainly that this radio cannot listen.
    func testListeningOnAnOlderHostIsUnsupported() async throws {
        let host = try OlderHost(path: tempSocketPath("older"))
        let voter = try await SimulatedAir.connect(path: host.path)
        XCTAssertEqual(voter.address, DeviceAddress(rawValue: 0x00AA_0100_0009))
        do {
            _ = try await voter.startListening(companyID: 0x0A0A, dutyCycle: .fast)
            XCTFail("listening on an older host succeeded")
        } catch let e as TransportError {
            guard case .unsupported = e else { return XCTFail("unexpected \(e)") }
        }
        do {
            for try await _ in voter.listen(companyID: 0x0A0A, dutyCycle: .fast) {}
            XCTFail("the stream ended without an error")
        } catch let e as TransportError {
            guard case .unsupported = e else { return XCTFail("unexpected \(e)") }
        }
        await voter.shutdown()
    }
}
