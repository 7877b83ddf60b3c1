#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerTransport

// What the simulator keeps of the air: PDUs, devices, reads, scheduled events, scan schedules.

/// Advertising state frozen at the start of an advertising event: changes take effect at the next event.
final class PDUSnapshot {
    let companyID: UInt16
    let data: [UInt8]
    let connectable: Bool
    /// Air time of one PDU, ns.
    let airTime: UInt64
    /// Advertising interval, ns (clamped to what BLE allows).
    let interval: UInt64
    /// For an extended broadcast's ADV_EXT_IND: the AUX_ADV_IND it points to.
    let auxiliary: AuxiliaryBroadcast?

    init(_ p: AdvertisingPayload, interval: UInt64) {
        companyID = p.companyID
        data = p.data
        connectable = p.connectable
        airTime = LegacyAdvertising.airTime(of: p).clampedNanoseconds
        self.interval = interval
        auxiliary = nil
    }

    /// One frame of the central's broadcast: a non-connectable PDU.
    init(broadcastFrame data: [UInt8], companyID: UInt16, interval: UInt64) {
        self.companyID = companyID
        self.data = data
        connectable = false
        airTime = LegacyAdvertising.airTime(advertisingDataLength: LegacyAdvertising.advertisingDataLength(
            manufacturerDataLength: data.count, connectable: false)).clampedNanoseconds
        self.interval = interval
        auxiliary = nil
    }

    /// One frame of an extended broadcast: the AUX_ADV_IND's content and airtime (`auxiliary` nil).
    init(auxiliaryFrame data: [UInt8], companyID: UInt16, interval: UInt64) {
        self.companyID = companyID
        self.data = data
        connectable = false
        airTime = ExtendedAdvertising.auxiliaryAirTime(manufacturerDataLength: data.count).clampedNanoseconds
        self.interval = interval
        auxiliary = nil
    }

    /// The ADV_EXT_IND of one extended broadcast event, pointing to `auxiliary`; it carries no data.
    init(indicationOf auxiliary: AuxiliaryBroadcast) {
        companyID = auxiliary.pdu.companyID
        data = []
        connectable = false
        airTime = ExtendedAdvertising.indicationAirTime.clampedNanoseconds
        interval = auxiliary.pdu.interval
        self.auxiliary = auxiliary
    }
}

/// The AUX_ADV_IND of one extended broadcast event: when it is on air (its secondary channel is
/// nobody else's), and the listeners that heard one of the event's ADV_EXT_IND clean.
final class AuxiliaryBroadcast {
    let pdu: PDUSnapshot
    let start: UInt64
    /// The station that sends it.
    let station: Int
    var end: UInt64 { start + pdu.airTime }
    var listeners: Set<Int> = []

    init(pdu: PDUSnapshot, start: UInt64, station: Int) {
        self.pdu = pdu
        self.start = start
        self.station = station
    }
}

/// The central's broadcast: its frames and where the rotation stands.
final class BroadcastState {
    let companyID: UInt16
    let frames: [PDUSnapshot]
    let interval: UInt64
    /// The frame the next advertising event sends.
    var next = 0
    /// When the frame at `next` first went out (with `BroadcastConfiguration.frameDwell`).
    var shownSince: UInt64?

    init(companyID: UInt16, frames: [PDUSnapshot], interval: UInt64) {
        self.companyID = companyID
        self.frames = frames
        self.interval = interval
    }
}

/// Where a listener's reports go: a stream in this process, or a callback (the socket air's peer).
enum ReportSink: Sendable {
    case stream(AsyncThrowingStream<AdvertisementReport, any Error>.Continuation)
    /// Called with each report, then once with nil when listening ends.
    case callback(@Sendable (AdvertisementReport?) -> Void)

    func deliver(_ report: AdvertisementReport) {
        switch self {
        case .stream(let c): c.yield(report)
        case .callback(let f): f(report)
        }
    }

    func finish() {
        switch self {
        case .stream(let c): c.finish()
        case .callback(let f): f(nil)
        }
    }
}

/// One listening stream of a peripheral.
struct Listener {
    var companyID: UInt16
    var sink: ReportSink
}

/// One PDU in the air on one channel.
final class Transmission {
    /// Index of the sending device, or `Transmission.sender(station:)` for a station's broadcast.
    let device: Int
    let channel: UInt8
    let start: UInt64
    let end: UInt64
    let rssi: Double
    let pdu: PDUSnapshot
    /// Sum of the power (mW) of every PDU that overlapped this one.
    var interference: Double = 0
    var overlaps = 0
    /// With a hall: the senders of the PDUs that overlapped this one, so that each receiver sums their
    /// power as it receives them.
    var overlappers: [Int] = []

    /// The sender of station `k`'s broadcast PDUs.
    static func sender(station k: Int) -> Int { -1 - k }
    static func station(of sender: Int) -> Int { -1 - sender }
    var isBroadcast: Bool { device < 0 }

    init(device: Int, channel: UInt8, start: UInt64, rssi: Double, pdu: PDUSnapshot) {
        self.device = device
        self.channel = channel
        self.start = start
        self.end = start + pdu.airTime
        self.rssi = rssi
        self.pdu = pdu
    }
}

struct GATTKey: Hashable {
    var service: UUID128
    var characteristic: UUID128
}

final class Device {
    let index: Int
    let address: DeviceAddress
    var rssi: Double
    var present = true
    var advertising: PDUSnapshot?
    /// Bumped whenever advertising stops or restarts: scheduled events of an older generation are void.
    var generation: UInt64 = 0
    var connections = 0
    var gatt: [GATTKey: [UInt8]] = [:]
    var note: String?
    var statusSubscribers: [UInt64: AsyncStream<RadioStatus>.Continuation] = [:]
    /// Start and per-PDU airtime of its latest advertising event that went on air (the radio is deaf
    /// during its own PDUs).
    var lastEventStart: UInt64?
    var lastEventAirTime: UInt64 = 0
    /// Listening streams, and the receiver's schedule while there is any.
    var listeners: [UInt64: Listener] = [:]
    /// Reports handed to its listening streams, one per stream (``SimulatedPeripheral/reportsHeard``).
    var reportsListened = 0
    var listenSchedule: ScanSchedule?
    var listenNote: String?
    /// An attacker's radio (AirAttacker.swift): every listener hears its advertisements, and it hears
    /// every device's besides the central's broadcast.
    var attacker = false

    init(index: Int, address: DeviceAddress, rssi: Double) {
        self.index = index
        self.address = address
        self.rssi = rssi
    }

    var status: RadioStatus {
        RadioStatus(adapter: "simulated air (\(address))",
                    state: present && advertising != nil ? .advertising : (present && listenSchedule != nil ? .scanning : .stopped),
                    lastError: note ?? listenNote)
    }
}

final class ReadRequest {
    enum State { case queued, initiating, connected }
    let id: UInt64
    let device: Int
    /// The station whose controller connects.
    let station: Int
    let key: GATTKey
    let continuation: CheckedContinuation<[UInt8], any Error>
    var state = State.queued

    init(id: UInt64, device: Int, station: Int, key: GATTKey, continuation: CheckedContinuation<[UInt8], any Error>) {
        self.id = id
        self.device = device
        self.station = station
        self.key = key
        self.continuation = continuation
    }
}

/// Work for outside the lock: resuming continuations may run arbitrary code.
enum Output: Sendable {
    case report(AsyncThrowingStream<AdvertisementReport, any Error>.Continuation, AdvertisementReport)
    case finishReports(AsyncThrowingStream<AdvertisementReport, any Error>.Continuation)
    case read(CheckedContinuation<[UInt8], any Error>, Result<[UInt8], any Error>)
    case status(AsyncStream<RadioStatus>.Continuation, RadioStatus)
    case finishStatus(AsyncStream<RadioStatus>.Continuation)
    case listened(ReportSink, AdvertisementReport)
    case finishListening(ReportSink)

    func deliver() {
        switch self {
        case .report(let c, let r): c.yield(r)
        case .finishReports(let c): c.finish()
        case .read(let c, let result): c.resume(with: result)
        case .status(let c, let s): c.yield(s)
        case .finishStatus(let c): c.finish()
        case .listened(let sink, let r): sink.deliver(r)
        case .finishListening(let sink): sink.finish()
        }
    }
}

/// A script action run at a virtual instant, inside the simulator.
public typealias ScriptAction = @Sendable (SimulationContext) -> Void

enum Event {
    case advertisingEvent(device: Int, generation: UInt64)
    case pduStart(device: Int, generation: UInt64, channel: UInt8, pdu: PDUSnapshot)
    case pduEnd(Transmission)
    case script(ScriptAction)
    case connectionComplete(request: UInt64)
    case readTimeout(request: UInt64)
    case broadcastEvent(station: Int, generation: UInt64)
    case broadcastPDUStart(station: Int, generation: UInt64, channel: UInt8, pdu: PDUSnapshot)
    case broadcastAuxiliaryEnd(generation: UInt64, AuxiliaryBroadcast)
}

/// When one scanner listens on which channel.
struct ScanSchedule {
    let interval: UInt64
    let window: UInt64
    let channels: [UInt8]
    let first: Int
    let origin: UInt64

    init(_ c: ScannerConfiguration, origin: UInt64) {
        interval = Swift.max(1, c.interval.clampedNanoseconds)
        window = Swift.min(interval, c.window.clampedNanoseconds)
        channels = c.channels.isEmpty ? [37, 38, 39] : c.channels
        first = ((c.firstChannelIndex % channels.count) + channels.count) % channels.count
        self.origin = origin
    }

    func channel(inInterval k: UInt64) -> UInt8 {
        channels[(first + Int(k % UInt64(channels.count))) % channels.count]
    }

    /// True when the scanner listens on `channel` for the whole of [start, end).
    func hears(channel: UInt8, start: UInt64, end: UInt64) -> Bool {
        guard start >= origin, end > start else { return false }
        let s = start - origin, e = end - 1 - origin
        let k = s / interval
        return e / interval == k && e % interval < window && self.channel(inInterval: k) == channel
    }

    /// True when the scanner may listen on `channel` at some point of [start, end) (over-inclusive).
    func mayHear(channel: UInt8, start: UInt64, end: UInt64) -> Bool {
        guard end > origin else { return false }
        let s = start > origin ? start - origin : 0, e = end - 1 - origin
        return self.channel(inInterval: s / interval) == channel || self.channel(inInterval: e / interval) == channel
    }
}
