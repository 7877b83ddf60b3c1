import ClickerTransport

// GATT reads: a read waits for a connection slot of its station, then for the device's next
// connectable PDU one of that station's scanners hears, then for the exchange; the device stops
// advertising while connected.

extension AirCore {
    func beginRead(id: UInt64, at station: Station, address: DeviceAddress, key: GATTKey, timeout: UInt64,
                   continuation: CheckedContinuation<[UInt8], any Error>) {
        if cancelledEarly.remove(id) != nil {
            outputs.append(.read(continuation, .failure(CancellationError())))
            return
        }
        guard let dev = device(address), dev.present else {
            stats.readsFailed += 1
            outputs.append(.read(continuation, .failure(TransportError.notConnected(address))))
            return
        }
        let r = ReadRequest(id: id, device: dev.index, station: station.index, key: key, continuation: continuation)
        requests[id] = r
        station.queued.append(id)
        schedule(.readTimeout(request: id), at: now.adding(timeout))
        promote(station)
    }

    func cancelRead(id: UInt64) {
        if let r = requests[id] {
            finish(r, .failure(CancellationError()))
        } else {
            cancelledEarly.insert(id)
        }
    }

    func promote(_ station: Station) {
        while station.slotsInUse < Swift.max(1, config.connections.maxConcurrent), !station.queued.isEmpty {
            let id = station.queued.removeFirst()
            guard let r = requests[id], r.state == .queued else { continue }
            r.state = .initiating
            station.slotsInUse += 1
            stats.peakConnections = Swift.max(stats.peakConnections, station.slotsInUse)
        }
        updateScanning(station)
    }

    func connectIfWanted(_ dev: Device, at station: Station) {
        guard let r = requests.values.filter({ $0.device == dev.index && $0.station == station.index && $0.state == .initiating })
            .min(by: { $0.id < $1.id })
        else { return }
        r.state = .connected
        dev.connections += 1
        stats.connectionsEstablished += 1
        schedule(.connectionComplete(request: r.id), at: now.adding(config.connections.exchangeDuration.clampedNanoseconds))
        updateScanning(station)
    }

    func completeConnection(_ id: UInt64) {
        guard let r = requests[id], r.state == .connected else { return }
        let dev = devices[r.device]
        if let value = dev.gatt[r.key] {
            finish(r, .success(value))
        } else {
            finish(r, .failure(TransportError.characteristicNotFound(r.key.characteristic)))
        }
    }

    /// Ends a read: frees its connection slot, resumes its caller (outside the lock).
    func finish(_ r: ReadRequest, _ result: Result<[UInt8], any Error>) {
        requests[r.id] = nil
        let station = stations[r.station]
        switch r.state {
        case .queued: station.queued.removeAll { $0 == r.id }
        case .initiating: station.slotsInUse -= 1
        case .connected:
            station.slotsInUse -= 1
            devices[r.device].connections -= 1
        }
        if case .success = result { stats.readsSucceeded += 1 } else { stats.readsFailed += 1 }
        outputs.append(.read(r.continuation, result))
        promote(station)
    }
}
