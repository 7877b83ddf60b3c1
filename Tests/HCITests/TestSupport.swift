import ClickerTransport
@testable import HCI
import Synchronization
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Test-side model of one advertising report, encoded independently of the code under test,
/// following the Core Specification's field order.
struct ReportModel: Equatable {
    var eventType: UInt16
    var addressType: UInt8
    var address: [UInt8]       // six octets as on the wire (least significant first)
    var data: [UInt8]
    var rssi: UInt8            // raw octet
    // extended only
    var primaryPHY: UInt8 = 1, secondaryPHY: UInt8 = 0, sid: UInt8 = 0xFF, txPower: UInt8 = 0x7F
    var periodic: UInt16 = 0, directType: UInt8 = 0, direct: [UInt8] = [0, 0, 0, 0, 0, 0]

    func legacyBytes() -> [UInt8] {
        [UInt8(eventType), addressType] + address + [UInt8(data.count)] + data + [rssi]
    }

    func extendedBytes() -> [UInt8] {
        var b: [UInt8] = [UInt8(eventType & 0xFF), UInt8(eventType >> 8), addressType] + address
        b += [primaryPHY, secondaryPHY, sid, txPower, rssi, UInt8(periodic & 0xFF), UInt8(periodic >> 8), directType]
        b += direct + [UInt8(data.count)] + data
        return b
    }

    var deviceAddress: DeviceAddress {
        DeviceAddress(address[5], address[4], address[3], address[2], address[1], address[0])
    }
}

/// An LE Meta event packet (with H4 indicator) carrying `reports`.
func advertisingEvent(_ reports: [ReportModel], extended: Bool = false) -> [UInt8] {
    var params: [UInt8] = [extended ? 0x0D : 0x02, UInt8(reports.count)]
    for r in reports { params += extended ? r.extendedBytes() : r.legacyBytes() }
    return [0x04, 0x3E, UInt8(params.count)] + params
}

/// Flags + Manufacturer Specific Data, encoded by hand.
func msd(company: UInt16, _ payload: [UInt8]) -> [UInt8] {
    [0x02, 0x01, 0x06, UInt8(3 + payload.count), 0xFF, UInt8(company & 0xFF), UInt8(company >> 8)] + payload
}

func commandComplete(_ opcode: UInt16, _ returnParameters: [UInt8]) -> [UInt8] {
    [0x04, 0x0E, UInt8(3 + returnParameters.count), 0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8)] + returnParameters
}

/// A scripted controller behind an `HCIChannel`: answers every command with Command Complete
/// (status from `statusFor`, Read BD_ADDR with `bdaddr`), records what was written, and lets
/// tests inject events.
final class FakeController: HCIChannel {
    struct State {
        var written: [[UInt8]] = []
        var inbox: [[UInt8]] = []
        var closed = false
        var bdaddr: [UInt8] = [0x06, 0x05, 0x04, 0x03, 0x02, 0x01]   // 01:02:03:04:05:06
        var silent: Set<UInt16> = []                                 // opcodes never answered
        /// LE features (LE Read Local Supported Features); bit 12 makes the backends use extended commands.
        var leFeatures: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0]
        /// LE Read Maximum Advertising Data Length.
        var maximumAdvertisingDataLength: UInt16 = 1650
        var statusFor: @Sendable (UInt16, [UInt8]) -> UInt8 = { _, _ in 0 }
        /// Whether `read` was ever called from inside a Swift task (i.e. on the cooperative pool).
        var readInsideTask = false
        var reads = 0
    }
    let state = Mutex(State())

    func write(_ packet: [UInt8]) throws(HCIError) {
        let closed = state.withLock { s -> Bool in
            if s.closed { return true }
            s.written.append(packet)
            guard packet.count >= 4, packet[0] == 0x01 else { return false }
            let opcode = UInt16(packet[1]) | UInt16(packet[2]) << 8
            if s.silent.contains(opcode) { return false }
            let status = s.statusFor(opcode, Array(packet.dropFirst(4)))
            var ret: [UInt8] = [status]
            if status == 0 {
                switch opcode {
                case 0x1009: ret += s.bdaddr
                case 0x2003: ret += s.leFeatures
                case 0x203A: ret += [UInt8(s.maximumAdvertisingDataLength & 0xFF), UInt8(s.maximumAdvertisingDataLength >> 8)]
                default: break
                }
            }
            s.inbox.append(commandComplete(opcode, ret))
            return false
        }
        if closed { throw .closed("fake closed") }
    }

    func read(timeoutMilliseconds: Int32) throws(HCIError) -> [UInt8]? {
        let inTask = withUnsafeCurrentTask { $0 != nil }
        state.withLock { $0.reads += 1; $0.readInsideTask = $0.readInsideTask || inTask }
        let deadline = ContinuousClock.now + .milliseconds(Int(timeoutMilliseconds))
        while true {
            let (packet, closed) = state.withLock { s -> ([UInt8]?, Bool) in
                if s.closed { return (nil, true) }
                return s.inbox.isEmpty ? (nil, false) : (s.inbox.removeFirst(), false)
            }
            if closed { throw .closed("fake closed") }
            if let packet { return packet }
            if ContinuousClock.now >= deadline { return nil }
            usleep(500)
        }
    }

    func close() { state.withLock { $0.closed = true } }

    func inject(_ packet: [UInt8]) { state.withLock { $0.inbox.append(packet) } }

    var written: [[UInt8]] { state.withLock { $0.written } }
    var commandOpcodes: [UInt16] { written.compactMap { $0.count >= 3 ? UInt16($0[1]) | UInt16($0[2]) << 8 : nil } }
    var isClosed: Bool { state.withLock { $0.closed } }
    /// The commands written after `index`, as packets.
    func written(after index: Int) -> [[UInt8]] { Array(written.dropFirst(index)) }
    /// Makes the controller announce LE Extended Advertising (LE features bit 12).
    func announceExtendedAdvertising(maximumDataLength: UInt16 = 1650) {
        state.withLock { $0.leFeatures[1] |= 0x10; $0.maximumAdvertisingDataLength = maximumDataLength }
    }

    /// Waits (polling) until `condition` holds, failing the test after `timeout`.
    func wait(_ what: String, timeout: Duration = .seconds(5), file: StaticString = #filePath, line: UInt = #line,
              until condition: (FakeController) -> Bool) async {
        let deadline = ContinuousClock.now + timeout
        while !condition(self) {
            if ContinuousClock.now >= deadline {
                XCTFail("timed out waiting for \(what); written: \(commandOpcodes.map { String($0, radix: 16) })",
                        file: file, line: line)
                return
            }
            try? await Task.sleep(for: .milliseconds(2))
        }
    }
}

/// A lock-protected value that escaping closures can share.
final class Locked<T: Sendable>: Sendable {
    private let mutex: Mutex<T>
    init(_ value: T) { mutex = Mutex(value) }
    func withLock<R: Sendable>(_ body: (inout sending T) -> sending R) -> R { mutex.withLock(body) }
}

/// A clock the test steps by hand, for `HCICentral.Options.clock`: each sleeper waits until `fire()`
/// moves the clock to its deadline (the oldest sleeper first), or until its task is cancelled (then
/// it throws, and counts the cancellation).
final class ManualTimer: Clock, Sendable {
    typealias Instant = ElapsedClock.Instant
    private struct State {
        var now = Duration.zero
        var waiters: [(id: Int, deadline: Duration, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextID = 0
        var cancelled = 0
        var periods: [Duration] = []
    }
    private let state = Mutex(State())

    var waiting: Int { state.withLock { $0.waiters.count } }
    var cancelled: Int { state.withLock { $0.cancelled } }
    /// How long each sleeper asked to wait, in order.
    var periods: [Duration] { state.withLock { $0.periods } }
    var now: Instant { Instant(offset: state.withLock { $0.now }) }
    var minimumResolution: Duration { .nanoseconds(1) }

    /// Moves the clock to the oldest sleeper's deadline (never back) and wakes it, if there is one.
    func fire() {
        let c = state.withLock { s -> CheckedContinuation<Void, any Error>? in
            guard !s.waiters.isEmpty else { return nil }
            let w = s.waiters.removeFirst()
            s.now = max(s.now, w.deadline)
            return w.continuation
        }
        c?.resume()
    }

    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = self.state.withLock { s in defer { s.nextID += 1 }; return s.nextID }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let resumeNow = self.state.withLock { s -> Bool in
                    if Task.isCancelled { s.cancelled += 1; return true }
                    s.periods.append(deadline.offset - s.now)
                    s.waiters.append((id, deadline.offset, c))
                    return false
                }
                if resumeNow { c.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let c = self.state.withLock { s -> CheckedContinuation<Void, any Error>? in
                guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                s.cancelled += 1
                return s.waiters.remove(at: i).continuation
            }
            c?.resume(throwing: CancellationError())
        }
    }
}

/// The HCI central's extractor for one company, with a reassembler of its own: pieces of extended data
/// are joined within `packet` only.
func extract(packet: [UInt8], companyID: UInt16, timestamp: RadioInstant,
             into out: inout [AdvertisementReport]) throws(HCIParseError) -> ExtractionCounts {
    var reassembler = ExtendedReportReassembler()
    return try AdvertisementExtractor.extract(packet: packet, companyIDs: [companyID], timestamp: timestamp,
                                              reassembler: &reassembler, into: &out)
}
