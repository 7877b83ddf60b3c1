@testable import BlueZ
import ClickerTransport
import DBus
import Foundation
import XCTest

/// Tier 2: the central against a private dbus-daemon with python-dbusmock as bluetoothd.
final class BlueZCentralTests: XCTestCase {
    var bus: PrivateBus!
    var mock: BlueZMock!
    var centrals: [BlueZCentral] = []

    static let voter1 = "00:AA:01:00:00:01"
    static let voter2 = "00:AA:01:00:00:02"
    static let service = UUID128("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!
    static let ballotChar = UUID128("6e400002-b5a3-f393-e0a9-e50e24dcca9e")!

    override func setUp() async throws {
        bus = try PrivateBus()
        mock = try await BlueZMock(bus: bus)
    }

    override func tearDown() async throws {
        for c in centrals { await c.shutdown() }
        centrals = []
        mock?.kill()
        mock = nil
        bus?.stop()
        bus = nil
    }

    func makeCentral(_ configure: (inout BlueZCentralOptions) -> Void = { _ in }) -> BlueZCentral {
        var o = BlueZCentralOptions(bus: bus.target, discoveryRestartInterval: nil, staleDeviceTimeout: nil,
                                    callTimeout: .seconds(5), retryInterval: .milliseconds(200))
        configure(&o)
        let c = BlueZCentral(options: o)
        centrals.append(c)
        return c
    }

    func waitScanning(_ status: Collector<RadioStatus>, file: StaticString = #filePath, line: UInt = #line) async throws {
        try await status.wait("status scanning", file: file, line: line) { $0.last?.state == .scanning }
    }

    func testReportsManufacturerDataPushedByPropertiesChanged() async throws {
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter1)
        let central = makeCentral()
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await waitScanning(status)

        // Discovery was started with the LE / duplicate-data filter.
        let filter = try await mock.property("/org/bluez/hci0", "org.bluez.Adapter1", "DiscoveryFilter")
        let f = try [String: DBusValue](dbusValue: filter)
        XCTAssertEqual(f["Transport"]?.unwrapped, .string("le"))
        XCTAssertEqual(f["DuplicateData"]?.unwrapped, .boolean(true))
        let v1 = try await mock.property("/org/bluez/hci0", "org.bluez.Adapter1", "Discovering")
        XCTAssertEqual(v1.unwrapped, .boolean(true))

        try await mock.advertise(Self.voter1, data: [1, 2, 3, 4], rssi: -61)
        try await mock.advertise(Self.voter1, company: 0x004C, data: [9, 9], rssi: -62)  // other company: not ours
        try await mock.advertise(Self.voter1, data: [5, 6], rssi: -63)
        let got = try await reports.wait("two reports") { $0.count >= 2 }
        XCTAssertEqual(got.count, 2)
        XCTAssertEqual(got[0].address, DeviceAddress(Self.voter1))
        XCTAssertEqual(got[0].companyID, 0xFFFF)
        XCTAssertEqual(got[0].data, [1, 2, 3, 4])
        XCTAssertEqual(got[0].rssi, -61)
        XCTAssertEqual(got[1].data, [5, 6])
        XCTAssertEqual(got[1].rssi, -63)
        XCTAssertLessThanOrEqual(got[0].timestamp, got[1].timestamp)
    }

    func testSeesDevicesAddedWhileScanning() async throws {
        try await mock.addAdapter()
        let central = makeCentral()
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await waitScanning(status)
        for i in 1...20 {
            let addr = String(format: "00:AA:02:00:00:%02X", i)
            try await mock.addDevice(addr)
            try await mock.advertise(addr, data: [UInt8(i), 0xEE], rssi: Int16(-40 - i))
        }
        let got = try await reports.wait("20 devices") { Set($0.map(\.address)).count == 20 }
        for r in got {
            let i = Int(r.address.rawValue & 0xFF)
            XCTAssertEqual(r.data, [UInt8(i), 0xEE])
            XCTAssertEqual(r.rssi, Int8(-40 - i))
        }
        XCTAssertEqual(central.statistics.reports, got.count)
    }

    func testRemovesStaleDevicesItCaused() async throws {
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter1)  // known before scanning: not ours to remove
        let central = makeCentral {
            $0.staleDeviceTimeout = .seconds(1)
            $0.staleSweepInterval = .milliseconds(100)
        }
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await waitScanning(status)
        try await mock.addDevice(Self.voter2)  // appears during our discovery, heard once, then silent
        try await mock.addDevice("00:AA:01:00:00:03")  // keeps advertising
        try await mock.advertise(Self.voter2, data: [2])
        try await reports.wait("voter2 heard") { $0.contains { $0.address == DeviceAddress(Self.voter2) } }
        // Device 3 advertises again as soon as its last advertisement was reported, until the sweep has
        // removed a device (the central's own count): paced by acknowledged reports, not by sleeps.
        let active = DeviceAddress("00:AA:01:00:00:03")!
        var sent = 0
        let deadline = ContinuousClock.now + .seconds(20)
        while central.statistics.staleDevicesRemoved == 0 && ContinuousClock.now < deadline {
            try await mock.advertise("00:AA:01:00:00:03", data: [3])
            sent += 1
            try await reports.wait("device 3 heard") { $0.lazy.filter { $0.address == active }.count >= sent }
        }
        let paths = Set(try await mock.managedObjects().keys.map(\.rawValue))
        XCTAssertFalse(paths.contains("/org/bluez/hci0/dev_00_AA_01_00_00_02"), "silent device was not removed")
        XCTAssertTrue(paths.contains("/org/bluez/hci0/dev_00_AA_01_00_00_03"), "active device was removed")
        XCTAssertTrue(paths.contains("/org/bluez/hci0/dev_00_AA_01_00_00_01"), "pre-existing device was removed")
        XCTAssertEqual(central.statistics.staleDevicesRemoved, 1)
    }

    func testRestartsDiscoveryPeriodically() async throws {
        try await mock.addAdapter()
        let central = makeCentral { $0.discoveryRestartInterval = .milliseconds(300) }
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await waitScanning(status)
        try await eventually("three discovery restarts") { central.statistics.discoveryRestarts >= 3 }
        let calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertGreaterThanOrEqual(calls.filter { $0 == "StartDiscovery" }.count, 4)
        XCTAssertGreaterThanOrEqual(calls.filter { $0 == "StopDiscovery" }.count, 3)
        let restarts = Set(status.snapshot.compactMap(\.lastDiscoveryRestart))
        XCTAssertGreaterThanOrEqual(restarts.count, 3)
        reports.cancel()
    }

    func testSurvivesBluetoothdRestart() async throws {
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter1)
        let central = makeCentral()
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await waitScanning(status)
        try await mock.advertise(Self.voter1, data: [1])
        try await reports.wait("first report") { $0.count == 1 }

        mock.kill()
        try await status.wait("recovering after bluetoothd died") { $0.last?.state == .recovering }
        XCTAssertTrue(status.snapshot.last?.lastError?.contains("systemctl start bluetooth") ?? false,
                      "\(String(describing: status.snapshot.last))")

        mock = try await BlueZMock(bus: bus)
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter2)
        try await status.wait("scanning again") { $0.last?.state == .scanning }
        try await mock.advertise(Self.voter2, data: [2, 2])
        let got = try await reports.wait("report from the new bluetoothd") { $0.count == 2 }
        XCTAssertEqual(got[1].address, DeviceAddress(Self.voter2))
        XCTAssertEqual(got[1].data, [2, 2])
        XCTAssertNil(reports.error)
        XCTAssertGreaterThanOrEqual(central.statistics.acquisitions, 2)
        // The devices of the bluetoothd that died are forgotten with it (it sent no InterfacesRemoved):
        // restarts every 20 minutes must not pile up every address ever heard.
        XCTAssertEqual(central.statistics.heardAddresses, 1, "addresses of the old bluetoothd still remembered")
    }

    /// Bytes that cannot begin a D-Bus message on the signal reader's socket: the central reports it,
    /// loses the radio as when the bus goes, connects again and counts on.
    func testAnUnreadableSignalStreamIsReportedAndTheCentralConnectsAgain() async throws {
        let proxy = try BusProxy(bus: bus)
        defer { proxy.stop() }
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter1)
        let central = makeCentral { $0.bus = .address(proxy.address) }
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await waitScanning(status)
        try await mock.advertise(Self.voter1, data: [1])
        try await reports.wait("first report") { $0.count == 1 }

        XCTAssertEqual(proxy.injectIntoSignalReader(Array("not a D-Bus message at all".utf8)), 1)
        try await status.wait("the reader's end reported") {
            $0.contains { $0.state == .recovering && ($0.lastError?.contains("signal reader") ?? false) }
        }
        try await status.wait("scanning again") { $0.last?.state == .scanning }
        try await mock.advertise(Self.voter1, data: [2, 2])
        let got = try await reports.wait("a report after reconnecting") { $0.count == 2 }
        XCTAssertEqual(got[1].data, [2, 2])
        XCTAssertNil(reports.error)
        XCTAssertGreaterThanOrEqual(central.statistics.acquisitions, 2)
    }

    func testSurvivesAdapterRemovedAndReAdded() async throws {
        try await mock.addAdapter()
        let central = makeCentral()
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await waitScanning(status)
        try await mock.removeAdapter()
        try await status.wait("recovering without adapter") { $0.last?.state == .recovering }
        try await mock.addAdapter()
        try await status.wait("scanning on the new adapter") { $0.last?.state == .scanning }
        try await mock.addDevice(Self.voter1)
        try await mock.advertise(Self.voter1, data: [7])
        try await reports.wait("report after adapter came back") { $0.count == 1 }
        let v2 = try await mock.property("/org/bluez/hci0", "org.bluez.Adapter1", "Discovering")
        XCTAssertEqual(v2.unwrapped, .boolean(true))
    }

    func testPowerOffIsReportedAndRecovered() async throws {
        try await mock.addAdapter()
        let central = makeCentral()
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await waitScanning(status)
        try await mock.setPowered(false)
        let s = try await status.wait("powered-off status") { $0.last?.state == .recovering }
        XCTAssertTrue(s.last?.lastError?.contains("bluetoothctl power on") ?? false, "\(String(describing: s.last))")
        try await mock.setPowered(true)
        try await status.wait("scanning after power on") { $0.last?.state == .scanning }
        reports.cancel()
    }

    // MARK: Clear errors at start

    func testStartupErrorsSayWhatToRun() async throws {
        // bluetoothd not running
        mock.kill()
        var err = try await firstError(makeCentral())
        XCTAssertEqual(err as? BlueZError, .bluetoothdNotRunning)
        XCTAssertTrue("\(err!)".contains("sudo systemctl start bluetooth"))

        // no adapter
        mock = try await BlueZMock(bus: bus)
        err = try await firstError(makeCentral())
        guard case .noAdapter? = err as? BlueZError else { return XCTFail("expected noAdapter, got \(String(describing: err))") }
        XCTAssertTrue("\(err!)".contains("bluetoothctl list"))

        // wrong adapter name
        try await mock.addAdapter("hci0")
        err = try await firstError(makeCentral { $0.adapter = .name("hci7") })
        XCTAssertEqual(err as? BlueZError, .noAdapter("name hci7", ["hci0"]))

        // powered off
        try await mock.setPowered(false)
        err = try await firstError(makeCentral())
        XCTAssertEqual(err as? BlueZError, .adapterPoweredOff("hci0"))
        XCTAssertTrue("\(err!)".contains("bluetoothctl power on"))

        // bus unreachable
        err = try await firstError(makeCentral { $0.bus = .address("unix:path=\(self.bus.directory.path)/nothing-here") })
        guard case .busUnreachable? = err as? BlueZError else { return XCTFail("expected busUnreachable, got \(String(describing: err))") }
        XCTAssertTrue("\(err!)".contains("systemctl start dbus"))
    }

    func testAdapterChosenByAddress() async throws {
        try await mock.addAdapter("hci0")  // 00:01:02:03:04:05
        try await mock.addAdapter("hci1")  // 01:02:03:04:05:06
        let central = makeCentral { $0.adapter = .address(DeviceAddress("01:02:03:04:05:06")!) }
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await waitScanning(status)
        XCTAssertEqual(status.snapshot.last?.adapter, "hci1")
        let v3 = try await mock.property("/org/bluez/hci1", "org.bluez.Adapter1", "Discovering")
        XCTAssertEqual(v3.unwrapped, .boolean(true))
        let v4 = try await mock.property("/org/bluez/hci0", "org.bluez.Adapter1", "Discovering")
        XCTAssertEqual(v4.unwrapped, .boolean(false))
        reports.cancel()
    }

    func firstError(_ central: BlueZCentral) async throws -> (any Error)? {
        let c = Collector(central.advertisements(companyID: 0xFFFF))
        try await c.end("stream to fail")
        return c.error
    }
}
