#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerTransport
import OSThreads
import Synchronization

// The simulated air across processes: the central's process hosts the air on a Unix socket;
// peripherals in other processes connect, send their advertising state and GATT values, and the
// host runs the physics (in real time) and answers GATT reads from what they sent.
// A peer that disconnects is a device that leaves the hall.

/// Counters of an `AirHost`.
public struct AirHostStatistics: Sendable, Hashable {
    /// Peer connections accepted so far.
    public var peersAccepted = 0
    /// Peers connected now.
    public var peersConnected = 0
    /// Frames understood and applied.
    public var framesAccepted = 0
    /// Well-framed messages refused (unknown type, malformed body, out of order).
    public var framesRejected = 0
    /// Connections closed because their byte stream lost its framing (bad length).
    public var peersDroppedForGarbage = 0

    public init() {}
}

/// Why the simulated air's socket could not be used, so a command can say what to do.
public enum AirSocketError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nobody hosts an air at this path (no socket file, or a stale one nobody listens on).
    case noAir(path: String)
    /// Another process already hosts an air at this path.
    case inUse(path: String)

    public var description: String {
        switch self {
        case .noAir(let path): "no simulated air at \(path)"
        case .inUse(let path): "an air host is already listening at \(path)"
        }
    }
}

extension SimulatedAir {
    /// `$XDG_RUNTIME_DIR/clicker-air.sock`, or `/tmp/clicker-air-<uid>.sock` without it.
    public static var defaultSocketPath: String {
        if let dir = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), !dir.isEmpty {
            return dir + "/clicker-air.sock"
        }
        return "/tmp/clicker-air-\(getuid()).sock"
    }

    /// Hosts this air on a Unix socket at `path` so that peripherals in other processes can join
    /// (use a real-time air). A stale socket file is replaced; a live host at `path` is
    /// ``AirSocketError/inUse(path:)``.
    public func host(path: String = SimulatedAir.defaultSocketPath) throws -> AirHost {
        try AirHost(air: self, path: path)
    }

    /// Joins the air hosted at `path` as a peripheral. `address` nil lets the host choose one;
    /// `rssi` (dBm) nil lets it draw one. No host at `path` is ``AirSocketError/noAir(path:)``.
    public static func connect(path: String = SimulatedAir.defaultSocketPath, address: DeviceAddress? = nil,
                               rssi: Double? = nil) async throws -> RemotePeripheral {
        try await RemotePeripheral.connect(path: path, address: address, rssi: rssi)
    }
}

/// A `SimulatedAir` served on a Unix socket. Runs one OS thread polling its peers.
public final class AirHost: Sendable {
    public let path: String
    public let air: SimulatedAir
    private let shared: HostShared

    init(air: SimulatedAir, path: String) throws {
        self.air = air
        self.path = path
        let fd = try UnixSocket.make()
        do {
            do {
                try UnixSocket.bind(fd, path)
            } catch {
                guard errno == EADDRINUSE else { throw error }
                // A socket file is there: is anybody listening?
                let probe = try UnixSocket.make()
                defer { Glibc.close(probe) }
                if (try? UnixSocket.connect(probe, path)) != nil {
                    throw AirSocketError.inUse(path: path)
                }
                unlink(path)
                try UnixSocket.bind(fd, path)
            }
            guard listen(fd, 128) == 0 else { throw TransportError.radioUnavailable(SocketError.describe("listen")) }
        } catch {
            Glibc.close(fd)
            throw error
        }
        UnixSocket.setNonBlocking(fd)
        // A pipe that wakes the loop when it must stop, so it waits on events without a timeout.
        var wake: [Int32] = [-1, -1]
        guard pipe(&wake) == 0 else {
            Glibc.close(fd)
            unlink(path)
            throw TransportError.radioUnavailable(SocketError.describe("pipe"))
        }
        for w in wake {
            UnixSocket.setNonBlocking(w)
            _ = fcntl(w, F_SETFD, FD_CLOEXEC)
        }
        shared = HostShared(wakeRead: wake[0], wakeWrite: wake[1])
        let loop = HostLoop(listenFD: fd, path: path, air: air, shared: shared)
        guard let thread = OSThread.start(name: "clicker-air", { loop.run() }) else {
            Glibc.close(fd)
            unlink(path)
            throw TransportError.radioUnavailable("cannot start the air host thread")
        }
        shared.state.withLock { $0.thread = thread }
    }

    deinit {
        close()
        Glibc.close(shared.wakeRead)
        Glibc.close(shared.wakeWrite)
    }

    public var statistics: AirHostStatistics { shared.state.withLock { $0.stats } }

    /// Stops serving: every peer is disconnected (its device leaves), the socket file is removed.
    /// Blocks until the host thread has finished (it is woken at once); from async code use
    /// ``shutdown()``. Idempotent.
    public func close() {
        stop()?.waitUntilFinished()
    }

    /// ``close()`` for async code: suspends until the host thread has finished, blocking no thread.
    public func shutdown() async {
        await stop()?.finished()
    }

    private func stop() -> ThreadHandle? {
        let thread = shared.state.withLock { s in
            s.stopping = true
            return s.thread
        }
        var byte: UInt8 = 1
        _ = write(shared.wakeWrite, &byte, 1)  // non-blocking; a full pipe already wakes the loop
        return thread
    }
}

/// What the host and its thread share.
private final class HostShared: Sendable {
    struct State {
        var stopping = false
        var stats = AirHostStatistics()
        var thread: ThreadHandle?
    }

    let state = Mutex(State())
    /// The stop pipe: the loop polls `wakeRead`; `AirHost.stop()` writes to `wakeWrite`. Both stay
    /// open until the host is deinitialised, after its thread has ended.
    let wakeRead: Int32
    let wakeWrite: Int32

    init(wakeRead: Int32, wakeWrite: Int32) {
        self.wakeRead = wakeRead
        self.wakeWrite = wakeWrite
    }

    var stopping: Bool { state.withLock { $0.stopping } }
    func count(_ update: (inout AirHostStatistics) -> Void) { state.withLock { update(&$0.stats) } }
}

/// The host's poll loop. Lives on its own thread; everything in it is confined to that thread.
private final class HostLoop: Sendable {
    let listenFD: Int32
    let path: String
    let air: SimulatedAir
    let host: HostShared

    init(listenFD: Int32, path: String, air: SimulatedAir, shared: HostShared) {
        self.listenFD = listenFD
        self.path = path
        self.air = air
        self.host = shared
    }

    /// One connected peripheral process.
    final class Peer {
        let fd: Int32
        let writer: PeerWriter
        var assembler = FrameAssembler()
        var address: DeviceAddress?
        /// The peer's listening streams: its stream number → the air's listener id.
        var listens: [UInt32: UInt64] = [:]
        init(fd: Int32) {
            self.fd = fd
            writer = PeerWriter(fd: fd)
        }
    }

    func run() {
        var peers: [Int32: Peer] = [:]
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !host.stopping {
            let order = peers.keys.sorted()
            var fds = [pollfd(fd: listenFD, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: host.wakeRead, events: Int16(POLLIN), revents: 0)]
                + order.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let rc = poll(&fds, nfds_t(fds.count), -1)
            guard rc > 0 else { continue }
            if fds[0].revents != 0 { acceptAll(into: &peers) }
            for p in fds.dropFirst(2) where p.revents != 0 {  // after the listener and the stop pipe
                guard let peer = peers[p.fd] else { continue }
                let n = buffer.withUnsafeMutableBytes { read(p.fd, $0.baseAddress, $0.count) }
                if n < 0 && (errno == EAGAIN || errno == EINTR) { continue }
                guard n > 0 else {
                    drop(peer, from: &peers)
                    continue
                }
                peer.assembler.append(buffer[0..<n])
                if !process(peer) { drop(peer, from: &peers) }
            }
        }
        for peer in peers.values { drop(peer, from: &peers) }
        Glibc.close(listenFD)
        unlink(path)
    }

    private func acceptAll(into peers: inout [Int32: Peer]) {
        while true {
            let fd = accept(listenFD, nil, nil)
            guard fd >= 0 else { return }
            UnixSocket.setNonBlocking(fd)
            peers[fd] = Peer(fd: fd)
            host.count { $0.peersAccepted += 1; $0.peersConnected += 1 }
        }
    }

    private func drop(_ peer: Peer, from peers: inout [Int32: Peer]) {
        if let address = peer.address {
            air.withCore { c in if let d = c.device(address) { c.remove(d) } }
        }
        peer.writer.close()
        peers[peer.fd] = nil
        host.count { $0.peersConnected -= 1 }
    }

    /// Handles every complete frame; false when the connection must be dropped.
    private func process(_ peer: Peer) -> Bool {
        while true {
            switch peer.assembler.next() {
            case .needMore: return true
            case .badLength:
                host.count { $0.peersDroppedForGarbage += 1 }
                return false
            case .frame(let kind, let body):
                var r = ByteReader(body)
                guard let id = r.u32() else {
                    host.count { $0.framesRejected += 1 }
                    if !reply(peer, id: 0, .malformed, message: "no request id") { return false }
                    continue
                }
                let (code, extra) = handle(peer, kind: kind, &r)
                host.count { if code == .ok { $0.framesAccepted += 1 } else { $0.framesRejected += 1 } }
                if !reply(peer, id: id, code, extra: extra) { return false }
            }
        }
    }

    private func reply(_ peer: Peer, id: UInt32, _ code: AirFrame.Code, message: String) -> Bool {
        reply(peer, id: id, code, extra: Array(message.utf8))
    }

    private func reply(_ peer: Peer, id: UInt32, _ code: AirFrame.Code, extra: [UInt8]) -> Bool {
        var w = ByteWriter()
        w.u32(id)
        w.u8(code.rawValue)
        w.raw(Array(extra.prefix(AirFrame.maxLength - 8)))
        return peer.writer.send(AirFrame.encode(.result, w.bytes))
    }

    private func handle(_ peer: Peer, kind: UInt8, _ r: inout ByteReader) -> (AirFrame.Code, [UInt8]) {
        guard let k = AirFrame.Kind(rawValue: kind), k != .result else {
            return (.unknownType, Array("unknown message type \(kind)".utf8))
        }
        if k == .hello {
            guard peer.address == nil else { return (.malformed, Array("already introduced".utf8)) }
            guard let version = r.u16(), let raw = r.u64(), let rssiRaw = r.u16(), r.remaining == 0 else {
                return (.malformed, Array("bad hello".utf8))
            }
            guard version == AirFrame.version else { return (.unsupported, Array("protocol version \(version)".utf8)) }
            let rssi: Double? = rssiRaw == 0x7FFF ? nil : Double(Int16(bitPattern: rssiRaw))
            let wanted: DeviceAddress? = raw == 0 ? nil : DeviceAddress(rawValue: raw)
            let address: DeviceAddress? = air.withCore { c in
                if let wanted, let d = c.device(wanted), d.present { return nil }
                return c.addDevice(address: wanted, rssi: rssi).address
            }
            guard let address else { return (.addressInUse, Array("address \(raw) in use".utf8)) }
            peer.address = address
            var w = ByteWriter()
            w.u64(address.rawValue)
            return (.ok, w.bytes)
        }
        guard let address = peer.address else { return (.notIntroduced, Array("hello first".utf8)) }
        switch k {
        case .advertise:
            guard let company = r.u16(), let micros = r.u32(), let connectable = r.u8() else {
                return (.malformed, Array("bad advertise".utf8))
            }
            let payload = AdvertisingPayload(companyID: company, data: r.rest(), interval: .microseconds(micros),
                                             connectable: connectable != 0)
            do {
                try air.withCore { c in try c.advertise(c.addDevice(address: address, rssi: nil), payload) }
                return (.ok, [])
            } catch {
                return (.unsupported, Array("\(error)".utf8))
            }
        case .stopAdvertising:
            air.withCore { c in if let d = c.device(address) { c.stopAdvertising(d) } }
            return (.ok, [])
        case .publish:
            guard let sh = r.u64(), let sl = r.u64(), let ch = r.u64(), let cl = r.u64() else {
                return (.malformed, Array("bad publish".utf8))
            }
            let key = GATTKey(service: UUID128(high: sh, low: sl), characteristic: UUID128(high: ch, low: cl))
            let value = r.rest()
            air.withCore { c in c.addDevice(address: address, rssi: nil).gatt[key] = value }
            return (.ok, [])
        case .shutdown:
            air.withCore { c in if let d = c.device(address) { c.remove(d) } }
            peer.listens = [:]
            return (.ok, [])
        case .listen:
            guard let stream = r.u32(), let company = r.u16(), let window = r.u32(), let interval = r.u32(),
                  r.remaining == 0
            else { return (.malformed, Array("bad listen".utf8)) }
            guard peer.listens[stream] == nil else { return (.malformed, Array("stream \(stream) already listens".utf8)) }
            let writer = peer.writer
            let duty = ScanDutyCycle(window: .microseconds(window), interval: .microseconds(interval))
            peer.listens[stream] = air.withCore { c in
                let id = c.makeID()
                c.listen(c.addDevice(address: address, rssi: nil), id: id, companyID: company, dutyCycle: duty,
                         sink: .callback { report in if let report { writer.sendReport(stream: stream, report) } })
                return id
            }
            return (.ok, [])
        case .stopListening:
            guard let stream = r.u32(), r.remaining == 0 else { return (.malformed, Array("bad stop listening".utf8)) }
            if let id = peer.listens.removeValue(forKey: stream) {
                air.withCore { c in if let d = c.device(address) { c.stopListening(d, id: id) } }
            }
            return (.ok, [])
        case .attacker:
            guard r.remaining == 0 else { return (.malformed, Array("bad attacker".utf8)) }
            air.withCore { c in c.makeAttacker(c.addDevice(address: address, rssi: nil)) }
            return (.ok, [])
        case .hello, .result, .report:
            return (.unknownType, [])
        }
    }
}
