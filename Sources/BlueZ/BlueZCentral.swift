import ClickerTransport
import DBus
import Logging
import Synchronization

/// Settings of the BlueZ central.
public struct BlueZCentralOptions: Sendable {
    /// Which bus BlueZ lives on (the system bus; tests use a private bus address).
    public var bus: DBusBusTarget
    /// Which adapter to scan with.
    public var adapter: AdapterSelection
    /// Stop and restart discovery this often, so controllers that filter duplicate advertisements per
    /// address report changed votes (and btvirt's virtual radio reports again). `nil`: never.
    public var discoveryRestartInterval: Duration?
    /// Remove devices that discovery created and that have not been heard for this long (RemoveDevice),
    /// so BlueZ's object tree does not grow without bound. `nil`: never.
    public var staleDeviceTimeout: Duration?
    /// How often to look for stale devices.
    public var staleSweepInterval: Duration
    /// At most this many GATT reads (connections) at once.
    public var maxConcurrentConnections: Int
    /// Timeout of each housekeeping call to bluetoothd (GetManagedObjects, StartDiscovery, ...).
    public var callTimeout: Duration
    /// Pause between attempts to get going again after bluetoothd, the adapter or the bus went away.
    public var retryInterval: Duration
    /// At start: `false` fails the advertisement stream at once with a ``BlueZError`` saying what to fix
    /// (no bus, no bluetoothd, no adapter, adapter off); `true` keeps trying, showing the problem in
    /// `status()`. Trouble after scanning has started is always recovered from.
    public var waitForRadio: Bool
    /// Reports buffered for a slow consumer before the oldest are dropped.
    public var reportBufferLimit: Int

    public init(bus: DBusBusTarget = .system, adapter: AdapterSelection = .firstPowered,
                discoveryRestartInterval: Duration? = .seconds(10), staleDeviceTimeout: Duration? = .seconds(120),
                staleSweepInterval: Duration = .seconds(10), maxConcurrentConnections: Int = 2,
                callTimeout: Duration = .seconds(10), retryInterval: Duration = .seconds(2), waitForRadio: Bool = false,
                reportBufferLimit: Int = 1 << 18) {
        self.bus = bus
        self.adapter = adapter
        self.discoveryRestartInterval = discoveryRestartInterval
        self.staleDeviceTimeout = staleDeviceTimeout
        self.staleSweepInterval = staleSweepInterval
        self.maxConcurrentConnections = max(1, maxConcurrentConnections)
        self.callTimeout = callTimeout
        self.retryInterval = retryInterval
        self.waitForRadio = waitForRadio
        self.reportBufferLimit = max(16, reportBufferLimit)
    }
}

/// The BLE central over BlueZ's D-Bus API (bluetoothd).
///
/// One long-lived mirror of BlueZ's object tree (GetManagedObjects once, then InterfacesAdded,
/// InterfacesRemoved and PropertiesChanged) feeds advertisement reports from Device1 ManufacturerData
/// changes. Discovery runs with `{Transport: le, DuplicateData: true}` while someone consumes
/// ``advertisements(companyID:)`` and is restarted periodically. bluetoothd restarts and adapters
/// coming and going are recovered from; ``status()`` shows `recovering` meanwhile.
public final class BlueZCentral: CentralTransport {
    let engine: CentralEngine

    /// Creates the central; nothing touches the bus until the first stream or read.
    public init(options: BlueZCentralOptions = BlueZCentralOptions(),
                logger: Logger = Logger(label: "clicker.bluez.central")) {
        engine = CentralEngine(options: options, logger: logger)
    }

    deinit { engine.beginShutdown() }

    public func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        engine.subscribe(companyID: companyID)
    }

    public func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                                   timeout: Duration) async throws -> [UInt8] {
        try await engine.readCharacteristic(device: device, service: service, characteristic: characteristic,
                                            timeout: timeout)
    }

    public func status() -> AsyncStream<RadioStatus> { engine.statusStream() }

    /// Stops discovery, ends all streams and closes the bus connection. Idempotent.
    public func shutdown() async { await engine.shutdown() }

    /// Counters for logs and benchmarks.
    public var statistics: BlueZCentralStatistics { engine.statistics }
}

/// What the central has done so far.
public struct BlueZCentralStatistics: Sendable, Hashable {
    /// Reports handed to consumers.
    public var reports: Int
    /// Devices removed as stale.
    public var staleDevicesRemoved: Int
    /// Discovery restarts (periodic).
    public var discoveryRestarts: Int
    /// Times the mirror was (re)built from GetManagedObjects.
    public var acquisitions: Int
    /// Objects in the mirror now.
    public var mirroredObjects: Int
    /// Addresses whose last RSSI is remembered now.
    public var heardAddresses: Int = 0
}

final class CentralEngine: Sendable {
    let options: BlueZCentralOptions
    let logger: Logger
    let state: Mutex<State>
    /// The radio status shown by `status()`.
    let statusHub: RadioStatusBroadcaster
    let slots: AsyncSemaphore

    enum Control: Sendable {
        case connectionClosed, owner(String), adapterAdded, adapterRemoved, powered(Bool), subscribersChanged, tick
    }

    enum Outcome { case shutdown, disconnected, failed(BlueZError) }

    struct Subscriber {
        var company: UInt16
        var continuation: AsyncThrowingStream<AdvertisementReport, any Error>.Continuation
    }

    struct Heard {
        var rssi: Int16?
        var lastSeen: RadioInstant
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
        var runTask: Task<Void, Never>?
        var control: AsyncStream<Control>.Continuation?
        var startupError: BlueZError?
        var shutDown = false
        var stats = BlueZCentralStatistics(reports: 0, staleDevicesRemoved: 0, discoveryRestarts: 0, acquisitions: 0,
                                           mirroredObjects: 0)

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
        let name: String = switch options.adapter {
        case .name(let n): n
        case .address(let a): a.description
        case .firstPowered: "bluez"
        }
        state = Mutex(State(adapterName: name))
        statusHub = RadioStatusBroadcaster(RadioStatus(adapter: name, state: .stopped))
        slots = AsyncSemaphore(permits: options.maxConcurrentConnections)
    }

    var statistics: BlueZCentralStatistics {
        state.withLock { s in
            var st = s.stats
            st.mirroredObjects = s.mirror.count
            st.heardAddresses = s.heard.count
            return st
        }
    }

    // MARK: Subscriptions and status

    func subscribe(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        let (stream, cont) = AsyncThrowingStream<AdvertisementReport, any Error>.makeStream(
            bufferingPolicy: .bufferingNewest(options.reportBufferLimit))
        let (id, closed): (Int, Bool) = state.withLock { s in
            if s.shutDown { return (0, true) }
            let id = s.nextID
            s.nextID += 1
            s.subscribers[id] = Subscriber(company: companyID, continuation: cont)
            s.subscriberList = Array(s.subscribers.values)
            s.startupError = nil
            return (id, false)
        }
        if closed {
            cont.finish()
            return stream
        }
        cont.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        ensureRunning()
        signal(.subscribersChanged)
        return stream
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
        logger.warning("\(e)")
        updateStatus {
            $0.state = .recovering
            $0.lastError = e.description
        }
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
        for sub in subs { sub.continuation.finish() }
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
        for sub in subs { sub.continuation.finish(throwing: e) }
    }

    var busDescription: String {
        switch options.bus {
        case .system: "the system bus"
        case .session: "the session bus"
        case .address(let a, _): a
        }
    }

    func run() async {
        while !Task.isCancelled {
            let conn: DBusConnection
            do {
                conn = try await DBusConnection.connect(options.bus)
            } catch {
                let e = BlueZError.busUnreachable(busDescription, "\(error)")
                if !state.withLock({ $0.everReady }) && !options.waitForRadio {
                    failStartup(e)
                    return
                }
                noteTrouble(e)
                try? await Task.sleep(for: options.retryInterval)
                continue
            }
            let outcome = await session(conn)
            conn.close()
            state.withLock { s in
                s.connection = nil
                s.control = nil
                s.ready = false
                s.discovering = false
                s.adapterPath = nil
                s.mirror.removeAll()
                s.forgetDevices()
            }
            switch outcome {
            case .shutdown:
                return
            case .failed(let e):
                if !state.withLock({ $0.everReady }) && !options.waitForRadio {
                    failStartup(e)
                    return
                }
                noteTrouble(e)
            case .disconnected:
                noteTrouble(.busUnreachable(busDescription, "connection lost"))
            }
            if Task.isCancelled { return }
            try? await Task.sleep(for: options.retryInterval)
        }
    }

    func session(_ conn: DBusConnection) async -> Outcome {
        let (control, controlCont) = AsyncStream<Control>.makeStream()
        let signals: AsyncStream<[BlueZSignal]>
        let owners: AsyncStream<DBusNameOwnerChange>
        do {
            // Subscribe before reading the tree, so nothing between the two is missed.
            signals = try await conn.signalBatches(matching: DBusMatchRule(sender: BlueZ.service), maxBatch: 1024,
                                                   bufferLimit: 1 << 16, decode: SignalDecoder.decode)
            owners = try await conn.nameOwnerChanges(for: BlueZ.service)
        } catch {
            return .failed(.busUnreachable(busDescription, "\(error)"))
        }
        let stop = state.withLock { s -> Bool in
            if s.shutDown { return true }
            s.connection = conn
            s.control = controlCont
            return false
        }
        if stop { return .shutdown }
        let tick = min(options.retryInterval, .seconds(1))
        return await withTaskGroup(of: Void.self) { group -> Outcome in
            group.addTask { [self] in
                for await batch in signals { self.handle(batch) }
                controlCont.yield(.connectionClosed)
            }
            group.addTask {
                for await change in owners { controlCont.yield(.owner(change.newOwner)) }
            }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: tick)
                    controlCont.yield(.tick)
                }
            }
            let outcome = await controlLoop(conn, control)
            group.cancelAll()
            return outcome
        }
    }

    func controlLoop(_ conn: DBusConnection, _ control: AsyncStream<Control>) async -> Outcome {
        var lastAttempt = RadioInstant.now()
        if let e = await acquire(conn) {
            if !state.withLock({ $0.everReady }) && !options.waitForRadio { return .failed(e) }
            noteTrouble(e)
        }
        var lastRestart = RadioInstant.now()
        var lastSweep = RadioInstant.now()
        for await event in control {
            if Task.isCancelled { return .shutdown }
            switch event {
            case .connectionClosed:
                return state.withLock { $0.shutDown } ? .shutdown : .disconnected
            case .owner(let newOwner):
                if newOwner.isEmpty {
                    state.withLock { s in
                        s.mirror.removeAll()
                        s.forgetDevices()
                        s.adapterPath = nil
                        s.ready = false
                        s.discovering = false
                    }
                    noteTrouble(.bluetoothdNotRunning)
                } else {
                    logger.info("bluetoothd (re)appeared as \(newOwner); rebuilding the object mirror")
                    lastAttempt = RadioInstant.now()
                    if let e = await acquire(conn) { noteTrouble(e) }
                }
            case .adapterRemoved:
                let name = state.withLock { s -> String in
                    s.adapterPath = nil
                    s.discovering = false
                    return s.adapterName
                }
                noteTrouble(.noAdapter(options.adapter.description, []))
                logger.warning("adapter \(name) went away")
                lastAttempt = RadioInstant.now()
                if let e = await acquire(conn) { noteTrouble(e) }
            case .adapterAdded:
                if state.withLock({ $0.adapterPath == nil }) {
                    lastAttempt = RadioInstant.now()
                    if let e = await acquire(conn) { noteTrouble(e) }
                }
            case .powered(let on):
                if on {
                    state.withLock { $0.adapterPowered = true }
                    await syncDiscovery(conn)
                } else {
                    let name = state.withLock { s -> String in
                        s.adapterPowered = false
                        s.discovering = false
                        return s.adapterName
                    }
                    noteTrouble(.adapterPoweredOff(name))
                }
            case .subscribersChanged:
                await syncDiscovery(conn)
            case .tick:
                let now = RadioInstant.now()
                let (haveAdapter, ready) = state.withLock { ($0.adapterPath != nil, $0.ready) }
                if (!haveAdapter || !ready) && now - lastAttempt >= options.retryInterval {
                    lastAttempt = now
                    if let e = await acquire(conn) { noteTrouble(e) }
                }
                if let every = options.discoveryRestartInterval, now - lastRestart >= every {
                    lastRestart = now
                    await restartDiscovery(conn)
                }
                if let stale = options.staleDeviceTimeout, now - lastSweep >= options.staleSweepInterval {
                    lastSweep = now
                    await sweepStale(conn, olderThan: stale)
                }
            }
        }
        return .shutdown
    }

    // MARK: Acquiring bluetoothd and the adapter

    /// Reads the object tree, picks the adapter and (if anyone listens) starts discovery.
    /// Returns the problem, if any.
    func acquire(_ conn: DBusConnection) async -> BlueZError? {
        state.withLock { s in
            s.acquiring = true
            s.pending = []
        }
        var mirror: ObjectMirror
        do {
            mirror = try await conn.call(ObjectMirror.self, destination: BlueZ.service, path: BlueZ.root,
                                         interface: BlueZ.objectManager, method: "GetManagedObjects",
                                         timeout: options.callTimeout)
        } catch {
            state.withLock { s in
                s.acquiring = false
                s.pending = []
                s.ready = false
            }
            if let e = error as? DBusError, e.meansBluetoothdGone { return .bluetoothdNotRunning }
            if let e = error as? DBusError { return .rejected("GetManagedObjects", e) }
            return .rejected("GetManagedObjects", DBusError(name: DBusError.failed, message: "\(error)"))
        }
        let adapters = mirror.adapters()
        let chosen: (path: DBusObjectPath, name: String, address: DeviceAddress?, powered: Bool)? =
            switch options.adapter {
            case .firstPowered: adapters.first { $0.powered } ?? adapters.first
            case .name(let n): adapters.first { $0.name == n }
            case .address(let a): adapters.first { $0.address == a }
            }
        let problem: BlueZError? = state.withLock { s in
            for sig in s.pending { Self.applyToMirror(sig, &mirror) }
            s.pending = []
            s.acquiring = false
            s.mirror = mirror
            s.ready = true
            s.stats.acquisitions += 1
            s.discovering = false
            guard let chosen else {
                s.adapterPath = nil
                return .noAdapter(options.adapter.description, adapters.map(\.name))
            }
            s.adapterPath = chosen.path
            s.adapterName = chosen.name
            s.adapterPowered = chosen.powered
            if chosen.powered { s.everReady = true }
            // Devices already known before we scan were not caused by us.
            s.caused = s.caused.filter { mirror.properties($0.key, BlueZ.device) != nil }
            return chosen.powered ? nil : .adapterPoweredOff(chosen.name)
        }
        let name = state.withLock { $0.adapterName }
        updateStatus { $0.adapter = name }
        if let problem { return problem }
        logger.info("using adapter \(name); \(mirror.count) objects mirrored")
        await syncDiscovery(conn)
        return nil
    }

    /// Starts or stops discovery to match whether anyone listens.
    func syncDiscovery(_ conn: DBusConnection) async {
        let (want, adapter, discovering, powered) = state.withLock {
            (!$0.subscribers.isEmpty, $0.adapterPath, $0.discovering, $0.adapterPowered)
        }
        guard let adapter else { return }
        if want && !discovering && powered {
            if let e = await startDiscovery(conn, adapter) {
                noteTrouble(e)
                return
            }
            state.withLock { $0.discovering = true }
            updateStatus {
                $0.state = .scanning
                $0.lastError = nil
                $0.lastDiscoveryRestart = RadioInstant.now()
            }
        } else if !want && discovering {
            _ = try? await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                     method: "StopDiscovery", timeout: options.callTimeout)
            state.withLock { $0.discovering = false }
            updateStatus { $0.state = .stopped }
        } else if !want {
            updateStatus {
                if $0.state == .recovering || $0.state == .starting { $0.lastError = nil }
                $0.state = .stopped
            }
        }
    }

    func startDiscovery(_ conn: DBusConnection, _ adapter: DBusObjectPath) async -> BlueZError? {
        let filter = DBusValue.stringVariantDictionary(["Transport": .string("le"), "DuplicateData": .boolean(true)])
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                    method: "SetDiscoveryFilter", arguments: [filter], timeout: options.callTimeout)
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                    method: "StartDiscovery", timeout: options.callTimeout)
            return nil
        } catch let e as DBusError {
            if e.name == "org.bluez.Error.InProgress" { return nil }
            if e.name == "org.bluez.Error.NotReady" { return .adapterPoweredOff(state.withLock { $0.adapterName }) }
            if e.meansBluetoothdGone { return .bluetoothdNotRunning }
            return .rejected("StartDiscovery", e)
        } catch {
            return .rejected("StartDiscovery", DBusError(name: DBusError.failed, message: "\(error)"))
        }
    }

    func restartDiscovery(_ conn: DBusConnection) async {
        let (adapter, discovering) = state.withLock { ($0.adapterPath, $0.discovering) }
        guard let adapter, discovering else { return }
        _ = try? await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                 method: "StopDiscovery", timeout: options.callTimeout)
        if let e = await startDiscovery(conn, adapter) {
            state.withLock { $0.discovering = false }
            noteTrouble(e)
            return
        }
        state.withLock { $0.stats.discoveryRestarts += 1 }
        updateStatus {
            $0.state = .scanning
            $0.lastError = nil
            $0.lastDiscoveryRestart = RadioInstant.now()
        }
    }

    /// RemoveDevice on devices discovery created that have not been heard for `olderThan`.
    func sweepStale(_ conn: DBusConnection, olderThan: Duration) async {
        let now = RadioInstant.now()
        let (adapter, victims): (DBusObjectPath?, [DBusObjectPath]) = state.withLock { s in
            guard let adapter = s.adapterPath else { return (nil, []) }
            let victims = s.caused.compactMap { path, appeared -> DBusObjectPath? in
                guard path.isDescendant(of: adapter, orSelf: false), s.busy[path] == nil else { return nil }
                var last = appeared
                if let a = DevicePath.address(of: path.rawValue), let h = s.heard[a], h.lastSeen > last { last = h.lastSeen }
                guard now - last >= olderThan else { return nil }
                if s.mirror.bool(path, BlueZ.device, "Connected") == true || s.mirror.bool(path, BlueZ.device, "Paired") == true {
                    return nil
                }
                return path
            }
            return (adapter, victims)
        }
        state.withLock { $0.forgetUnheard(olderThan: olderThan, now: now) }
        guard let adapter else { return }
        for path in victims {
            do {
                _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.adapter,
                                        method: "RemoveDevice", arguments: [.objectPath(path)],
                                        timeout: options.callTimeout)
                logger.debug("removed stale device \(path)")
                state.withLock { s in
                    s.stats.staleDevicesRemoved += 1
                    s.caused[path] = nil
                }
            } catch {
                logger.debug("RemoveDevice \(path) failed: \(error)")
                state.withLock { _ = $0.caused.removeValue(forKey: path) }
            }
        }
    }

    // MARK: The signal path

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
                }
            }
        }
        for (report, continuation) in out { continuation.yield(report) }
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

    // MARK: GATT read

    func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                            timeout: Duration) async throws -> [UInt8] {
        let deadline = RadioInstant.now() + timeout
        func remaining(_ what: String) throws -> Duration {
            let left = deadline - RadioInstant.now()
            if left <= .zero { throw TransportError.timeout("\(what) \(device)") }
            return left
        }
        ensureRunning()
        // Wait for the mirror.
        var conn: DBusConnection? = nil
        var adapter: DBusObjectPath? = nil
        while true {
            let (c, a, ready, startup) = state.withLock { ($0.connection, $0.adapterPath, $0.ready, $0.startupError) }
            if let startup, c == nil { throw startup }
            if let c, let a, ready {
                conn = c
                adapter = a
                break
            }
            _ = try remaining("waiting for bluetoothd before reading")
            try await Task.sleep(for: .milliseconds(10))
        }
        guard let conn, let adapter else { throw TransportError.notConnected(device) }
        guard await slots.acquire(timeout: try remaining("waiting for a free connection slot to")) else {
            throw TransportError.timeout("waiting for a free connection slot to \(device)")
        }
        defer { Task { await slots.release() } }
        // A read that waited for a slot while its caller went away (shutdown) makes no connection.
        try Task.checkCancellation()
        guard let path = state.withLock({ $0.mirror.devicePath(adapter: adapter, address: device) }) else {
            throw TransportError.notConnected(device)
        }
        state.withLock { $0.busy[path, default: 0] += 1 }
        defer { state.withLock { s in
            if let n = s.busy[path], n > 1 { s.busy[path] = n - 1 } else { s.busy[path] = nil }
        } }
        do {
            let value = try await connectAndRead(conn, path, device, service, characteristic, remaining)
            await disconnect(conn, path)
            return value
        } catch {
            await disconnect(conn, path)
            throw error
        }
    }

    private func connectAndRead(_ conn: DBusConnection, _ path: DBusObjectPath, _ device: DeviceAddress,
                                _ service: UUID128, _ characteristic: UUID128,
                                _ remaining: (String) throws -> Duration) async throws -> [UInt8] {
        // Always Connect: BlueZ answers at once when already connected, and the mirror may lag behind.
        do {
            _ = try await conn.call(destination: BlueZ.service, path: path, interface: BlueZ.device,
                                    method: "Connect", timeout: try remaining("connecting to"))
        } catch let e as DBusError {
            if e.isTimeout { throw TransportError.timeout("connecting to \(device)") }
            if e.name != "org.bluez.Error.AlreadyConnected" {
                logger.debug("Connect \(device): \(e)")
                throw TransportError.notConnected(device)
            }
        }
        while state.withLock({ $0.mirror.bool(path, BlueZ.device, "ServicesResolved") != true }) {
            _ = try remaining("resolving GATT services of")
            try await Task.sleep(for: .milliseconds(10))
        }
        // bluetoothd may set ServicesResolved before the InterfacesAdded of the GATT objects reach us
        // (seen on bluez 5.66): give them a moment, within the read's own timeout.
        let lookupEnd = ContinuousClock.now + .seconds(3)
        var found: DBusObjectPath?
        while true {
            found = state.withLock {
                $0.mirror.characteristicPath(device: path, service: service, characteristic: characteristic)
            }
            if found != nil || ContinuousClock.now >= lookupEnd { break }
            _ = try remaining("finding the ballot characteristic of")
            try await Task.sleep(for: .milliseconds(10))
        }
        guard let charPath = found else { throw TransportError.characteristicNotFound(characteristic) }
        do {
            let options = DBusValue.stringVariantDictionary([:])
            return try await conn.call([UInt8].self, destination: BlueZ.service, path: charPath,
                                       interface: BlueZ.gattCharacteristic, method: "ReadValue",
                                       arguments: [options], timeout: try remaining("reading the ballot of"))
        } catch let e as DBusError {
            if e.isTimeout { throw TransportError.timeout("reading the ballot of \(device)") }
            logger.debug("ReadValue \(device): \(e)")
            throw TransportError.notConnected(device)
        }
    }

    private func disconnect(_ conn: DBusConnection, _ path: DBusObjectPath) async {
        _ = try? await conn.call(destination: BlueZ.service, path: path, interface: BlueZ.device,
                                 method: "Disconnect", timeout: .seconds(2))
        // Our own disconnect: do not wait for PropertiesChanged to tell the mirror (a read right after
        // this one must not see a stale ServicesResolved).
        state.withLock { s in
            s.mirror.propertiesChanged(path, BlueZ.device, ["Connected": .boolean(false), "ServicesResolved": .boolean(false)], [])
        }
    }
}

/// A counting semaphore for tasks, with a timed acquire.
actor AsyncSemaphore {
    private var permits: Int
    private var waiters: [(id: Int, cont: CheckedContinuation<Bool, Never>)] = []
    private var nextID = 0

    init(permits: Int) { self.permits = permits }

    /// Waits for a permit; false when `timeout` passed first.
    func acquire(timeout: Duration) async -> Bool {
        if permits > 0 {
            permits -= 1
            return true
        }
        let id = nextID
        nextID += 1
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.expire(id)
        }
        let got = await withCheckedContinuation { cont in waiters.append((id, cont)) }
        timer.cancel()
        return got
    }

    private func expire(_ id: Int) {
        guard let i = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: i).cont.resume(returning: false)
    }

    func release() {
        if waiters.isEmpty {
            permits += 1
        } else {
            waiters.removeFirst().cont.resume(returning: true)
        }
    }
}
