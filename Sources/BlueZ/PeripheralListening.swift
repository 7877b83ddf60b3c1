import ClickerTransport
import DBus

/// Listening (GAP observer role, a voter hearing the beacon) over BlueZ: discovery with
/// `{Transport: le, DuplicateData: true}` while the voter's own advertisement stays registered, and the
/// beacon read from `Device1.ManufacturerData` in InterfacesAdded and PropertiesChanged signals. This is
/// the central's discovery engine (`CentralEngine`: one ObjectManager mirror, signals only, the same
/// decoder, stale devices removed), on its own bus connection. Unlike the tally's scan, it never restarts
/// discovery on a timer (``listenerOptions(_:)``).
///
/// The duty cycle is BlueZ's, not the caller's: bluetoothd offers no per-client scan parameters. Discovery
/// scans with the kernel's discovery window and interval, 11.25 ms every 11.25 ms (`DISCOV_LE_SCAN_WIN`,
/// `DISCOV_LE_SCAN_INT`): the receiver listens all the time it is not transmitting, which is at least what
/// ``ScanDutyCycle/fast`` asks (50 %) and costs more power than ``ScanDutyCycle/slow``. Only the
/// administrator changes it, for every program (`ScanIntervalDiscovery`/`ScanWindowDiscovery` under [LE] in
/// /etc/bluetooth/main.conf). A controller with one radio still does not hear while it sends the voter's own
/// advertisement.
///
/// The beacon's address means nothing here: Linux sends non-connectable advertising from a non-resolvable
/// private address that may change whenever the instance is set up again (a frame change can do it), so
/// each such address is a new Device1 (InterfacesAdded, delivered like a change), removed again when stale.
/// Streams end with a ``BlueZError`` when bluetoothd, the bus or the adapter goes away, or the adapter is
/// powered off, and new ones end with it at once until the radio is back.
extension BlueZPeripheral: ListenerTransport {
    public func listen(companyID: UInt16, dutyCycle: ScanDutyCycle) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        listener.subscribe(companyID: companyID)
    }

    /// The listening side's radio state (scanning, recovering, stopped).
    public func listenerStatus() -> AsyncStream<RadioStatus> { listener.statusStream() }

    /// Counters of the listening side.
    public var listenerStatistics: BlueZCentralStatistics { listener.statistics }

    /// The discovery engine's settings for a voter: streams end when the radio goes; one beacon address per
    /// frame change is possible, so devices not heard for 30 s are removed.
    ///
    /// No periodic discovery restart. A restart buys the tally's scan fresh reports of an address it heard
    /// before; the beacon needs none, since every frame change comes from a new address, and bluetoothd
    /// keeps a filtered discovery running by itself (it starts the kernel's discovery again at once when
    /// it ends, without touching its devices). A StopDiscovery, though, makes
    /// bluetoothd 5.66 (`discovery_cleanup`, when the last client on the adapter stops) set RSSI 0 on every
    /// device found and remove every temporary non-connectable one, which here is every beacon address
    /// heard since the last restart: one InterfacesRemoved each, in one run of its main loop, with the scan
    /// off. In the QEMU guest 90 such devices (10 s of frames) kept a follower deaf for 2.9 s, 0 devices
    /// for 0.04 s, and the tally's 3 s closing broadcast fell into that gap (e2e `beacon-follow`,
    /// `beacon-next`). The devices are removed one at a time instead, by bluetoothd's own temporary-device
    /// timeout or the stale sweep below, while the scan goes on.
    static func listenerOptions(_ o: BlueZPeripheralOptions) -> BlueZCentralOptions {
        var c = BlueZCentralOptions(bus: o.bus, adapter: o.adapter, discoveryRestartInterval: nil,
                                    staleDeviceTimeout: .seconds(30), staleSweepInterval: .seconds(10),
                                    maxConcurrentConnections: 1, callTimeout: o.callTimeout, waitForRadio: false,
                                    reportBufferLimit: 4096)
        c.endStreamsOnRadioLoss = true
        c.clock = o.clock
        return c
    }
}
