import ClickerTransport
import DBus
import Synchronization

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
        // Reports are collected per subscriber and yielded after the lock is released, in one tight loop
        // per subscriber, so a waiting consumer is woken about once per batch rather than once per report.
        var out = ReportBatch()
        state.withLock { s in
            out.start(s.subscriberList, capacity: batch.count)
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
                        if !paired && !connected { s.caused[path] = options.clock.now }
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
            s.stats.reports += out.count
        }
        let dropped = out.yieldAll()
        if dropped > 0 { state.withLock { $0.stats.droppedReports += dropped } }
        for c in woken { c.resume() }
        if !controls.isEmpty {
            let cont = state.withLock { $0.control }
            for c in controls { cont?.yield(c) }
        }
    }

    @inline(__always)
    func deliver(_ a: Advert, _ s: inout State, _ out: inout ReportBatch) {
        var rssi = a.rssi
        if let i = s.heard.index(forKey: a.address) {
            if let r = rssi { s.heard.values[i].rssi = r } else { rssi = s.heard.values[i].rssi }
            s.heard.values[i].lastSeen = a.timestamp
        } else {
            s.heard[a.address] = Heard(rssi: rssi, lastSeen: a.timestamp)
        }
        guard a.data != nil else { return }
        let rssi8 = rssi.map { Int8(clamping: $0) }
        for i in out.companies.indices {
            let company = out.companies[i]
            guard let data = a.manufacturerData(company) else { continue }
            out.reports[i].append(AdvertisementReport(address: a.address, rssi: rssi8, companyID: company, data: data,
                                                      timestamp: a.timestamp))
        }
    }
}

/// The reports of one batch, per subscriber: built under the lock, handed over after it.
struct ReportBatch {
    var companies: [UInt16] = []
    var sinks: [CentralEngine.ReportSink] = []
    var reports: [[AdvertisementReport]] = []

    mutating func start(_ subscribers: [CentralEngine.Subscriber], capacity: Int) {
        companies = subscribers.map(\.company)
        sinks = subscribers.map(\.sink)
        reports = subscribers.map { _ in
            var r: [AdvertisementReport] = []
            r.reserveCapacity(capacity)
            return r
        }
    }

    var count: Int { reports.reduce(0) { $0 + $1.count } }

    /// Hands every subscriber its reports, in order: a queue takes the whole batch at once, a stream
    /// one report at a time. Returns the reports dropped for consumers too far behind.
    mutating func yieldAll() -> Int {
        var dropped = 0
        for i in sinks.indices {
            guard !reports[i].isEmpty else { continue }
            switch sinks[i] {
            case .queue(let q):
                let batch = reports[i]
                reports[i] = []  // the queue takes over the storage without a copy
                dropped += q.append(contentsOf: batch)
            case .stream(let c):
                for report in reports[i] {
                    if case .dropped = c.yield(report) { dropped += 1 }
                }
            }
        }
        return dropped
    }
}

/// The signal batches of one bus connection, handed to ``CentralEngine/handle(_:)`` on the signal
/// reader's thread as they are read. As a stream consumed by a task would: the batches read before the
/// central follows them (``open()``) are kept and handled then, in order; the end of the connection
/// reaches the control loop after the last batch; nothing is handled once the central is done with the
/// connection (``close()``).
/// `handle` is short and never blocks or waits for the bus, so the reader's thread can run it.
final class SignalGate: Sendable {
    private enum Phase {
        /// Not yet followed: the batches kept, and whether (and why) the reader has ended.
        case waiting([[BlueZSignal]], ended: Ended?)
        case open
        case closed
    }

    private let engine: CentralEngine
    private let control: AsyncStream<CentralEngine.Control>.Continuation
    private struct Ended { var why: String? }
    private let phase = Mutex(Phase.waiting([], ended: nil))

    init(engine: CentralEngine, control: AsyncStream<CentralEngine.Control>.Continuation) {
        self.engine = engine
        self.control = control
    }

    /// A batch read (the reader's thread).
    func deliver(_ batch: [BlueZSignal]) {
        phase.withLock { p in
            switch p {
            case .open:
                engine.handle(batch)
            case .waiting(let kept, let ended):
                p = .waiting(kept + [batch], ended: ended)
            case .closed:
                break
            }
        }
    }

    /// The reader ended after its last batch (its thread), with why when it was not closed by us.
    func finish(_ error: DBusError?) {
        let why = error.map { "signal reader: \($0)" }
        let now = phase.withLock { p -> Bool in
            switch p {
            case .open: return true
            case .waiting(let kept, _): p = .waiting(kept, ended: Ended(why: why)); return false
            case .closed: return false
            }
        }
        if now { control.yield(.connectionClosed(why)) }
    }

    /// The central follows the signals: the batches kept are handled, in order.
    func open() {
        let ended = phase.withLock { p -> Ended? in
            guard case .waiting(let kept, let ended) = p else { return nil }
            for batch in kept { engine.handle(batch) }
            p = .open
            return ended
        }
        if let ended { control.yield(.connectionClosed(ended.why)) }
    }

    /// The central is done with the connection: no batch is handled after this returns.
    func close() { phase.withLock { $0 = .closed } }
}
