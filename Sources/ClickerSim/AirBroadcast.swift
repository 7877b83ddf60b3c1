#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerTransport

// The other direction: the central broadcasts (the tally's beacon), peripherals listen.
//
// The broadcast's PDUs share the channels with the peripherals' and collide with them like any
// other. The central's broadcasting controller is deaf while it transmits. A listener hears a
// broadcast PDU when its receiver sits on that PDU's channel, inside a scan window, for the PDU's
// whole airtime, while it is not transmitting itself, and when nothing destroyed the PDU.
//
// Power at a listener: without a hall the simulator knows one path loss per device, to the central,
// so a listener receives the broadcast at its own `rssi` (the link is symmetric) and counts each
// overlapping PDU at the power the central would receive it with. In a hall (PathLoss.swift) every
// link has its own loss: a listener hears each receiver's broadcast, and sums the overlapping PDUs,
// at the power that reaches its seat. Listeners hear only the central's broadcast, not
// each other's advertisements, except an attacker's radio (AirAttacker.swift), which hears every
// device's and whose advertisements every listener hears.

extension AirCore {
    // MARK: Broadcasting

    /// Starts or replaces `station`'s broadcast; a replacement takes effect at the next event, from its first frame.
    func startBroadcast(_ payload: BroadcastPayload, at station: Station) throws {
        guard !payload.frames.isEmpty else { throw TransportError.unsupported("a broadcast needs at least one frame") }
        let extended = config.broadcast.extended
        let limit = (extended ? BroadcastCapabilities.extended : .legacy).maxFrameLength
        if let long = payload.frames.firstIndex(where: { $0.count > limit }) {
            throw TransportError.unsupported(
                "broadcast frame \(long) has \(payload.frames[long].count) bytes; \(extended ? "extended" : "legacy") non-connectable advertising carries \(limit)")
        }
        let range = LegacyAdvertising.intervalRange
        let clamped = Swift.min(Swift.max(payload.interval, range.lowerBound), range.upperBound)
        let interval = clamped.clampedNanoseconds
        let frames = payload.frames.map {
            extended ? PDUSnapshot(auxiliaryFrame: $0, companyID: payload.companyID, interval: interval)
                : PDUSnapshot(broadcastFrame: $0, companyID: payload.companyID, interval: interval)
        }
        let wasBroadcasting = station.broadcast != nil, oldNote = station.broadcastNote
        station.broadcast = BroadcastState(companyID: payload.companyID, frames: frames, interval: interval)
        station.broadcastNote = clamped == payload.interval ? nil
            : "broadcast interval \(payload.interval) outside \(range.lowerBound)...\(range.upperBound); using \(clamped)"
        if !wasBroadcasting {
            station.broadcastGeneration += 1
            schedule(.broadcastEvent(station: station.index, generation: station.broadcastGeneration),
                     at: now.adding(rng.upTo(maxDelay)))
        }
        if station.broadcastNote != oldNote { publishCentralStatus(station) }
    }

    func stopBroadcast(at station: Station) {
        guard station.broadcast != nil else { return }
        station.broadcast = nil
        station.broadcastGeneration += 1
        // PDUs of the event in progress that have not started will not be sent: no deafness for them.
        station.deaf.removeAll { $0.start > now }
        if station.broadcastNote != nil {
            station.broadcastNote = nil
            publishCentralStatus(station)
        }
    }

    func broadcastEvent(_ station: Station, generation g: UInt64) {
        guard g == station.broadcastGeneration, let b = station.broadcast else { return }
        if let dwell = config.broadcast.frameDwell {
            // The host changes the frame: the same one until it held the air for the dwell.
            if let since = b.shownSince, now >= since + dwell.clampedNanoseconds {
                b.next = (b.next + 1) % b.frames.count
                b.shownSince = nil
            }
            if b.shownSince == nil { b.shownSince = now }
        }
        let frame = b.frames[b.next % b.frames.count]
        if config.broadcast.frameDwell == nil { b.next = (b.next + 1) % b.frames.count }
        stats.broadcastEvents += 1
        station.deaf.removeAll { $0.end.adding(3_000_000) < now }  // no event lasts 3 ms: older ones matter no more
        let channels = (config.broadcast.channels.isEmpty ? [37, 38, 39] : config.broadcast.channels).filter { (37...39).contains($0) }
        // Extended: the primary channels carry the short ADV_EXT_IND; the frame follows on a
        // secondary channel once the last of them has ended.
        var auxiliary: AuxiliaryBroadcast?
        if config.broadcast.extended, !channels.isEmpty {
            let indication = ExtendedAdvertising.indicationAirTime.clampedNanoseconds
            let lastEnd = now + UInt64(channels.count) * indication + UInt64(channels.count - 1) * gap
            auxiliary = AuxiliaryBroadcast(pdu: frame, start: lastEnd + ExtendedAdvertising.auxiliaryOffset.clampedNanoseconds,
                                           station: station.index)
        }
        let pdu = auxiliary.map { PDUSnapshot(indicationOf: $0) } ?? frame
        var t = now
        for ch in channels {
            stats.broadcastPDUs += 1
            if config.broadcast.deafness == .packets { station.deaf.append((t, t + pdu.airTime)) }
            if t == now {
                startBroadcastPDU(station, channel: ch, pdu: pdu)
            } else {
                schedule(.broadcastPDUStart(station: station.index, generation: g, channel: ch, pdu: pdu), at: t)
            }
            t = t + pdu.airTime + gap
        }
        var eventEnd = t - gap
        if let aux = auxiliary {
            if config.broadcast.deafness == .packets { station.deaf.append((aux.start, aux.end)) }
            schedule(.broadcastAuxiliaryEnd(generation: g, aux), at: aux.end)
            eventEnd = aux.end
        }
        if config.broadcast.deafness == .wholeEvent, t > now { station.deaf.append((now, eventEnd)) }
        schedule(.broadcastEvent(station: station.index, generation: g), at: now.adding(b.interval).adding(rng.upTo(maxDelay)))
    }

    func startBroadcastPDU(_ station: Station, channel: UInt8, pdu: PDUSnapshot) {
        // Without a hall its power matters only at the central's other controllers, next to its
        // antenna: the strongest signal the simulator knows, which no peripheral's PDU survives.
        startTransmission(Transmission(device: Transmission.sender(station: station.index), channel: channel,
                                       start: now, rssi: 20, pdu: pdu))  // the top of the RSSI scale
    }

    // MARK: Listening

    /// True when `dev` transmits one of its own PDUs at some point of [start, end).
    func transmits(_ dev: Device, from start: UInt64, to end: UInt64) -> Bool {
        guard let e0 = dev.lastEventStart else { return false }
        var s = e0
        for _ in 0..<3 {
            if s < end && start < s + dev.lastEventAirTime { return true }
            s = s + dev.lastEventAirTime + gap
        }
        return false
    }

    func endBroadcastPDU(_ tx: Transmission) {
        for d in listeningDevices {
            let dev = devices[d]
            guard hears(dev, tx) else { continue }
            if let aux = tx.pdu.auxiliary {
                // Heard the ADV_EXT_IND: the receiver follows its AuxPtr (endBroadcastAuxiliary).
                stats.broadcastIndicationsHeard += 1
                aux.listeners.insert(d)
                continue
            }
            deliverBroadcast(tx.pdu, from: stations[Transmission.station(of: tx.device)], to: dev, at: tx.end)
        }
    }

    /// Whether listening device `dev` receives `tx`: its receiver is on `tx`'s channel for its whole
    /// airtime, it is not transmitting, in range, and `tx` survived what overlapped it. The central's
    /// broadcast counts in the broadcast statistics; another device's PDU (an attacker's radio,
    /// AirAttacker.swift) in the attacker statistics.
    func hears(_ dev: Device, _ tx: Transmission) -> Bool {
        guard dev.present, let listen = dev.listenSchedule,
              listen.hears(channel: tx.channel, start: tx.start, end: tx.end),
              dev.listeners.values.contains(where: { $0.companyID == tx.pdu.companyID })
        else { return false }
        let central = tx.isBroadcast
        if central { stats.broadcastPDUsListened += 1 }
        if transmits(dev, from: tx.start, to: tx.end) {
            if central { stats.broadcastMissedWhileTransmitting += 1 }
            return false
        }
        let end = LectureHall.End.device(dev.index)
        let received = power(of: tx, at: end)
        if received < config.sensitivity {
            if central { stats.broadcastOutOfRange += 1 }
            return false
        }
        if tx.overlaps > 0 {
            // The interference sums the others' power (its own power is never added to itself).
            if let threshold = config.captureThreshold, received - 10 * log10(interference(on: tx, at: end)) >= threshold {
                if central { stats.broadcastCaptures += 1 }
            } else {
                if central { stats.broadcastCollisions += 1 } else { stats.attackerCollisions += 1 }
                return false
            }
        }
        if config.lossProbability > 0, rng.unitInterval() < config.lossProbability {
            if central { stats.broadcastRandomLosses += 1 }
            return false
        }
        return true
    }

    /// The AUX_ADV_IND of an extended event has ended: the listeners that heard one of its
    /// ADV_EXT_IND hear it unless they were transmitting meanwhile (its channel is nobody else's).
    func endBroadcastAuxiliary(_ aux: AuxiliaryBroadcast) {
        for d in aux.listeners.sorted() {
            let dev = devices[d]
            guard dev.present, dev.listenSchedule != nil else { continue }
            if transmits(dev, from: aux.start, to: aux.end) {
                stats.broadcastAuxiliaryMissedWhileTransmitting += 1
                continue
            }
            if config.lossProbability > 0, rng.unitInterval() < config.lossProbability {
                stats.broadcastAuxiliaryRandomLosses += 1
                continue
            }
            deliverBroadcast(aux.pdu, from: stations[aux.station], to: dev, at: aux.end)
        }
    }

    private func deliverBroadcast(_ pdu: PDUSnapshot, from station: Station, to dev: Device, at end: UInt64) {
        stats.broadcastPDUsHeard += 1
        let received = power(from: Transmission.sender(station: station.index), centralRSSI: 20, at: .device(dev.index))
        deliverToListener(pdu, from: station.address, rssi: received, to: dev, at: end)
    }

    /// One report of `pdu`, sent by `address` and received at `rssi` dBm, to each of `dev`'s listening
    /// streams of its company ID.
    func deliverToListener(_ pdu: PDUSnapshot, from address: DeviceAddress, rssi received: Double, to dev: Device, at end: UInt64) {
        let noise = config.rssiNoise > 0 ? (rng.unitInterval() * 2 - 1) * config.rssiNoise : 0
        let report = AdvertisementReport(address: address,
                                         rssi: Int8(sanitizedRSSI((received + noise).rounded())),
                                         companyID: pdu.companyID, data: pdu.data,
                                         timestamp: RadioInstant(nanoseconds: end))
        for key in dev.listeners.keys.sorted() {
            guard let l = dev.listeners[key], l.companyID == pdu.companyID else { continue }
            outputs.append(.listened(l.sink, report))
            stats.listenerReportsDelivered += 1
            dev.reportsListened += 1
        }
    }

    /// Adds a listening stream to `dev`; its receiver follows `dutyCycle` from now (restarting on the
    /// first listen channel).
    func listen(_ dev: Device, id: UInt64, companyID: UInt16, dutyCycle asked: ScanDutyCycle, sink: ReportSink) {
        let dutyCycle = config.broadcast.listenDutyCycle ?? asked
        let range = ScanDutyCycle.intervalRange
        let interval = Swift.min(Swift.max(dutyCycle.interval, range.lowerBound), range.upperBound)
        let window = Swift.min(Swift.max(dutyCycle.window, range.lowerBound), interval)
        dev.listenNote = interval == dutyCycle.interval && window == dutyCycle.window ? nil
            : "scan window/interval \(dutyCycle.window)/\(dutyCycle.interval) outside what BLE allows; using \(window)/\(interval)"
        let channels = config.broadcast.listenChannels.filter { (37...39).contains($0) }
        dev.listenSchedule = ScanSchedule(ScannerConfiguration(interval: interval, window: window,
                                                               channels: channels.isEmpty ? [37, 38, 39] : channels),
                                          origin: now)
        dev.listeners[id] = Listener(companyID: companyID, sink: sink)
        if !listeningDevices.contains(dev.index) {
            listeningDevices.append(dev.index)
            listeningDevices.sort()
        }
        publishStatus(dev)
    }

    /// Ends one listening stream (the consumer went away); the receiver stops with the last one.
    func stopListening(_ dev: Device, id: UInt64) {
        guard dev.listeners.removeValue(forKey: id) != nil else { return }
        if dev.listeners.isEmpty { quietReceiver(dev) }
    }

    /// Finishes every listening stream of `dev` and stops its receiver.
    func stopAllListening(_ dev: Device) {
        for key in dev.listeners.keys.sorted() {
            if let l = dev.listeners[key] { outputs.append(.finishListening(l.sink)) }
        }
        dev.listeners = [:]
        quietReceiver(dev)
    }

    private func quietReceiver(_ dev: Device) {
        guard dev.listenSchedule != nil else { return }
        dev.listenSchedule = nil
        dev.listenNote = nil
        listeningDevices.removeAll { $0 == dev.index }
        publishStatus(dev)
    }
}
