import ClickerTransport
import DBus
import Logging
import Synchronization

/// Settings of the BlueZ peripheral.
public struct BlueZPeripheralOptions: Sendable {
    /// Which bus BlueZ lives on (the system bus; tests use a private bus address).
    public var bus: DBusBusTarget
    /// Which adapter to advertise with.
    public var adapter: AdapterSelection
    /// Where this process exports its advertisement and GATT application (must be unique per process).
    public var objectPath: DBusObjectPath
    /// Timeout of each call to bluetoothd.
    public var callTimeout: Duration
    /// How long a registration (RegisterAdvertisement, RegisterApplication) may go unanswered; never
    /// shorter than ``callTimeout``. Long, because withdrawing a registration that bluetoothd is still
    /// carrying out is what crashes it: bluetoothd 5.82 frees the advertisement, then its kernel request
    /// completes on freed memory (`add_adv_params_callback`, seen in the Debian 13 guest when a loaded host
    /// left a registration unanswered for 10 s and the voter withdrew it and registered again).
    public var registrationTimeout: Duration
    /// The clock the peripheral's retries, its listener's timers and its calls' timeouts on its bus
    /// connection run on; tests pass a clock they move.
    public var clock = RadioClock()

    public init(bus: DBusBusTarget = .system, adapter: AdapterSelection = .firstPowered,
                objectPath: DBusObjectPath = "/org/clicker/peripheral", callTimeout: Duration = .seconds(10),
                registrationTimeout: Duration = .seconds(60)) {
        self.bus = bus
        self.adapter = adapter
        self.objectPath = objectPath
        self.callTimeout = callTimeout
        self.registrationTimeout = max(callTimeout, registrationTimeout)
    }
}

/// Whether bluetoothd applies the requested advertising interval.
public enum AdvertisingIntervalSupport: Sendable, Hashable {
    /// Not known yet (nothing advertised).
    case unknown
    /// MinInterval/MaxInterval are applied (bluetoothd runs with experimental features).
    case honoured
    /// bluetoothd ignores MinInterval/MaxInterval; the controller uses the kernel default (about 1.28 s).
    case ignored
}

/// The BLE peripheral over BlueZ's D-Bus API: an `org.bluez.LEAdvertisement1` registered with
/// LEAdvertisingManager1, and a GATT application (one primary service, one readable characteristic)
/// registered with GattManager1. Call ``shutdown()`` on exit to withdraw both.
///
/// The engine's connection and adapter are here; advertising (GAP) is in `PeripheralAdvertising.swift`,
/// the GATT server in `PeripheralGATTServer.swift`.
///
/// It also listens (`PeripheralListening.swift`): discovery while it advertises, for the tally's beacon.
public final class BlueZPeripheral: PeripheralTransport {
    let engine: PeripheralEngine
    let listener: CentralEngine

    public init(options: BlueZPeripheralOptions = BlueZPeripheralOptions(),
                logger: Logger = Logger(label: "clicker.bluez.peripheral")) {
        engine = PeripheralEngine(options: options, logger: logger)
        listener = CentralEngine(options: Self.listenerOptions(options), logger: logger)
    }

    deinit { listener.beginShutdown() }

    public func advertise(_ payload: AdvertisingPayload) async throws { try await engine.advertise(payload) }
    public func stopAdvertising() async throws { try await engine.stopAdvertising() }
    public func publish(service: UUID128, characteristic: UUID128, value: [UInt8]) async throws {
        try await engine.publish(service: service, characteristic: characteristic, value: value)
    }
    public func shutdown() async {
        await listener.shutdown()
        await engine.shutdown()
    }
    public func status() -> AsyncStream<RadioStatus> { engine.status.stream() }

    /// Whether the requested advertising interval is applied (known after the first ``advertise(_:)``).
    public var intervalSupport: AdvertisingIntervalSupport { engine.intervalSupport.withLock { $0 } }
}

actor PeripheralEngine {
    let options: BlueZPeripheralOptions
    let logger: Logger
    nonisolated let status: RadioStatusBroadcaster
    nonisolated let intervalSupport = Mutex<AdvertisingIntervalSupport>(.unknown)
    /// The served characteristic value, read by ReadValue on the dispatch thread.
    nonisolated let value = ValueCell()

    var connection: DBusConnection?
    var adapterPath: DBusObjectPath?
    var adapterName: String
    var adapterInterfaces: [String: [String: DBusValue]] = [:]
    var advertisement: DBusExportedObject?
    var advertisementRegistered = false
    /// A registration went unanswered or bluetoothd said it holds our path: it may be registered.
    var advertisementUncertain = false
    var payload: AdvertisingPayload?
    var gattObjects: [DBusExportedObject] = []
    var gattRegistered = false
    var gattUncertain = false
    var gattKey: (UUID128, UUID128)?
    var ownerWatch: Task<Void, Never>?
    var closed = false

    init(options: BlueZPeripheralOptions, logger: Logger) {
        self.options = options
        self.logger = logger
        let name = options.adapter.logName
        adapterName = name
        status = RadioStatusBroadcaster(RadioStatus(adapter: name, state: .stopped))
    }

    var advertisementPath: DBusObjectPath { (try? options.objectPath.appending("advertisement0")) ?? options.objectPath }
    var applicationPath: DBusObjectPath { (try? options.objectPath.appending("app")) ?? options.objectPath }

    static let alreadyExists = "org.bluez.Error.AlreadyExists"

    func fail(_ e: BlueZError) -> BlueZError {
        logger.error("\(e)")
        status.update { $0.lastError = e.description }
        return e
    }

    // MARK: Connection and adapter

    /// Connects, reads the tree and picks the adapter (once; again after bluetoothd restarted).
    func ensureReady() async throws -> (DBusConnection, DBusObjectPath) {
        if closed { throw BlueZError.rejected("use after shutdown", DBusError(name: DBusError.failed, message: "peripheral shut down")) }
        if let c = connection, c.isConnected, let a = adapterPath { return (c, a) }
        let conn: DBusConnection
        if let c = connection, c.isConnected {
            conn = c
        } else {
            do {
                conn = try await DBusConnection.connect(options.bus, clock: options.clock.elapsed)
            } catch {
                throw fail(.busUnreachable(options.bus.spokenName, "\(error)"))
            }
            connection = conn
            watchOwner(conn)
        }
        let (mirror, chosen): (ObjectMirror, BlueZ.Adapter)
        do {
            (mirror, chosen) = try await BlueZ.lookUpAdapter(conn, options.adapter, timeout: options.callTimeout)
        } catch let e as BlueZError {
            throw fail(e)
        }
        adapterName = chosen.name
        let name = chosen.name
        status.update { $0.adapter = name }
        guard chosen.powered else { throw fail(.adapterPoweredOff(chosen.name)) }
        adapterPath = chosen.path
        adapterInterfaces = mirror.objects[chosen.path] ?? [:]
        return (conn, chosen.path)
    }

    /// Follows bluetoothd: when it goes away, what was registered is gone; when it comes back,
    /// register again.
    func watchOwner(_ conn: DBusConnection) {
        ownerWatch?.cancel()
        ownerWatch = BlueZ.followOwner(on: conn) { [weak self] owner in
            guard let self else { return false }
            await self.ownerChanged(owner)
            return true
        }
    }

    func ownerChanged(_ newOwner: String) async {
        guard !closed else { return }
        advertisementRegistered = false
        gattRegistered = false
        advertisementUncertain = false
        gattUncertain = false
        adapterPath = nil
        if newOwner.isEmpty {
            let e = BlueZError.bluetoothdNotRunning
            logger.warning("\(e)")
            status.update {
                $0.state = .recovering
                $0.lastError = e.description
            }
            return
        }
        logger.info("bluetoothd (re)appeared; registering again")
        // bluetoothd may own its name before its adapters are up: retry for a while.
        for _ in 0..<60 {
            guard !closed, connection != nil else { return }
            do {
                if let key = gattKey, !gattRegistered {
                    try await publish(service: key.0, characteristic: key.1, value: value.get())
                }
                if let p = payload, !advertisementRegistered { try await advertise(p) }
                return
            } catch {
                adapterPath = nil
                status.update {
                    $0.state = .recovering
                    $0.lastError = "\(error)"
                }
                try? await options.clock.sleep(for: .milliseconds(500))
            }
        }
    }

    // MARK: Shutdown

    func shutdown() async {
        guard !closed else { return }
        if let conn = connection, let adapter = adapterPath {
            if advertisementRegistered { await unregisterAdvertisement(conn, adapter) }
            if gattRegistered { await unregisterApplication(conn, adapter) }
        }
        closed = true
        advertisement?.unexport()
        for o in gattObjects { o.unexport() }
        gattObjects = []
        advertisement = nil
        ownerWatch?.cancel()
        connection?.close()
        connection = nil
        status.update { $0.state = .stopped }
        status.close()
    }
}
