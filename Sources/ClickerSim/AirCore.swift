#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerTransport

/// The discrete-event simulator. Not thread-safe: `SimulatedAir` keeps it behind a mutex.
final class AirCore {
    let config: AirConfiguration
    var rng: Xoshiro256StarStar
    private(set) var now: UInt64
    var queue = EventQueue<Event>()
    /// The centrals' controllers: one per receiver of the hall, or one (AirStation.swift).
    let stations: [Station]
    /// With a hall: the seat each device takes, by device index (`LectureHall.seatOrder`), and the
    /// power of each link computed so far (`linkPower`).
    let seats: [Int]
    var linkCache: [UInt64: Double] = [:]
    let gap: UInt64
    let maxDelay: UInt64

    var devices: [Device] = []
    var byAddress: [DeviceAddress: Int] = [:]
    var active: [[Transmission]] = [[], [], []]  // channels 37, 38, 39

    var nextID: UInt64 = 1

    var requests: [UInt64: ReadRequest] = [:]
    var cancelledEarly: Set<UInt64> = []

    var stats = AirStatistics()
    var outputs: [Output] = []

    /// Indices of the devices listening, ascending.
    var listeningDevices: [Int] = []
    /// Indices of the attackers' radios, ascending (AirAttacker.swift).
    var attackers: [Int] = []

    init(config: AirConfiguration, start: UInt64) {
        self.config = config
        rng = Xoshiro256StarStar(seed: config.seed)
        now = start
        stations = Self.stations(config, start: start)
        seats = config.hall?.seatOrder(seed: config.seed) ?? []
        gap = config.interChannelGap.clampedNanoseconds
        maxDelay = config.maxAdvertisingDelay.clampedNanoseconds
    }

    func makeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    func takeOutputs() -> [Output] {
        defer { outputs.removeAll(keepingCapacity: true) }
        return outputs
    }

    // MARK: Running

    /// Processes events up to and including `time`, at most `maxEvents` of them, and with
    /// `stopAtOutput` none after the first that gives something to deliver (its clock stands there).
    /// Returns true when every event up to `time` has run (the clock then stands at `time`).
    func run(until time: UInt64, maxEvents: Int = .max, stopAtOutput: Bool = false) -> Bool {
        var n = 0
        let delivered = outputs.count
        while let next = queue.nextTime, next <= time {
            if n >= maxEvents || (stopAtOutput && outputs.count > delivered) { return false }
            guard let entry = queue.pop() else { break }
            now = Swift.max(now, entry.time)
            handle(entry.payload)
            n += 1
        }
        now = Swift.max(now, time)
        return true
    }

    func schedule(_ event: Event, at time: UInt64) {
        queue.push(event, at: Swift.max(time, now))
    }

    private func handle(_ event: Event) {
        switch event {
        case .advertisingEvent(let d, let g): advertisingEvent(device: d, generation: g)
        case .pduStart(let d, let g, let ch, let pdu):
            let dev = devices[d]
            guard dev.generation == g, dev.present else { return }
            startPDU(device: dev, channel: ch, pdu: pdu)
        case .pduEnd(let tx): endPDU(tx)
        case .script(let action): action(SimulationContext(core: self))
        case .connectionComplete(let id): completeConnection(id)
        case .readTimeout(let id):
            if let r = requests[id] {
                finish(r, .failure(TransportError.timeout("reading \(r.key.characteristic) from \(devices[r.device].address)")))
            }
        case .broadcastEvent(let k, let g): broadcastEvent(stations[k], generation: g)
        case .broadcastPDUStart(let k, let g, let ch, let pdu):
            guard g == stations[k].broadcastGeneration, stations[k].broadcast != nil else { return }
            startBroadcastPDU(stations[k], channel: ch, pdu: pdu)
        case .broadcastAuxiliaryEnd(let g, let aux):
            guard g == stations[aux.station].broadcastGeneration else { return }
            endBroadcastAuxiliary(aux)
        }
    }

    // MARK: Advertising physics

    private func advertisingEvent(device d: Int, generation g: UInt64) {
        let dev = devices[d]
        guard dev.present, dev.generation == g, let pdu = dev.advertising else { return }
        let paused = dev.connections > 0 && config.connections.pauseAdvertisingWhileConnected
        if !paused {
            stats.advertisingEvents += 1
            stats.pdusTransmitted += 3
            dev.lastEventStart = now
            dev.lastEventAirTime = pdu.airTime
            // While the central broadcasts to listeners, every PDU may destroy a broadcast PDU one of them
            // listens to: all go on air. Otherwise only those a scanner of the central may hear matter.
            // So do they all while an attacker's radio is in the air: it hears every one, and each of its
            // own may destroy another listener's.
            let everyPDU = (stations.contains { $0.broadcast != nil } && !listeningDevices.isEmpty) || !attackers.isEmpty
            var t = now
            for ch: UInt8 in 37...39 {
                let end = t + pdu.airTime
                if everyPDU || stations.contains(where: { $0.schedules.contains { $0.mayHear(channel: ch, start: t, end: end) } }) {
                    if t == now {
                        startPDU(device: dev, channel: ch, pdu: pdu)
                    } else {
                        schedule(.pduStart(device: d, generation: g, channel: ch, pdu: pdu), at: t)
                    }
                }
                t = end + gap
            }
        }
        schedule(.advertisingEvent(device: d, generation: g), at: now.adding(pdu.interval).adding(rng.upTo(maxDelay)))
    }

    private func startPDU(device dev: Device, channel: UInt8, pdu: PDUSnapshot) {
        startTransmission(Transmission(device: dev.index, channel: channel, start: now, rssi: dev.rssi, pdu: pdu))
    }

    /// Puts `tx` on air: it and every PDU already on its channel now overlap.
    func startTransmission(_ tx: Transmission) {
        let c = Int(tx.channel) - 37
        let power = milliwatts(tx.rssi)
        for other in active[c] {
            other.interference += power
            other.overlaps += 1
            tx.interference += milliwatts(other.rssi)
            tx.overlaps += 1
            if config.hall != nil {
                other.overlappers.append(tx.device)
                tx.overlappers.append(other.device)
            }
        }
        active[c].append(tx)
        schedule(.pduEnd(tx), at: tx.end)
    }

    func milliwatts(_ dBm: Double) -> Double { pow(10, dBm / 10) }

    private func endPDU(_ tx: Transmission) {
        let c = Int(tx.channel) - 37
        if let i = active[c].firstIndex(where: { $0 === tx }) { active[c].remove(at: i) }
        if tx.isBroadcast { return endBroadcastPDU(tx) }
        let dev = devices[tx.device]
        for station in stations { endPDU(tx, of: dev, at: station) }
        if !attackers.isEmpty { endPDUAtListeners(tx) }
    }

    /// `tx` at each scanner of `station` that listened to it: heard, or why not.
    private func endPDU(_ tx: Transmission, of dev: Device, at station: Station) {
        guard let since = station.scanningSince, since <= tx.start else { return }
        let end = LectureHall.End.receiver(station.index)
        var heard = false
        for (k, schedule) in station.schedules.enumerated() where schedule.hears(channel: tx.channel, start: tx.start, end: tx.end) {
            stats.pdusListened += 1
            if k == config.broadcast.broadcastingScanner, station.isDeaf(from: tx.start, to: tx.end) {
                stats.missedWhileBroadcasting += 1
                continue
            }
            let rssi = power(of: tx, at: end)
            if rssi < config.sensitivity {
                stats.outOfRange += 1
                continue
            }
            if tx.overlaps > 0 {
                if let threshold = config.captureThreshold, rssi - 10 * log10(interference(on: tx, at: end)) >= threshold {
                    stats.captures += 1
                } else {
                    stats.collisions += 1
                    continue
                }
            }
            if config.lossProbability > 0, rng.unitInterval() < config.lossProbability {
                stats.randomLosses += 1
                continue
            }
            stats.pdusReceived += 1
            heard = true
            deliverReport(tx, rssi: rssi, address: dev.address, to: station)
        }
        if heard && tx.pdu.connectable { connectIfWanted(dev, at: station) }
    }

    private func deliverReport(_ tx: Transmission, rssi received: Double, address: DeviceAddress, to station: Station) {
        guard !station.reportSubscribers.isEmpty else { return }
        let noise = config.rssiNoise > 0 ? (rng.unitInterval() * 2 - 1) * config.rssiNoise : 0
        let rssi = Int8(sanitizedRSSI((received + noise).rounded()))
        let report = AdvertisementReport(address: address, rssi: rssi, companyID: tx.pdu.companyID,
                                         data: tx.pdu.data, timestamp: RadioInstant(nanoseconds: tx.end))
        for key in station.reportSubscribers.keys.sorted() {
            guard let sub = station.reportSubscribers[key], sub.companyID == tx.pdu.companyID else { continue }
            outputs.append(.report(sub.continuation, report))
            stats.reportsDelivered += 1
        }
    }

    // MARK: Devices

    func addDevice(address: DeviceAddress?, rssi: Double?) -> Device {
        if let address, let i = byAddress[address] {
            let dev = devices[i]
            if !dev.present {
                dev.present = true
                if let rssi { dev.rssi = sanitizedRSSI(rssi) }
            }
            return dev
        }
        let index = devices.count
        let addr = address ?? DeviceAddress(rawValue: 0xC0_00_00_00_00_00 | UInt64(index + 1))
        let r = sanitizedRSSI(rssi ?? {
            let range = config.defaultRSSIRange
            return range.lowerBound + rng.unitInterval() * (range.upperBound - range.lowerBound)
        }())
        let dev = Device(index: index, address: addr, rssi: r)
        devices.append(dev)
        byAddress[addr] = index
        return dev
    }

    func device(_ address: DeviceAddress) -> Device? {
        byAddress[address].map { devices[$0] }
    }

    /// Starts or replaces advertising. Throws when legacy advertising cannot carry the payload.
    func advertise(_ dev: Device, _ payload: AdvertisingPayload) throws {
        let ad = LegacyAdvertising.advertisingDataLength(manufacturerDataLength: payload.data.count,
                                                        connectable: payload.connectable)
        guard ad <= LegacyAdvertising.maxAdvertisingDataLength else {
            throw TransportError.unsupported(
                "\(payload.data.count) bytes of manufacturer data need \(ad) bytes of advertising data; legacy advertising carries \(LegacyAdvertising.maxAdvertisingDataLength)")
        }
        let range = LegacyAdvertising.intervalRange
        let clamped = Swift.min(Swift.max(payload.interval, range.lowerBound), range.upperBound)
        dev.note = clamped == payload.interval ? nil
            : "advertising interval \(payload.interval) outside \(range.lowerBound)...\(range.upperBound); using \(clamped)"
        let wasAdvertising = dev.present && dev.advertising != nil
        dev.present = true
        dev.advertising = PDUSnapshot(payload, interval: clamped.clampedNanoseconds)
        if !wasAdvertising {
            dev.generation += 1
            let start: UInt64
            switch config.firstEventPhase {
            case .immediate: start = now.adding(rng.upTo(maxDelay))
            case .randomWithinInterval: start = now.adding(rng.upTo(clamped.clampedNanoseconds.adding(maxDelay)))
            }
            schedule(.advertisingEvent(device: dev.index, generation: dev.generation), at: start)
        }
        publishStatus(dev)
    }

    func stopAdvertising(_ dev: Device) {
        guard dev.advertising != nil else { return }
        dev.advertising = nil
        dev.generation += 1
        publishStatus(dev)
    }

    /// The device leaves the hall: advertising stops, GATT disappears, its connections fail.
    func remove(_ dev: Device) {
        dev.advertising = nil
        dev.generation += 1
        dev.gatt = [:]
        dev.present = false
        stopAllListening(dev)
        for r in requests.values.sorted(by: { $0.id < $1.id }) where r.device == dev.index {
            finish(r, .failure(TransportError.notConnected(dev.address)))
        }
        publishStatus(dev)
    }

    func publishStatus(_ dev: Device) {
        let s = dev.status
        for key in dev.statusSubscribers.keys.sorted() {
            if let c = dev.statusSubscribers[key] { outputs.append(.status(c, s)) }
        }
    }

    // MARK: Scanning

    func scanning(_ station: Station) -> Bool {
        !station.reportSubscribers.isEmpty
            || requests.values.contains { $0.station == station.index && $0.state == .initiating }
    }

    func centralStatus(_ station: Station) -> RadioStatus {
        let adapter = station.placement.map { "simulated air (\($0))" } ?? "simulated air"
        return RadioStatus(adapter: adapter, state: station.scanningSince == nil ? .stopped : .scanning,
                           lastDiscoveryRestart: station.scanningSince.map { RadioInstant(nanoseconds: $0) },
                           lastError: station.broadcastNote)
    }

    /// Starts or stops the station's scanners to match demand; tells status subscribers.
    func updateScanning(_ station: Station) {
        let want = scanning(station)
        guard want != (station.scanningSince != nil) else { return }
        station.scanningSince = want ? now : nil
        publishCentralStatus(station)
    }

    func publishCentralStatus(_ station: Station) {
        let s = centralStatus(station)
        for key in station.statusSubscribers.keys.sorted() {
            if let c = station.statusSubscribers[key] { outputs.append(.status(c, s)) }
        }
    }

    func finishReportStreams() {
        for station in stations {
            for key in station.reportSubscribers.keys.sorted() {
                if let sub = station.reportSubscribers[key] { outputs.append(.finishReports(sub.continuation)) }
            }
            station.reportSubscribers = [:]
            updateScanning(station)
        }
        for d in listeningDevices { stopAllListening(devices[d]) }
    }
}
