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
    /// Reports buffered for a slow consumer before the oldest are dropped (and counted in
    /// ``BlueZCentralStatistics/droppedReports``).
    public var reportBufferLimit: Int
    /// `true` ends every stream with a ``BlueZError`` when bluetoothd, the bus or the adapter goes away
    /// (or the adapter is powered off) while it runs, and refuses new streams until the radio is back;
    /// `false` (the tally) keeps the streams open and recovers, showing the trouble in `status()`.
    /// A listening voter wants to be told (`BlueZPeripheral.listen`).
    public var endStreamsOnRadioLoss: Bool = false
    /// Where the beacon's LEAdvertisement1 objects are exported (unique per process on the bus).
    public var beaconObjectPath: DBusObjectPath = "/org/clicker/beacon"
    /// The shortest time a beacon frame stays on the air before the next replaces it. Each replacement
    /// costs bluetoothd a PropertiesChanged and the kernel a refresh of the advertising instance
    /// (`CentralBroadcast.swift`), so frames rotate every `max(payload interval, this)`.
    public var beaconMinimumDwell: Duration = .milliseconds(100)
    /// How long the beacon waits after its last frame change before it unregisters its advertisement.
    /// bluetoothd 5.66 frees an advertisement on UnregisterAdvertisement while refreshes that frame changes
    /// started are still queued for it, and aborts when they complete (`add_adv_params_callback` on freed
    /// memory; seen in the QEMU guest). Not every bluetoothd confirms frame changes, so the beacon lets them drain.
    public var beaconUnregisterSettle: Duration = .seconds(1)
    /// The clock the backend stamps reports with, decides by (discovery restarts, stale devices,
    /// retries) and waits on (retries, its tick, the beacon's rotation, its calls' timeouts on its bus
    /// connections); tests pass a clock they move.
    public var clock = RadioClock()

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
///
/// It also broadcasts (the tally's beacon, `CentralBroadcast.swift`): one `broadcast`-type
/// LEAdvertisement1, registered on its own connection while discovery goes on.
public final class BlueZCentral: CentralTransport {
    let engine: CentralEngine
    let beacon: BeaconAdvertiser

    /// Creates the central; nothing touches the bus until the first stream, read or broadcast.
    public init(options: BlueZCentralOptions = BlueZCentralOptions(),
                logger: Logger = Logger(label: "clicker.bluez.central")) {
        let engine = CentralEngine(options: options, logger: logger)
        self.engine = engine
        beacon = BeaconAdvertiser(options: options, logger: logger) {
            engine.state.withLock { $0.adapterPath == nil ? nil : $0.adapterPowered }
        }
    }

    deinit {
        engine.beginShutdown()
        beacon.abandon()
    }

    public func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        engine.subscribe(companyID: companyID)
    }

    /// Each burst of signals read from the bus (at most 1,024, or what arrived within 4 ms) as one batch.
    public func advertisementBatches(companyID: UInt16) -> AdvertisementBatches {
        engine.subscribeBatches(companyID: companyID)
    }

    public func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                                   timeout: Duration) async throws -> [UInt8] {
        try await engine.readCharacteristic(device: device, service: service, characteristic: characteristic,
                                            timeout: timeout)
    }

    public func status() -> AsyncStream<RadioStatus> { engine.statusStream() }

    /// Withdraws the beacon, stops discovery, ends all streams and closes the bus connections. Idempotent.
    public func shutdown() async {
        await beacon.shutdown()
        await engine.shutdown()
    }

    /// Counters for logs and benchmarks.
    public var statistics: BlueZCentralStatistics { engine.statistics }
}

/// What the central has done so far.
public struct BlueZCentralStatistics: Sendable, Hashable {
    /// Reports handed to consumers.
    public var reports: Int
    /// Reports dropped because a consumer fell more than `reportBufferLimit` behind.
    public var droppedReports: Int = 0
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
    /// The most GATT reads (connections) that were in progress at once.
    public var peakConcurrentReads: Int = 0
    /// Signals from bluetoothd dropped because they did not parse (counted, never trapped on).
    public var rejectedSignals: Int = 0
}
