#if canImport(Glibc)
import Glibc
#endif
import ClickerSim
import ClickerTransport
import XCTest

/// A raw client, to speak (or mangle) the air socket protocol by hand.
final class RawClient {
    let fd: Int32

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in path.utf8.enumerated() { raw[i] = b }
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else { throw TransportError.radioUnavailable("connect failed") }
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Sends one frame: length, type, request id, body.
    func frame(_ type: UInt8, id: UInt32, _ body: [UInt8]) {
        let n = body.count + 5
        send(be32(UInt32(n)) + [type] + be32(id) + body)
    }

    /// Reads one reply frame: (request id, code); nil on EOF or timeout.
    func reply() -> (id: UInt32, code: UInt8, rest: [UInt8])? {
        guard let head = readExactly(4) else { return nil }
        let n = Int(head[0]) << 24 | Int(head[1]) << 16 | Int(head[2]) << 8 | Int(head[3])
        guard n >= 6, let body = readExactly(n) else { return nil }
        let id = UInt32(body[1]) << 24 | UInt32(body[2]) << 16 | UInt32(body[3]) << 8 | UInt32(body[4])
        return (id, body[5], Array(body[6...]))
    }

    /// True when the host has closed the connection (read returns 0).
    func isClosedByPeer() -> Bool {
        var b = [UInt8](repeating: 0, count: 64)
        return b.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } == 0
    }

    private func readExactly(_ n: Int) -> [UInt8]? {
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

func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)] }

func tempSocketPath(_ name: String) -> String {
    let path = "/tmp/clicker-sim-test-\(getpid())-\(name).sock"
    unlink(path)
    return path
}

final class SocketAirTests: XCTestCase {
    func testPeripheralsOverSocketsAreHeardAndRead() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 51, clock: .realTime()))
        defer { air.stop() }
        let path = tempSocketPath("heard")
        let host = try air.host(path: path)
        defer { host.close() }
        let central = air.central()

        let a = try await SimulatedAir.connect(path: path)
        let b = try await SimulatedAir.connect(path: path, address: DeviceAddress(rawValue: 0x00AA_0100_0002), rssi: -50)
        XCTAssertEqual(b.address, DeviceAddress(rawValue: 0x00AA_0100_0002))
        XCTAssertNotEqual(a.address, b.address)
        try await a.advertise(payload(1, interval: .milliseconds(20)))
        try await b.advertise(payload(2, interval: .milliseconds(20)))
        try await a.publish(service: service, characteristic: ballot, value: [0xB1])

        var seen: [DeviceAddress: [UInt8]] = [:]
        for try await r in central.advertisements(companyID: companyID) {
            seen[r.address] = r.data
            if seen.count == 2 { break }
        }
        XCTAssertEqual(seen[a.address], payload(1).data)
        XCTAssertEqual(seen[b.address], payload(2).data)

        let value = try await central.readCharacteristic(device: a.address, service: service, characteristic: ballot, timeout: .seconds(3))
        XCTAssertEqual(value, [0xB1])

        // Oversized data is refused by the host, as a real controller would.
        do {
            try await a.advertise(payload(3, bytes: 30))
            XCTFail("oversized advertising accepted")
        } catch let e as TransportError {
            guard case .unsupported = e else { return XCTFail("unexpected \(e)") }
        }

        // A clean shutdown: the device leaves.
        await a.shutdown()
        try await eventually("the device to leave") { !air.devices.contains(a.address) }
        do {
            _ = try await central.readCharacteristic(device: a.address, service: service, characteristic: ballot, timeout: .seconds(1))
            XCTFail("read from a departed device succeeded")
        } catch let e as TransportError { XCTAssertEqual(e, .notConnected(a.address)) }
        await a.shutdown()  // idempotent
        do {
            try await a.advertise(payload(1))
            XCTFail("advertising after shutdown succeeded")
        } catch let e as TransportError {
            guard case .radioUnavailable = e else { return XCTFail("unexpected \(e)") }
        }
        XCTAssertEqual(host.statistics.framesRejected, 1)  // the oversized advertise
        XCTAssertGreaterThanOrEqual(host.statistics.framesAccepted, 6)
    }

    func testPeerThatVanishesIsADeviceThatLeaves() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 52, clock: .realTime()))
        defer { air.stop() }
        let path = tempSocketPath("vanish")
        let host = try air.host(path: path)
        defer { host.close() }
        var raw: RawClient? = try RawClient(path: path)
        // hello: version 1, address 0x42, default rssi
        raw?.frame(0x01, id: 7, [0, 1] + [0, 0, 0, 0, 0, 0, 0, 0x42] + [0x7F, 0xFF])
        let hello = raw?.reply()
        XCTAssertEqual(hello?.id, 7)
        XCTAssertEqual(hello?.code, 0)
        XCTAssertEqual(hello?.rest, [0, 0, 0, 0, 0, 0, 0, 0x42])
        // advertise: company 0xFFFF, 20 000 µs, connectable, 3 bytes
        raw?.frame(0x02, id: 8, [0xFF, 0xFF] + be32(20_000) + [1, 9, 9, 9])
        XCTAssertEqual(raw?.reply()?.code, 0)
        XCTAssertTrue(air.devices.contains(DeviceAddress(rawValue: 0x42)))
        raw = nil  // the process "crashes": its socket closes
        try await eventually("the device to leave") { !air.devices.contains(DeviceAddress(rawValue: 0x42)) }
        try await eventually("the peer to be dropped") { host.statistics.peersConnected == 0 }
    }

    func testGarbageIsCountedAndNeverStopsTheHost() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 53, clock: .realTime()))
        defer { air.stop() }
        let path = tempSocketPath("garbage")
        let host = try air.host(path: path)
        defer { host.close() }

        // Out of order: advertise before hello.
        let early = try RawClient(path: path)
        early.frame(0x02, id: 1, [0xFF, 0xFF] + be32(20_000) + [1, 1])
        XCTAssertEqual(early.reply()?.code, 3)
        // Unknown type, then malformed bodies: refused, connection kept.
        early.frame(0x77, id: 2, [1, 2, 3])
        XCTAssertEqual(early.reply()?.code, 5)
        early.send(be32(2) + [0x01, 0x00])  // hello without a request id
        XCTAssertEqual(early.reply()?.code, 2)
        early.frame(0x01, id: 3, [0, 1, 2])  // truncated hello
        XCTAssertEqual(early.reply()?.code, 2)
        XCTAssertEqual(host.statistics.framesRejected, 4)

        // Lost framing: a zero length, and a huge length. The host drops those connections.
        let zero = try RawClient(path: path)
        zero.send([0, 0, 0, 0, 1, 2, 3])
        XCTAssertTrue(zero.isClosedByPeer())
        let huge = try RawClient(path: path)
        huge.send([0x7F, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 0xEE, count: 100))
        XCTAssertTrue(huge.isClosedByPeer())
        // Random noise from a seeded generator, in odd-sized pieces.
        var g = Xoshiro256StarStar(seed: 99)
        for _ in 0..<20 {
            let noise = try RawClient(path: path)
            noise.send((0..<Int(g.next() % 300 + 1)).map { _ in UInt8(truncatingIfNeeded: g.next()) })
            _ = noise.reply()  // whatever happens, the host must survive
        }
        try await eventually("both garbled peers to be dropped") { host.statistics.peersDroppedForGarbage >= 2 }

        // A well-behaved peripheral is still served and heard.
        let good = try await SimulatedAir.connect(path: path)
        try await good.advertise(payload(5, interval: .milliseconds(20)))
        for try await r in air.central().advertisements(companyID: companyID) where r.address == good.address {
            XCTAssertEqual(r.data, payload(5).data)
            break
        }
        await good.shutdown()
    }

    func testHostClosingEndsPeripheralsAndSocketFileRules() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 54, clock: .realTime()))
        defer { air.stop() }
        let path = tempSocketPath("close")
        let host = try air.host(path: path)
        // A second host on a live socket is refused.
        XCTAssertThrowsError(try air.host(path: path))
        let p = try await SimulatedAir.connect(path: path, address: DeviceAddress(rawValue: 0x99))
        // The same address cannot join twice.
        do {
            _ = try await SimulatedAir.connect(path: path, address: DeviceAddress(rawValue: 0x99))
            XCTFail("duplicate address accepted")
        } catch {}
        var status = p.status().makeAsyncIterator()
        _ = await status.next()
        host.close()
        XCTAssertEqual(access(path, F_OK), -1, "socket file removed")
        var last: RadioStatus?
        while let s = await status.next() { last = s }
        XCTAssertEqual(last?.state, .stopped)
        XCTAssertNotNil(last?.lastError)
        do {
            try await p.advertise(payload(1))
            XCTFail("advertising through a closed host succeeded")
        } catch let e as TransportError {
            guard case .radioUnavailable = e else { return XCTFail("unexpected \(e)") }
        }
        XCTAssertFalse(air.devices.contains(DeviceAddress(rawValue: 0x99)))

        // A stale socket file (nobody listening) is replaced.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        close(stale)
        XCTAssertEqual(access(path, F_OK), 0)
        let again = try air.host(path: path)
        let q = try await SimulatedAir.connect(path: path)
        await q.shutdown()
        again.close()
    }
}

final class AirSocketErrorTests: XCTestCase {
    /// No socket file, or a stale one nobody listens on: the voter learns that there is no air.
    func testJoiningWithoutAHostIsNoAir() async throws {
        let path = tempSocketPath("noair")
        do {
            _ = try await SimulatedAir.connect(path: path)
            XCTFail("joined an air nobody hosts")
        } catch let e as AirSocketError { XCTAssertEqual(e, .noAir(path: path)) }
        // A stale socket file left by a host that died.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        close(stale)
        defer { unlink(path) }
        do {
            _ = try await SimulatedAir.connect(path: path)
            XCTFail("joined a stale socket")
        } catch let e as AirSocketError { XCTAssertEqual(e, .noAir(path: path)) }
    }

    /// A second host on a live socket is refused with its own error (the tally turns it into advice).
    func testASecondHostIsInUse() throws {
        let air = SimulatedAir(AirConfiguration(seed: 55, clock: .realTime()))
        defer { air.stop() }
        let path = tempSocketPath("inuse")
        let host = try air.host(path: path)
        defer { host.close() }
        let second = SimulatedAir(AirConfiguration(seed: 56, clock: .realTime()))
        defer { second.stop() }
        XCTAssertThrowsError(try second.host(path: path)) { error in
            XCTAssertEqual(error as? AirSocketError, .inUse(path: path))
        }
    }
}
