import ClickerTransport
import DBus
import Logging
import Synchronization

/// The central's state and lifecycle: subscribers, status, start and shutdown. The adapter session
/// (`CentralSession.swift`), discovery (`CentralDiscovery.swift`), the signal path
/// (`CentralSignalPath.swift`) and the GATT client (`CentralGATTReader.swift`) extend it.
final class CentralEngine: Sendable {
    let options: BlueZCentralOptions
    let logger: Logger
    let state: Mutex<State>
    /// The radio status shown by `status()`.
    let statusHub: RadioStatusBroadcaster
    let slots: AsyncSemaphore
    /// The signal readers' counters, across sessions (malformed signals dropped: `rejected`).
    let signalStats = DBusSubscriptionStats()

    enum Control: Sendable {
        /// The bus connection or the signal reader ended (why, when it was not a plain disconnection).
        case connectionClosed(String?)
        case owner(String), adapterAdded, adapterRemoved, powered(Bool), subscribersChanged, tick
    }

    enum Outcome { case shutdown, disconnected(String?), failed(BlueZError) }

    struct Subscriber {
        var company: UInt16
        var sink: ReportSink
    }

    /// Where a subscriber's reports go: a stream of single reports, or a queue handed over in batches.
    enum ReportSink {
        case stream(AsyncThrowingStream<AdvertisementReport, any Error>.Continuation)
        case queue(ReportQueue)

        func finish(throwing error: (any Error)? = nil) {
            switch self {
            case .stream(let c): c.finish(throwing: error)
            case .queue(let q): q.finish(throwing: error)
            }
        }
    }

    struct Heard {
        var rssi: Int16?
        var lastSeen: RadioInstant
    }

    /// What a parked GATT read waits for; the stage is for tests and logs.
    enum WaitStage: Sendable, Hashable { case bluetoothd, servicesResolved, characteristic }

    struct MirrorWaiter {
        /// Changes at or below this path wake it; nil: only session changes (and every mirror change).
        var scope: DBusObjectPath?
        var stage: WaitStage
        var continuation: CheckedContinuation<Void, Never>
    }

    struct State {
        var connection: DBusConnection?
        var mirror = ObjectMirror()
        var adapterPath: DBusObjectPath?
        var adapterName: String
        var adapterPowered = false
        var ready = false
        var everReady = false
        var acquiring = false
        var pending: [BlueZSignal] = []
        var discovering = false
        var subscribers: [Int: Subscriber] = [:]
        var subscriberList: [Subscriber] = []
        var nextID = 0
        var heard: [DeviceAddress: Heard] = [:]
        var caused: [DBusObjectPath: RadioInstant] = [:]
        var busy: [DBusObjectPath: Int] = [:]
        var readsInProgress = 0
        var runTask: Task<Void, Never>?
        var control: AsyncStream<Control>.Continuation?
        var startupError: BlueZError?
        /// With `endStreamsOnRadioLoss`: why the radio is gone (new streams end with it at once), until it is back.
        var radioLost: BlueZError?
        /// The trouble last logged: the same trouble again (each retry while bluetoothd stays away) is not
        /// logged again until the radio was ready in between.
        var troubleLogged: BlueZError?
        var shutDown = false
        var stats = BlueZCentralStatistics(reports: 0, staleDevicesRemoved: 0, discoveryRestarts: 0, acquisitions: 0,
                                           mirroredObjects: 0)
        /// GATT reads parked until the mirror or the session changes (`waitForMirror`).
        var waiters: [Int: MirrorWaiter] = [:]
        var nextWaiterID = 0

        /// Takes the waiters a change at `path` concerns (nil: a session change, which concerns all).
        mutating func takeWaiters(at path: DBusObjectPath?) -> [CheckedContinuation<Void, Never>] {
            guard !waiters.isEmpty else { return [] }
            var woken: [CheckedContinuation<Void, Never>] = []
            for (id, w) in waiters {
                let concerned: Bool
                if let path, let scope = w.scope { concerned = path.isDescendant(of: scope) } else { concerned = true }
                if concerned {
                    woken.append(w.continuation)
                    waiters[id] = nil
                }
            }
            return woken
        }

        /// bluetoothd went away: its devices went with it (it sends no InterfacesRemoved when it dies).
        mutating func forgetDevices() {
            heard.removeAll()
            caused.removeAll()
        }

        /// Forgets the last RSSI of addresses not heard for `olderThan` that have no device in the
        /// mirror (signals for unknown objects, devices removed while we were away).
        mutating func forgetUnheard(olderThan: Duration, now: RadioInstant) {
            guard let adapter = adapterPath else { return }
            heard = heard.filter { address, h in
                now - h.lastSeen < olderThan || mirror.devicePath(adapter: adapter, address: address) != nil
            }
        }
    }

    init(options: BlueZCentralOptions, logger: Logger) {
        self.options = options
        self.logger = logger
        let name = options.adapter.logName
        state = Mutex(State(adapterName: name))
        statusHub = RadioStatusBroadcaster(RadioStatus(adapter: name, state: .stopped))
        slots = AsyncSemaphore(permits: options.maxConcurrentConnections)
    }

    var statistics: BlueZCentralStatistics {
        state.withLock { s in
            var st = s.stats
            st.mirroredObjects = s.mirror.count
            st.heardAddresses = s.heard.count
            st.rejectedSignals = signalStats.rejected.load(ordering: .relaxed)
            return st
        }
    }

    // MARK: Subscriptions and status

    func subscribe(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        let (stream, cont) = AsyncThrowingStream<AdvertisementReport, any Error>.makeStream(
            bufferingPolicy: .bufferingNewest(options.reportBufferLimit))
        if let id = add(Subscriber(company: companyID, sink: .stream(cont))) {
            cont.onTermination = { [weak self] _ in self?.unsubscribe(id) }
            started()
        }
        return stream
    }

    /// Like `subscribe`, with each burst of reports handed over at once.
    func subscribeBatches(companyID: UInt16) -> AdvertisementBatches {
        let queue = ReportQueue(limit: options.reportBufferLimit)
        if let id = add(Subscriber(company: companyID, sink: .queue(queue))) {
            queue.onTermination { [weak self] in self?.unsubscribe(id) }
            started()
        }
        return queue.batches
    }

    /// Registers a subscriber; nil (and the subscriber finished) after shutdown, or (with an error)
    /// while the radio is lost under `endStreamsOnRadioLoss`.
    private func add(_ sub: Subscriber) -> Int? {
        let endOnLoss = options.endStreamsOnRadioLoss
        let (id, refusal): (Int?, BlueZError?) = state.withLock { s in
            if s.shutDown { return (nil, nil) }
            if endOnLoss, let e = s.radioLost { return (nil, e) }
            let id = s.nextID
            s.nextID += 1
            s.subscribers[id] = sub
            s.subscriberList = Array(s.subscribers.values)
            s.startupError = nil
            return (id, nil)
        }
        if id == nil { sub.sink.finish(throwing: refusal) }
        return id
    }

    private func started() {
        ensureRunning()
        signal(.subscribersChanged)
    }

    func unsubscribe(_ id: Int) {
        state.withLock { s in
            s.subscribers[id] = nil
            s.subscriberList = Array(s.subscribers.values)
        }
        signal(.subscribersChanged)
    }

    func statusStream() -> AsyncStream<RadioStatus> { statusHub.stream() }

    func updateStatus(_ change: (inout RadioStatus) -> Void) { statusHub.update(change) }

    func noteTrouble(_ e: BlueZError) {
        let again = state.withLock { s in
            defer { s.troubleLogged = e }
            return s.troubleLogged == e
        }
        if !again { logger.warning("\(e)") }
        updateStatus {
            $0.state = .recovering
            $0.lastError = e.description
        }
    }

    /// Wakes every parked GATT read to look again (the session changed: ready, gone, shut down).
    func wakeWaiters() {
        let woken = state.withLock { $0.takeWaiters(at: nil) }
        for c in woken { c.resume() }
    }

    /// GATT reads parked at `stage` now (tests wait on this instead of sleeping).
    func parkedReads(_ stage: WaitStage) -> Int {
        state.withLock { s in s.waiters.values.reduce(0) { $0 + ($1.stage == stage ? 1 : 0) } }
    }

    func signal(_ c: Control) {
        let cont = state.withLock { $0.control }
        cont?.yield(c)
    }

    // MARK: Lifecycle

    func ensureRunning() {
        state.withLock { s in
            guard s.runTask == nil, !s.shutDown else { return }
            s.runTask = Task { [self] in await self.run() }
        }
    }

    func beginShutdown() {
        let (task, subs) = state.withLock { s -> (Task<Void, Never>?, [Subscriber]) in
            s.shutDown = true
            let r = (s.runTask, Array(s.subscribers.values))
            s.subscribers = [:]
            s.subscriberList = []
            s.control?.finish()
            return r
        }
        task?.cancel()
        for sub in subs { sub.sink.finish() }
        wakeWaiters()
        statusHub.close()
    }

    func shutdown() async {
        let (conn, adapter, discovering) = state.withLock { ($0.connection, $0.adapterPath, $0.discovering) }
        if let conn, let adapter, discovering {
            _ = try? await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                     method: "StopDiscovery", timeout: .seconds(2))
        }
        updateStatus { $0.state = .stopped }
        let task = state.withLock { $0.runTask }
        beginShutdown()
        await task?.value
        conn?.close()
    }

    /// With `endStreamsOnRadioLoss`: ends every stream with `e` (the radio went away while they ran);
    /// new streams end with it too until the radio is acquired again.
    func radioLost(_ e: BlueZError) {
        guard options.endStreamsOnRadioLoss else { return }
        let subs = state.withLock { s -> [Subscriber] in
            let subs = Array(s.subscribers.values)
            s.subscribers = [:]
            s.subscriberList = []
            s.radioLost = e
            return subs
        }
        for sub in subs { sub.sink.finish(throwing: e) }
    }

    func failStartup(_ e: BlueZError) {
        logger.error("\(e)")
        let subs = state.withLock { s -> [Subscriber] in
            let subs = Array(s.subscribers.values)
            s.subscribers = [:]
            s.subscriberList = []
            s.startupError = e
            s.runTask = nil
            return subs
        }
        updateStatus {
            $0.state = .stopped
            $0.lastError = e.description
        }
        for sub in subs { sub.sink.finish(throwing: e) }
        wakeWaiters()
    }
}
