import ClickerTransport
import DBus

/// The signal path: decoded BlueZ signals applied to the mirror and turned into advertisement reports.
extension CentralEngine {
    static func applyToMirror(_ sig: BlueZSignal, _ mirror: inout ObjectMirror) {
        switch sig {
        case .advert: break
        case .propertiesChanged(let path, let iface, let changed, let invalidated, _):
            mirror.propertiesChanged(path, iface, changed, invalidated)
        case .interfacesAdded(let path, let ifaces, _):
            mirror.interfacesAdded(path, ifaces)
        case .interfacesRemoved(let path, let names):
            mirror.interfacesRemoved(path, names)
        }
    }

    /// Handles one batch of decoded signals (called for every burst read from the bus).
    func handle(_ batch: [BlueZSignal]) {
        var controls: [Control] = []
        // GATT reads parked on the objects a signal touched, resumed after the lock is released.
        var woken: [CheckedContinuation<Void, Never>] = []
        // Reports are yielded after the lock is released, in one tight loop per batch, so a waiting
        // consumer is woken about once per batch rather than once per report.
        var out: [(AdvertisementReport, AsyncThrowingStream<AdvertisementReport, any Error>.Continuation)] = []
        out.reserveCapacity(batch.count)
        state.withLock { s in
            for sig in batch {
                switch sig {
                case .advert(let a):
                    deliver(a, &s, &out)
                case .propertiesChanged(let path, let iface, let changed, let invalidated, let advert):
                    if s.acquiring { s.pending.append(sig) }
                    s.mirror.propertiesChanged(path, iface, changed, invalidated)
                    if iface == BlueZ.adapter, path == s.adapterPath, case .boolean(let on)? = changed["Powered"]?.unwrapped {
                        controls.append(.powered(on))
                    }
                    if !s.waiters.isEmpty { woken += s.takeWaiters(at: path) }
                    if let advert { deliver(advert, &s, &out) }
                case .interfacesAdded(let path, let ifaces, let advert):
                    if s.acquiring { s.pending.append(sig) }
                    s.mirror.interfacesAdded(path, ifaces)
                    if let dev = ifaces[BlueZ.device], s.discovering {
                        let paired = dev["Paired"]?.unwrapped == .boolean(true)
                        let connected = dev["Connected"]?.unwrapped == .boolean(true)
                        if !paired && !connected { s.caused[path] = RadioInstant.now() }
                    }
                    if ifaces[BlueZ.adapter] != nil { controls.append(.adapterAdded) }
                    if !s.waiters.isEmpty { woken += s.takeWaiters(at: path) }
                    if let advert { deliver(advert, &s, &out) }
                case .interfacesRemoved(let path, let names):
                    if s.acquiring { s.pending.append(sig) }
                    s.mirror.interfacesRemoved(path, names)
                    if names.contains(BlueZ.adapter), path == s.adapterPath {
                        s.mirror.removeSubtree(path)
                        controls.append(.adapterRemoved)
                    }
                    if names.contains(BlueZ.device) {
                        s.caused[path] = nil
                        if let a = DevicePath.address(of: path.rawValue) { s.heard[a] = nil }
                    }
                    if !s.waiters.isEmpty { woken += s.takeWaiters(at: path) }
                }
            }
        }
        for (report, continuation) in out { continuation.yield(report) }
        for c in woken { c.resume() }
        if !controls.isEmpty {
            let cont = state.withLock { $0.control }
            for c in controls { cont?.yield(c) }
        }
    }

    @inline(__always)
    func deliver(_ a: Advert, _ s: inout State,
                 _ out: inout [(AdvertisementReport, AsyncThrowingStream<AdvertisementReport, any Error>.Continuation)]) {
        var rssi = a.rssi
        if let i = s.heard.index(forKey: a.address) {
            if let r = rssi { s.heard.values[i].rssi = r } else { rssi = s.heard.values[i].rssi }
            s.heard.values[i].lastSeen = a.timestamp
        } else {
            s.heard[a.address] = Heard(rssi: rssi, lastSeen: a.timestamp)
        }
        guard a.data != nil else { return }
        let rssi8 = rssi.map { Int8(clamping: $0) }
        for sub in s.subscriberList {
            guard let data = a.manufacturerData(sub.company) else { continue }
            out.append((AdvertisementReport(address: a.address, rssi: rssi8, companyID: sub.company, data: data,
                                            timestamp: a.timestamp), sub.continuation))
            s.stats.reports += 1
        }
    }
}
