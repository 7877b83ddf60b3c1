import ClickerTransport

/// One central's controllers on the air: a receiver of the hall (`LectureHall.receivers`), or the one
/// laptop of an air without a hall. Its scanners, the report streams they feed, its GATT connections
/// and its broadcast (the tally's beacon) with the times it is deaf because it transmits.
final class Station {
    let index: Int
    /// The receiver's place in the hall, for its status ("simulated air (front)"); nil without a hall.
    let placement: ReceiverPlacement?
    let schedules: [ScanSchedule]
    /// The address listeners report its broadcast under.
    let address: DeviceAddress

    var reportSubscribers: [UInt64: (companyID: UInt16, continuation: AsyncThrowingStream<AdvertisementReport, any Error>.Continuation)] = [:]
    var statusSubscribers: [UInt64: AsyncStream<RadioStatus>.Continuation] = [:]
    var scanningSince: UInt64?
    /// Its reads waiting for a connection slot, and the slots in use.
    var queued: [UInt64] = []
    var slotsInUse = 0

    /// Its broadcast, the broadcast's generation (bumped when it stops or starts), and the intervals in
    /// which its broadcasting controller is deaf because it transmits (recent ones only).
    var broadcast: BroadcastState?
    var broadcastGeneration: UInt64 = 0
    var deaf: [(start: UInt64, end: UInt64)] = []
    var broadcastNote: String?

    init(index: Int, placement: ReceiverPlacement?, schedules: [ScanSchedule], address: DeviceAddress) {
        self.index = index
        self.placement = placement
        self.schedules = schedules
        self.address = address
    }

    /// True when its broadcasting controller transmits at some point of [start, end).
    func isDeaf(from start: UInt64, to end: UInt64) -> Bool {
        deaf.contains { $0.start < end && start < $0.end }
    }
}

extension AirCore {
    /// The stations of `config`: one per receiver of its hall, or one.
    static func stations(_ config: AirConfiguration, start: UInt64) -> [Station] {
        let placements: [ReceiverPlacement?] = config.hall.map { $0.receivers.map { Optional($0) } } ?? [nil]
        return placements.enumerated().map { k, placement in
            Station(index: k, placement: placement, schedules: config.scanners.map { ScanSchedule($0, origin: start) },
                    address: address(ofReceiver: k, config))
        }
    }

    /// The address receiver `k` broadcasts under: the central's, with `k` in its fourth byte from the
    /// right (devices' default addresses count up in the low bytes, `addDevice`).
    static func address(ofReceiver k: Int, _ config: AirConfiguration) -> DeviceAddress {
        DeviceAddress(rawValue: config.broadcast.centralAddress.rawValue &+ UInt64(k) << 24)
    }

    /// Power (dBm) at which `end` receives `tx`. Without a hall: a device's own `rssi` (its one path
    /// loss, to the central, symmetric) at a listener, the transmitter's at a station.
    func power(of tx: Transmission, at end: LectureHall.End) -> Double {
        power(from: tx.device, centralRSSI: tx.rssi, at: end)
    }

    /// Power (dBm) at which `end` receives a PDU of `sender` (a device index or
    /// `Transmission.sender(station:)`) that a station without a hall receives at `centralRSSI`.
    func power(from sender: Int, centralRSSI: Double, at end: LectureHall.End) -> Double {
        guard let hall = config.hall else {
            switch end {
            case .receiver: return centralRSSI
            case .device(let d): return devices[d].rssi
            }
        }
        return linkPower(from: sender, to: end, hall)
    }

    /// Sum of the power (mW) at `end` of the PDUs that overlapped `tx`. Without a hall: as the central
    /// receives them, wherever `end` is.
    func interference(on tx: Transmission, at end: LectureHall.End) -> Double {
        guard let hall = config.hall else { return tx.interference }
        return tx.overlappers.reduce(0) { $0 + milliwatts(linkPower(from: $1, to: end, hall)) }
    }

    /// A station's PDU at its own other controllers, next to its antenna, is the top of the RSSI scale.
    /// Each link is computed once (the model's arithmetic is the hall's hottest path); the cache is
    /// emptied past 2 million links, a full hall of 2,000 seats.
    private func linkPower(from sender: Int, to end: LectureHall.End, _ hall: LectureHall) -> Double {
        let from: LectureHall.End = sender >= 0 ? .device(sender) : .receiver(Transmission.station(of: sender))
        if from == end { return 20 }
        let (lo, hi) = from.key < end.key ? (from.key, end.key) : (end.key, from.key)
        let key = lo << 32 | hi
        if let p = linkCache[key] { return p }
        if linkCache.count >= 2_000_000 { linkCache.removeAll() }
        let p = hall.receivedPower(from, end, seats: seats, seed: config.seed)
        linkCache[key] = p
        return p
    }
}
