#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerTransport
import Dispatch
import OSThreads
import Synchronization

// The peripheral's side of the socket-shared air (SocketAir.swift hosts it).

/// A peripheral whose radio is an `AirHost` in another process (or the same one).
public final class RemotePeripheral: PeripheralTransport, ListenerTransport {
    /// The address the host gave this device.
    public let address: DeviceAddress
    private let link: ClientLink

    private init(address: DeviceAddress, link: ClientLink) {
        self.address = address
        self.link = link
    }

    static func connect(path: String, address: DeviceAddress?, rssi: Double?) async throws -> RemotePeripheral {
        let link = try ClientLink(path: path)
        var w = ByteWriter()
        w.u16(AirFrame.version)
        w.u64(address?.rawValue ?? 0)
        w.u16(rssi.map { UInt16(bitPattern: Int16(sanitizedRSSI($0.rounded()))) } ?? 0x7FFF)
        do {
            let body = try await link.request(.hello, w.bytes)
            var r = ByteReader(body[...])
            guard let raw = r.u64() else { throw TransportError.radioUnavailable("bad hello reply from the air host") }
            return RemotePeripheral(address: DeviceAddress(rawValue: raw), link: link)
        } catch {
            link.close()
            throw error
        }
    }

    public func advertise(_ payload: AdvertisingPayload) async throws {
        var w = ByteWriter()
        w.u16(payload.companyID)
        w.u32(UInt32(clamping: Swift.max(0, payload.interval.nanoseconds / 1000)))
        w.u8(payload.connectable ? 1 : 0)
        w.raw(payload.data)
        _ = try await link.request(.advertise, w.bytes)
        link.setStatus(.advertising)
    }

    /// Makes this device an attacker's radio (``SimulatedAir/connectAttacker(path:address:rssi:)``).
    func becomeAttacker() async throws {
        _ = try await link.request(.attacker, [])
    }

    public func stopAdvertising() async throws {
        _ = try await link.request(.stopAdvertising, [])
        link.setStatus(.stopped)
    }

    public func publish(service: UUID128, characteristic: UUID128, value: [UInt8]) async throws {
        var w = ByteWriter()
        w.u64(service.high); w.u64(service.low); w.u64(characteristic.high); w.u64(characteristic.low)
        w.raw(value)
        _ = try await link.request(.publish, w.bytes)
    }

    /// Withdraws the device and disconnects from the host. Idempotent.
    public func shutdown() async {
        _ = try? await link.request(.shutdown, [])
        link.setStatus(.stopped)
        link.close()
    }

    public func status() -> AsyncStream<RadioStatus> { link.statusStream() }

    /// Listens for the central's broadcast through the host's air (see `SimulatedPeripheral.listen`).
    /// The stream throws `TransportError.unsupported` when the host cannot listen (an older host), and
    /// `.radioUnavailable` when the host goes away.
    public func listen(companyID: UInt16, dutyCycle: ScanDutyCycle) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        link.listen(companyID: companyID, dutyCycle: dutyCycle, acknowledged: nil)
    }

    /// ``listen(companyID:dutyCycle:)`` that returns once the host has the receiver listening, so that
    /// whatever the air does afterwards reaches the stream; throws what the host answered otherwise.
    public func startListening(companyID: UInt16, dutyCycle: ScanDutyCycle) async throws
        -> AsyncThrowingStream<AdvertisementReport, any Error> {
        var stream: AsyncThrowingStream<AdvertisementReport, any Error>?
        try await withCheckedThrowingContinuation { (ack: CheckedContinuation<Void, any Error>) in
            stream = link.listen(companyID: companyID, dutyCycle: dutyCycle, acknowledged: { ack.resume(with: $0) })
        }
        guard let stream else { throw TransportError.radioUnavailable("listening did not start") }
        return stream
    }
}

/// The peripheral's end of the socket: requests are queued for a writer thread, a reader thread
/// matches replies to them.
///
/// Neither the lock nor a pool thread ever waits on the socket: `request` only queues its frame
/// (refusing when ``maxQueued`` are already waiting, which means the host stopped reading), and the
/// writer sends outside the lock. The descriptor is closed by whichever thread ends last.
final class ClientLink: Sendable {
    /// Frames waiting for the writer beyond which a request is refused.
    static let maxQueued = 64

    struct State {
        var closed = false
        var nextID: UInt32 = 1
        var pending: [UInt32: @Sendable (Result<[UInt8], any Error>) -> Void] = [:]
        /// Listening streams by the number the host tags their reports with.
        var listeners: [UInt32: AsyncThrowingStream<AdvertisementReport, any Error>.Continuation] = [:]
        /// Set by `close()`: listening streams then finish without an error.
        var closing = false
        /// Encoded frames the writer has not taken yet, oldest first.
        var outbox: [[UInt8]] = []
        /// Reader and writer threads still using the descriptor.
        var threads = 2
        var status = RadioStatus(adapter: "simulated air (socket)", state: .starting)
        var statusSubscribers: [UInt32: AsyncStream<RadioStatus>.Continuation] = [:]
    }

    private let fd: Int32
    private let state = Mutex(State())
    /// Signalled for every queued frame and once at the end.
    private let wake = DispatchSemaphore(value: 0)

    init(path: String) throws {
        fd = try UnixSocket.make()
        do {
            try UnixSocket.connect(fd, path)
        } catch {
            Glibc.close(fd)
            throw error
        }
        let link = self
        guard OSThread.start(name: "clicker-air-tx", { link.writeLoop() }) != nil else {
            Glibc.close(fd)
            throw TransportError.radioUnavailable("cannot start the socket writer thread")
        }
        guard OSThread.start(name: "clicker-air-rx", { link.readLoop() }) != nil else {
            state.withLock { $0.closed = true; $0.threads -= 1 }
            wake.signal()  // the writer ends and closes the descriptor
            throw TransportError.radioUnavailable("cannot start the socket reader thread")
        }
    }

    func request(_ kind: AirFrame.Kind, _ body: [UInt8]) async throws -> [UInt8] {
        try await withCheckedThrowingContinuation { (cont: CheckedContinuation<[UInt8], any Error>) in
            send(kind, body) { cont.resume(with: $0) }
        }
    }

    /// Queues a request; `reply` gets the host's answer (or the failure) exactly once, on another thread.
    func send(_ kind: AirFrame.Kind, _ body: [UInt8], reply: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        let refusal: String? = state.withLock { s in
            guard !s.closed else { return "the air host is gone" }
            guard s.outbox.count < Self.maxQueued else {
                return "the air host is not reading (\(Self.maxQueued) requests wait to be sent)"
            }
            let id = s.nextID
            s.nextID &+= 1
            var w = ByteWriter()
            w.u32(id)
            w.raw(body)
            s.outbox.append(AirFrame.encode(kind, w.bytes))
            s.pending[id] = reply
            return nil
        }
        if let refusal {
            reply(.failure(TransportError.radioUnavailable(refusal)))
        } else {
            wake.signal()
        }
    }

    /// A listening stream: registered before the request goes out, so that no report can come first.
    func listen(companyID: UInt16, dutyCycle: ScanDutyCycle,
                acknowledged: (@Sendable (Result<Void, any Error>) -> Void)?) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        let (stream, continuation) = AsyncThrowingStream<AdvertisementReport, any Error>.makeStream()
        let number: UInt32 = state.withLock { s in
            let n = s.nextID
            s.nextID &+= 1
            s.listeners[n] = continuation
            return n
        }
        var w = ByteWriter()
        w.u32(number)
        w.u16(companyID)
        w.u32(UInt32(clamping: Swift.max(0, dutyCycle.window.nanoseconds / 1000)))
        w.u32(UInt32(clamping: Swift.max(0, dutyCycle.interval.nanoseconds / 1000)))
        continuation.onTermination = { [weak self] _ in
            guard let self, self.state.withLock({ $0.listeners.removeValue(forKey: number) }) != nil else { return }
            var w = ByteWriter()
            w.u32(number)
            self.send(.stopListening, w.bytes) { _ in }
        }
        send(.listen, w.bytes) { [weak self] result in
            switch result {
            case .success:
                acknowledged?(.success(()))
            case .failure(let error):
                let failure: any Error = (error as? TransportError).map { e in
                    if case .radioUnavailable(let m) = e, m.contains("unknown message type") {
                        return TransportError.unsupported("listening (the air host is older)")
                    }
                    return e
                } ?? error
                _ = self?.state.withLock { $0.listeners.removeValue(forKey: number) }
                continuation.finish(throwing: failure)
                acknowledged?(.failure(failure))
            }
        }
        return stream
    }

    /// Sends queued frames in order, outside the lock. A failed send shuts the socket down, which
    /// ends the reader, which fails every request still waiting for its reply.
    private func writeLoop() {
        sending: while true {
            wake.wait()
            let (frames, closed) = state.withLock { s in
                defer { s.outbox = [] }
                return (s.outbox, s.closed)
            }
            if closed { break }
            for frame in frames where !UnixSocket.sendAll(fd, frame) {
                _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
                break sending
            }
        }
        release()
    }

    /// One thread is done with the descriptor; the last one closes it.
    private func release() {
        state.withLock { s in
            s.threads -= 1
            if s.threads == 0 { Glibc.close(fd) }
        }
    }

    func setStatus(_ state: RadioStatus.State, error: String? = nil) {
        let outputs: [(AsyncStream<RadioStatus>.Continuation, RadioStatus)] = self.state.withLock { s in
            s.status.state = state
            if let error { s.status.lastError = error }
            let st = s.status
            return s.statusSubscribers.keys.sorted().compactMap { k in s.statusSubscribers[k].map { ($0, st) } }
        }
        for (c, st) in outputs { c.yield(st) }
    }

    func statusStream() -> AsyncStream<RadioStatus> {
        let (stream, continuation) = AsyncStream<RadioStatus>.makeStream()
        let (id, current): (UInt32, RadioStatus) = state.withLock { s in
            let id = s.nextID
            s.nextID &+= 1
            s.statusSubscribers[id] = continuation
            return (id, s.status)
        }
        continuation.yield(current)
        continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.statusSubscribers.removeValue(forKey: id) } }
        return stream
    }

    /// Wakes the reader and the writer, which end and close the descriptor. Idempotent.
    func close() {
        state.withLock { s in
            s.closing = true
            if !s.closed { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private func readLoop() {
        var assembler = FrameAssembler()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var reason = "the air host closed the connection"
        reading: while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            assembler.append(buffer[0..<n])
            while true {
                switch assembler.next() {
                case .needMore: continue reading
                case .badLength(let len):
                    reason = "garbage from the air host (frame length \(len))"
                    break reading
                case .frame(let kind, let body):
                    if kind == AirFrame.Kind.report.rawValue {
                        guard let (stream, report) = ListenReportCoding.decode(body) else { continue }
                        state.withLock { $0.listeners[stream] }?.yield(report)
                        continue
                    }
                    var r = ByteReader(body)
                    guard kind == AirFrame.Kind.result.rawValue, let id = r.u32(), let code = r.u8() else { continue }
                    let rest = r.rest()
                    let reply = state.withLock { $0.pending.removeValue(forKey: id) }
                    if code == AirFrame.Code.ok.rawValue {
                        reply?(.success(rest))
                    } else {
                        let message = String(decoding: rest, as: UTF8.self)
                        reply?(.failure(code == AirFrame.Code.unsupported.rawValue
                            ? TransportError.unsupported(message) : TransportError.radioUnavailable("air host refused: \(message)")))
                    }
                }
            }
        }
        let (pending, subscribers, listeners, closing) = state.withLock { s in
            s.closed = true
            s.status.state = .stopped
            s.status.lastError = reason
            defer { s.pending = [:]; s.statusSubscribers = [:]; s.listeners = [:] }
            return (s.pending.keys.sorted().compactMap { s.pending[$0] }, Array(s.statusSubscribers.values),
                    s.listeners.keys.sorted().compactMap { s.listeners[$0] }, s.closing)
        }
        wake.signal()  // the writer sees `closed` and ends
        release()
        for reply in pending { reply(.failure(TransportError.radioUnavailable(reason))) }
        for l in listeners {
            if closing { l.finish() } else { l.finish(throwing: TransportError.radioUnavailable(reason)) }
        }
        let final = state.withLock { $0.status }
        for s in subscribers {
            s.yield(final)
            s.finish()
        }
    }
}
