import BlueZ
import ClickerTransport
import DBus
import Foundation
import XCTest

/// Tier 2: the peripheral against a private dbus-daemon with python-dbusmock as bluetoothd. The fake
/// bluetoothd reads the advertisement (GetAll) and the GATT application (GetManagedObjects) back over
/// the bus when they are registered, as bluetoothd does.
final class BlueZPeripheralTests: XCTestCase {
    var bus: PrivateBus!
    var mock: BlueZMock!
    var peripherals: [BlueZPeripheral] = []

    static let service = UUID128("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!
    static let ballotChar = UUID128("6e400002-b5a3-f393-e0a9-e50e24dcca9e")!

    override func setUp() async throws {
        bus = try PrivateBus()
    }

    func startMock(_ parameters: String? = nil) async throws {
        mock = try await BlueZMock(bus: bus, parameters: parameters)
        try await mock.addAdapter()
    }

    override func tearDown() async throws {
        for p in peripherals { await p.shutdown() }
        peripherals = []
        mock?.kill()
        mock = nil
        bus?.stop()
        bus = nil
    }

    func makePeripheral(_ path: DBusObjectPath = "/org/clicker/peripheral") -> BlueZPeripheral {
        let p = BlueZPeripheral(options: BlueZPeripheralOptions(bus: bus.target, objectPath: path, callTimeout: .seconds(5)))
        peripherals.append(p)
        return p
    }

    static func manufacturerData(_ props: [String: DBusValue]) -> [UInt16: [UInt8]] {
        guard case .dictionary(_, _, let entries)? = props["ManufacturerData"]?.unwrapped else { return [:] }
        var out: [UInt16: [UInt8]] = [:]
        for e in entries {
            if case .uint16(let k) = e.key.unwrapped, case .bytes(let b) = e.value.unwrapped { out[k] = b }
        }
        return out
    }

    func testRegistersAdvertisementMatchingThePayloadByteForByte() async throws {
        try await startMock()
        let p = makePeripheral()
        let status = Collector(p.status())
        let ballot: [UInt8] = [0x01, 0x7F, 0x80, 0xFF, 0x00, 0x42, 0x13, 0x37, 0xAA, 0x55, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60,
                               0x70, 0x80, 0x90, 0xA0]
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: ballot, interval: .milliseconds(100), connectable: true))
        var ads = try await mock.advertisements()
        XCTAssertEqual(ads.count, 1)
        XCTAssertEqual(ads.first?.1, "/org/clicker/peripheral/advertisement0")
        XCTAssertNotEqual(ads.first?.0, mock.control.uniqueName)  // registered by the peripheral's own connection
        var props = ads.first?.2 ?? [:]
        XCTAssertEqual(props["Type"]?.unwrapped, .string("peripheral"))
        XCTAssertEqual(Self.manufacturerData(props), [0xFFFF: ballot])
        XCTAssertEqual(props["MinInterval"]?.unwrapped, .uint32(100))
        XCTAssertEqual(props["MaxInterval"]?.unwrapped, .uint32(100))
        try await status.wait("advertising") { $0.last?.state == .advertising }

        // A changed vote re-registers the advertisement.
        let changed: [UInt8] = ballot.reversed()
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: changed, interval: .milliseconds(250), connectable: false))
        ads = try await mock.advertisements()
        XCTAssertEqual(ads.count, 1)
        props = ads.first?.2 ?? [:]
        XCTAssertEqual(props["Type"]?.unwrapped, .string("broadcast"))
        XCTAssertEqual(Self.manufacturerData(props), [0xFFFF: changed])
        XCTAssertEqual(props["MinInterval"]?.unwrapped, .uint32(250))
        // The same payload again changes nothing.
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: changed, interval: .milliseconds(250), connectable: false))
        let calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "RegisterAdvertisement" }.count, 2)
        XCTAssertEqual(calls.filter { $0 == "UnregisterAdvertisement" }.count, 1)
        let active = try await mock.property("/org/bluez/hci0", "org.bluez.LEAdvertisingManager1", "ActiveInstances")
        XCTAssertEqual(active.unwrapped, .byte(1))
    }

    func testGattApplicationServesTheBallot() async throws {
        try await startMock()
        let p = makePeripheral()
        let ballot: [UInt8] = (0..<100).map { UInt8(($0 * 37 + 11) & 0xFF) }
        try await p.publish(service: Self.service, characteristic: Self.ballotChar, value: ballot)
        let apps = try await mock.applications()
        XCTAssertEqual(apps.count, 1)
        XCTAssertEqual(apps.first?.1, "/org/clicker/peripheral/app")
        let objects = apps.first?.2 ?? [:]
        let services = objects.filter { $0.value["org.bluez.GattService1"] != nil }
        let chars = objects.filter { $0.value["org.bluez.GattCharacteristic1"] != nil }
        XCTAssertEqual(services.count, 1)
        XCTAssertEqual(chars.count, 1)
        let s = services.first?.value["org.bluez.GattService1"] ?? [:]
        XCTAssertEqual(s["UUID"]?.unwrapped, .string(Self.service.description))
        XCTAssertEqual(s["Primary"]?.unwrapped, .boolean(true))
        let c = chars.first?.value["org.bluez.GattCharacteristic1"] ?? [:]
        XCTAssertEqual(c["UUID"]?.unwrapped, .string(Self.ballotChar.description))
        XCTAssertEqual(c["Flags"]?.unwrapped, .array(.string, [.string("read")]))
        XCTAssertEqual(c["Service"]?.unwrapped, .objectPath(services.first!.key))

        // A remote central's read (through bluetoothd) gets the value byte for byte.
        var read = try await mock.mock("ReadApplicationValue", [.string("hci0"), .string(Self.service.description),
                                                                  .string(Self.ballotChar.description)]).decode([UInt8].self)
        XCTAssertEqual(read, ballot)

        // A new value is served without registering again.
        try await p.publish(service: Self.service, characteristic: Self.ballotChar, value: [9, 8, 7])
        read = try await mock.mock("ReadApplicationValue", [.string("hci0"), .string(Self.service.description),
                                                              .string(Self.ballotChar.description)]).decode([UInt8].self)
        XCTAssertEqual(read, [9, 8, 7])
        let calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "RegisterApplication" }.count, 1)
    }

    func testShutdownUnregistersBoth() async throws {
        try await startMock()
        let p = makePeripheral()
        try await p.publish(service: Self.service, characteristic: Self.ballotChar, value: [1, 2, 3])
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1, 2, 3]))
        let adsBefore = try await mock.advertisements()
        let appsBefore = try await mock.applications()
        XCTAssertEqual(adsBefore.count, 1)
        XCTAssertEqual(appsBefore.count, 1)
        let status = Collector(p.status())
        await p.shutdown()
        await p.shutdown()  // idempotent
        let ads = try await mock.advertisements()
        let apps = try await mock.applications()
        XCTAssertTrue(ads.isEmpty)
        XCTAssertTrue(apps.isEmpty)
        let calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "UnregisterAdvertisement" }.count, 1)
        XCTAssertEqual(calls.filter { $0 == "UnregisterApplication" }.count, 1)
        try await status.wait("stopped") { $0.last?.state == .stopped }
    }

    func testStopAdvertisingIsIdempotent() async throws {
        try await startMock()
        let p = makePeripheral()
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [5]))
        try await p.stopAdvertising()
        try await p.stopAdvertising()
        let ads = try await mock.advertisements()
        XCTAssertTrue(ads.isEmpty)
    }

    func testNoFreeAdvertisingInstanceIsAClearError() async throws {
        try await startMock(#"{"instances": 1}"#)
        let first = makePeripheral("/org/clicker/one")
        try await first.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1]))
        let second = makePeripheral("/org/clicker/two")
        do {
            try await second.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [2]))
            XCTFail("second advertisement should not fit")
        } catch let e as BlueZError {
            XCTAssertEqual(e, .noFreeAdvertisingInstance("hci0"))
            XCTAssertTrue(e.description.contains("NotPermitted"))
            XCTAssertTrue(e.description.contains("another program"))
        }
        let ads = try await mock.advertisements()
        XCTAssertEqual(ads.count, 1)
    }

    func testTooLongDataIsAClearError() async throws {
        try await startMock()
        let p = makePeripheral()
        do {
            try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [UInt8](repeating: 7, count: 30)))
            XCTFail("30 bytes should not fit a legacy advertisement")
        } catch let e as BlueZError {
            XCTAssertEqual(e, .advertisementTooLong(30))
            XCTAssertTrue(e.description.contains("InvalidLength"))
        }
        // Nothing stays exported or registered after the refusal; a fitting payload then works.
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [UInt8](repeating: 7, count: 24)))
        let ads = try await mock.advertisements()
        XCTAssertEqual(ads.count, 1)
    }

    func testIntervalIgnoredWithoutExperimentalFeatures() async throws {
        try await startMock()
        let p = makePeripheral()
        XCTAssertEqual(p.intervalSupport, .unknown)
        let status = Collector(p.status())
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], interval: .milliseconds(50)))
        XCTAssertEqual(p.intervalSupport, .ignored)
        let s = try await status.wait("advertising") { $0.last?.state == .advertising }
        XCTAssertTrue(s.last?.lastError?.contains("Experimental = true") ?? false, "\(String(describing: s.last))")
        XCTAssertTrue(s.last?.lastError?.contains("1.28 s") ?? false)
    }

    /// Where bluetoothd ignores intervals, a new interval alone (the beacon asking voters to slow down) does not
    /// take the advertisement off the air to register it again; new data does.
    func testAnIgnoredIntervalChangeDoesNotRegisterAgain() async throws {
        try await startMock()
        let p = makePeripheral()
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], interval: .milliseconds(50)))
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], interval: .milliseconds(10_240)))
        var calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "RegisterAdvertisement" }.count, 1)
        XCTAssertEqual(calls.filter { $0 == "UnregisterAdvertisement" }.count, 0)
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [2], interval: .milliseconds(10_240)))
        calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "RegisterAdvertisement" }.count, 2)
        let ads = try await mock.advertisements()
        XCTAssertEqual(Self.manufacturerData(ads.first?.2 ?? [:]), [0xFFFF: [2]])
    }

    func testIntervalHonouredWithExperimentalFeatures() async throws {
        try await startMock(#"{"experimental": true}"#)
        let p = makePeripheral()
        let status = Collector(p.status())
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], interval: .milliseconds(50)))
        XCTAssertEqual(p.intervalSupport, .honoured)
        let s = try await status.wait("advertising") { $0.last?.state == .advertising }
        XCTAssertNil(s.last?.lastError)
    }

    func testReleaseIsHandled() async throws {
        try await startMock()
        let p = makePeripheral()
        let status = Collector(p.status())
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1]))
        let released = try await mock.mock("ReleaseAdvertisements", [.string("hci0")]).decode(UInt32.self)
        XCTAssertEqual(released, 1)
        let s = try await status.wait("stopped after Release") { $0.last?.state == .stopped }
        XCTAssertTrue(s.last?.lastError?.contains("released") ?? false)
        // Advertising again works.
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [2]))
        let ads = try await mock.advertisements()
        XCTAssertEqual(ads.count, 1)
    }

    func testMissingAdapterAndBluetoothd() async throws {
        // No bluetoothd at all.
        var p = makePeripheral()
        do {
            try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1]))
            XCTFail("no bluetoothd")
        } catch let e as BlueZError {
            XCTAssertEqual(e, .bluetoothdNotRunning)
        }
        // bluetoothd without adapters.
        mock = try await BlueZMock(bus: bus)
        p = makePeripheral()
        do {
            try await p.publish(service: Self.service, characteristic: Self.ballotChar, value: [1])
            XCTFail("no adapter")
        } catch let e as BlueZError {
            XCTAssertEqual(e, .noAdapter("any adapter", []))
        }
    }

    func testRegistersAgainAfterBluetoothdRestart() async throws {
        try await startMock()
        let p = makePeripheral()
        try await p.publish(service: Self.service, characteristic: Self.ballotChar, value: [4, 5, 6])
        try await p.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [4, 5, 6]))
        let status = Collector(p.status())
        mock.kill()
        try await status.wait("recovering") { $0.last?.state == .recovering }
        try await startMock()
        try await eventually("advertisement registered again") { try await self.mock.advertisements().count == 1 }
        try await eventually("application registered again") { try await self.mock.applications().count == 1 }
        let ads = try await mock.advertisements()
        XCTAssertEqual(Self.manufacturerData(ads.first?.2 ?? [:]), [0xFFFF: [4, 5, 6]])
        try await status.wait("advertising again") { $0.last?.state == .advertising }
    }
}
