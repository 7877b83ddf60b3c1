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

    public init(bus: DBusBusTarget = .system, adapter: AdapterSelection = .firstPowered,
                objectPath: DBusObjectPath = "/org/clicker/peripheral", callTimeout: Duration = .seconds(10)) {
        self.bus = bus
        self.adapter = adapter
        self.objectPath = objectPath
        self.callTimeout = callTimeout
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
public final class BlueZPeripheral: PeripheralTransport {
    let engine: PeripheralEngine

    public init(options: BlueZPeripheralOptions = BlueZPeripheralOptions(),
                logger: Logger = Logger(label: "clicker.bluez.peripheral")) {
        engine = PeripheralEngine(options: options, logger: logger)
    }

    public func advertise(_ payload: AdvertisingPayload) async throws { try await engine.advertise(payload) }
    public func stopAdvertising() async throws { try await engine.stopAdvertising() }
    public func publish(service: UUID128, characteristic: UUID128, value: [UInt8]) async throws {
        try await engine.publish(service: service, characteristic: characteristic, value: value)
    }
    public func shutdown() async { await engine.shutdown() }
    public func status() -> AsyncStream<RadioStatus> { engine.status.stream() }

    /// Whether the requested advertising interval is applied (known after the first ``advertise(_:)``).
    public var intervalSupport: AdvertisingIntervalSupport { engine.intervalSupport.withLock { $0 } }
}

/// The served characteristic value, shared with ReadValue handlers.
final class ValueCell: Sendable {
    private let bytes = Mutex<[UInt8]>([])
    func get() -> [UInt8] { bytes.withLock { $0 } }
    func set(_ v: [UInt8]) { bytes.withLock { $0 = v } }
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
    var payload: AdvertisingPayload?
    var gattObjects: [DBusExportedObject] = []
    var gattRegistered = false
    var gattKey: (UUID128, UUID128)?
    var ownerWatch: Task<Void, Never>?
    var closed = false

    init(options: BlueZPeripheralOptions, logger: Logger) {
        self.options = options
        self.logger = logger
        let name: String = switch options.adapter {
        case .name(let n): n
        case .address(let a): a.description
        case .firstPowered: "bluez"
        }
        adapterName = name
        status = RadioStatusBroadcaster(RadioStatus(adapter: name, state: .stopped))
    }

    var advertisementPath: DBusObjectPath { (try? options.objectPath.appending("advertisement0")) ?? options.objectPath }
    var applicationPath: DBusObjectPath { (try? options.objectPath.appending("app")) ?? options.objectPath }

    var busDescription: String {
        switch options.bus {
        case .system: "the system bus"
        case .session: "the session bus"
        case .address(let a, _): a
        }
    }

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
                conn = try await DBusConnection.connect(options.bus)
            } catch {
                throw fail(.busUnreachable(busDescription, "\(error)"))
            }
            connection = conn
            watchOwner(conn)
        }
        let mirror: ObjectMirror
        do {
            mirror = try await conn.call(ObjectMirror.self, destination: BlueZ.service, path: BlueZ.root,
                                         interface: BlueZ.objectManager, method: "GetManagedObjects",
                                         timeout: options.callTimeout)
        } catch let e as DBusError where e.meansBluetoothdGone {
            throw fail(.bluetoothdNotRunning)
        } catch let e as DBusError {
            throw fail(.rejected("GetManagedObjects", e))
        }
        let adapters = mirror.adapters()
        let chosen = switch options.adapter {
        case .firstPowered: adapters.first { $0.powered } ?? adapters.first
        case .name(let n): adapters.first { $0.name == n }
        case .address(let a): adapters.first { $0.address == a }
        }
        guard let chosen else { throw fail(.noAdapter(options.adapter.description, adapters.map(\.name))) }
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
        ownerWatch = Task { [weak self] in
            guard let changes = try? await conn.nameOwnerChanges(for: BlueZ.service) else { return }
            for await change in changes {
                guard let self else { return }
                await self.ownerChanged(change.newOwner)
            }
        }
    }

    func ownerChanged(_ newOwner: String) async {
        guard !closed else { return }
        advertisementRegistered = false
        gattRegistered = false
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
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
    }

    // MARK: Advertising

    func advertise(_ payload: AdvertisingPayload) async throws {
        if advertisementRegistered, self.payload == payload, connection?.isConnected == true { return }
        let (conn, adapter) = try await ensureReady()
        guard adapterInterfaces[BlueZ.advertisingManager] != nil else { throw fail(.advertisingUnsupported(adapterName)) }
        noteIntervalSupport(payload.interval)
        if advertisementRegistered { await unregisterAdvertisement(conn, adapter) }
        advertisement?.unexport()
        advertisement = nil

        let ms = UInt32(clamping: max(20, min(10_240, payload.interval.components.seconds * 1000
            + payload.interval.components.attoseconds / 1_000_000_000_000_000)))
        let manufacturer = DBusValue.dictionary(key: .uint16, value: .variant,
                                                [DBusDictEntry(.uint16(payload.companyID), .variant(.bytes(payload.data)))])
        let iface = DBusInterface(BlueZ.advertisement, methods: [
            DBusMethod("Release") { [weak self] _ in
                await self?.released()
                return []
            },
        ], properties: [
            DBusProperty("Type", .string, value: .string(payload.connectable ? "peripheral" : "broadcast")),
            DBusProperty("ManufacturerData", DBusSignature("a{qv}"), value: manufacturer),
            DBusProperty("MinInterval", .uint32, value: .uint32(ms)),
            DBusProperty("MaxInterval", .uint32, value: .uint32(ms)),
        ])
        let object: DBusExportedObject
        do {
            object = try conn.export(advertisementPath, interfaces: [iface])
        } catch let e as DBusError {
            throw fail(.rejected("exporting the advertisement", e))
        }
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.advertisingManager,
                                    method: "RegisterAdvertisement",
                                    arguments: [.objectPath(advertisementPath), .stringVariantDictionary([:])],
                                    timeout: options.callTimeout)
        } catch let e as DBusError {
            object.unexport()
            switch e.name {
            case "org.bluez.Error.NotPermitted": throw fail(.noFreeAdvertisingInstance(adapterName))
            case "org.bluez.Error.InvalidLength": throw fail(.advertisementTooLong(payload.data.count))
            default:
                if e.meansBluetoothdGone { throw fail(.bluetoothdNotRunning) }
                throw fail(.rejected("RegisterAdvertisement", e))
            }
        }
        advertisement = object
        advertisementRegistered = true
        self.payload = payload
        let support = intervalSupport.withLock { $0 }
        let note = support == .ignored ? Self.intervalNote(payload.interval) : nil
        status.update {
            $0.state = .advertising
            $0.lastError = note
        }
    }

    static func intervalNote(_ interval: Duration) -> String {
        "bluetoothd ignores the requested advertising interval (\(interval)): MinInterval/MaxInterval need its "
            + "experimental features, so the kernel default (about 1.28 s) applies and a full room is counted slowly. "
            + "Fix: set `Experimental = true` under [General] in /etc/bluetooth/main.conf, then sudo systemctl restart bluetooth"
    }

    /// bluetoothd exposes SupportedFeatures/SupportedCapabilities on LEAdvertisingManager1 only with
    /// experimental features on, which is also what makes it apply MinInterval/MaxInterval (BlueZ 5.66).
    func noteIntervalSupport(_ interval: Duration) {
        let props = adapterInterfaces[BlueZ.advertisingManager] ?? [:]
        let honoured = props["SupportedCapabilities"] != nil || props["SupportedFeatures"] != nil
        let before = intervalSupport.withLock { s -> AdvertisingIntervalSupport in
            let b = s
            s = honoured ? .honoured : .ignored
            return b
        }
        if !honoured && before != .ignored { logger.warning("\(Self.intervalNote(interval))") }
    }

    func released() {
        guard advertisementRegistered else { return }
        advertisementRegistered = false
        logger.warning("bluetoothd released the advertisement")
        status.update {
            $0.state = .stopped
            $0.lastError = "bluetoothd released the advertisement (adapter reset or removed); advertise again to resume"
        }
    }

    func unregisterAdvertisement(_ conn: DBusConnection, _ adapter: DBusObjectPath) async {
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.advertisingManager,
                                    method: "UnregisterAdvertisement", arguments: [.objectPath(advertisementPath)],
                                    timeout: options.callTimeout)
        } catch {
            logger.debug("UnregisterAdvertisement: \(error)")
        }
        advertisementRegistered = false
    }

    func stopAdvertising() async throws {
        payload = nil
        if advertisementRegistered, let conn = connection, let adapter = adapterPath {
            await unregisterAdvertisement(conn, adapter)
        }
        advertisement?.unexport()
        advertisement = nil
        advertisementRegistered = false
        status.update { $0.state = .stopped }
    }

    // MARK: GATT

    func publish(service: UUID128, characteristic: UUID128, value newValue: [UInt8]) async throws {
        value.set(newValue)
        if gattRegistered, let key = gattKey, key.0 == service, key.1 == characteristic, connection?.isConnected == true {
            return  // ReadValue serves the new value from now on
        }
        let (conn, adapter) = try await ensureReady()
        guard adapterInterfaces[BlueZ.gattManager] != nil else { throw fail(.gattUnsupported(adapterName)) }
        if gattRegistered { await unregisterApplication(conn, adapter) }
        for o in gattObjects { o.unexport() }
        gattObjects = []

        let app = applicationPath
        let servicePath = (try? app.appending("service0")) ?? app
        let charPath = (try? servicePath.appending("char0")) ?? app
        let cell = value
        conn.addObjectManager(at: app)
        do {
            let s = try conn.export(servicePath, interfaces: [DBusInterface(BlueZ.gattService, properties: [
                DBusProperty("UUID", .string, value: .string(service.description)),
                DBusProperty("Primary", .boolean, value: .boolean(true)),
                DBusProperty("Characteristics", DBusSignature("ao"), value: .objectPathArray([charPath])),
            ])])
            let c = try conn.export(charPath, interfaces: [DBusInterface(BlueZ.gattCharacteristic, methods: [
                DBusMethod("ReadValue", in: [DBusArgument("options", DBusSignature("a{sv}"))],
                           out: [DBusArgument("value", DBusSignature("ay"))]) { call in
                    let bytes = cell.get()
                    var offset = 0
                    if case .dictionary(_, _, let entries)? = call.arguments.first {
                        for e in entries where e.key == .string("offset") {
                            if case .uint16(let o) = e.value.unwrapped { offset = Int(o) }
                        }
                    }
                    guard offset <= bytes.count else {
                        throw DBusError(name: "org.bluez.Error.InvalidOffset", message: "offset \(offset) beyond \(bytes.count) bytes")
                    }
                    return [.bytes(Array(bytes[offset...]))]
                },
            ], properties: [
                DBusProperty("UUID", .string, value: .string(characteristic.description)),
                DBusProperty("Service", .objectPath, value: .objectPath(servicePath)),
                DBusProperty("Flags", DBusSignature("as"), value: .stringArray(["read"])),
                DBusProperty("Value", DBusSignature("ay"), emitsChanged: .false, getter: { .bytes(cell.get()) }),
            ])])
            gattObjects = [s, c]
        } catch let e as DBusError {
            for o in gattObjects { o.unexport() }
            gattObjects = []
            throw fail(.rejected("exporting the GATT application", e))
        }
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.gattManager,
                                    method: "RegisterApplication", arguments: [.objectPath(app), .stringVariantDictionary([:])],
                                    timeout: options.callTimeout)
        } catch let e as DBusError {
            for o in gattObjects { o.unexport() }
            gattObjects = []
            if e.meansBluetoothdGone { throw fail(.bluetoothdNotRunning) }
            throw fail(.rejected("RegisterApplication", e))
        }
        gattRegistered = true
        gattKey = (service, characteristic)
    }

    func unregisterApplication(_ conn: DBusConnection, _ adapter: DBusObjectPath) async {
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.gattManager,
                                    method: "UnregisterApplication", arguments: [.objectPath(applicationPath)],
                                    timeout: options.callTimeout)
        } catch {
            logger.debug("UnregisterApplication: \(error)")
        }
        gattRegistered = false
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
