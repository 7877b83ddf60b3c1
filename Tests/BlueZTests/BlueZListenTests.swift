@testable import BlueZ
import ClickerTestSupport
import ClickerTransport
import DBus
import Foundation
import XCTest

/// Tier 2: the voter's listener (`BlueZPeripheral` as `ListenerTransport`) against python-dbusmock as
/// bluetoothd: discovery while the voter's advertisement stays registered, the beacon read from Device1
/// ManufacturerData in PropertiesChanged and InterfacesAdded.
final class BlueZListenTests: XCTestCase {
    var bus: PrivateBus!
    var mock: BlueZMock!
    var peripherals: [BlueZPeripheral] = []

    static let tally = "00:BB:02:00:00:01"
    static let stranger = "00:CC:03:00:00:01"

    override func setUp() async throws {
        bus = try PrivateBus()
        mock = try await BlueZMock(bus: bus)
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

    func makePeripheral(clock: RadioClock = RadioClock()) -> BlueZPeripheral {
        var options = BlueZPeripheralOptions(bus: bus.target, callTimeout: .seconds(5))
        options.clock = clock
        let p = BlueZPeripheral(options: options)
        peripherals.append(p)
        return p
    }

    static let state: [UInt8] = [0xCB, 0x2B, 0x12, 0x34] + (0..<20).map { UInt8($0) }

    func testFollowsTheBeaconThroughPropertiesChangedWhileAdvertising() async throws {
        try await mock.addDevice(Self.tally)
        let voter = makePeripheral()
        let ballot: [UInt8] = [0xCB, 0x20, 1, 2, 3]
        try await voter.advertise(AdvertisingPayload(companyID: 0xFFFF, data: ballot))
        let status = Collector(voter.listenerStatus())
        let reports = Collector(voter.listen(companyID: 0xFFFF, dutyCycle: .fast))
        try await status.wait("scanning") { $0.last?.state == .scanning }

        let filter = try [String: DBusValue](dbusValue: try await mock.property("/org/bluez/hci0", "org.bluez.Adapter1",
                                                                               "DiscoveryFilter"))
        XCTAssertEqual(filter["Transport"]?.unwrapped, .string("le"))
        XCTAssertEqual(filter["DuplicateData"]?.unwrapped, .boolean(true))

        // Another company's data first, then the beacon, then the next frame: only the beacon's come out, in order.
        try await mock.advertise(Self.tally, company: 0x004C, data: [9, 9, 9], rssi: -70)
        try await mock.advertise(Self.tally, data: Self.state, rssi: -55)
        let next = Self.state.reversed() as [UInt8]
        try await mock.advertise(Self.tally, data: next, rssi: -56)
        let got = try await reports.wait("two beacon frames") { $0.count >= 2 }
        XCTAssertEqual(got.map(\.data), [Self.state, next])
        XCTAssertEqual(got.map(\.companyID), [0xFFFF, 0xFFFF])
        XCTAssertEqual(got[0].address, DeviceAddress(Self.tally))
        XCTAssertEqual(got[0].rssi, -55)

        // The voter's advertisement stayed registered throughout.
        let ads = try await mock.advertisements()
        XCTAssertEqual(ads.count, 1)
        XCTAssertEqual(BlueZPeripheralTests.manufacturerData(ads.first?.2 ?? [:]), [0xFFFF: ballot])
    }

    func testBeaconFromANewAddressArrivesThroughInterfacesAdded() async throws {
        let voter = makePeripheral()
        let status = Collector(voter.listenerStatus())
        let reports = Collector(voter.listen(companyID: 0xFFFF, dutyCycle: .fast))
        try await status.wait("scanning") { $0.last?.state == .scanning }
        try await mock.mock("AddAdvertisingDevice", [.string("hci0"), .string(Self.stranger), .uint16(0x0006),
                                                     .bytes([1, 2]), .int16(-40)])
        try await mock.mock("AddAdvertisingDevice", [.string("hci0"), .string(Self.tally), .uint16(0xFFFF),
                                                     .bytes(Self.state), .int16(-48)])
        let got = try await reports.wait("the beacon") { !$0.isEmpty }
        XCTAssertEqual(got.count, 1)
        XCTAssertEqual(got[0].data, Self.state)
        XCTAssertEqual(got[0].address, DeviceAddress(Self.tally))
        XCTAssertEqual(got[0].rssi, -48)
    }

    /// The listener never stops its discovery to restart it: on bluetoothd 5.66 each StopDiscovery removes every
    /// beacon address heard so far (one device per frame change) with the scan off, which kept e2e followers deaf
    /// for seconds and through the tally's closing broadcast (`PeripheralListening.swift`). The tally's scan
    /// still restarts (its default), since it needs repeats of addresses it heard.
    func testListeningNeverRestartsDiscoveryOnATimer() async throws {
        let options = BlueZPeripheral.listenerOptions(BlueZPeripheralOptions(bus: bus.target))
        XCTAssertNil(options.discoveryRestartInterval)
        XCTAssertEqual(options.staleDeviceTimeout, .seconds(30), "beacon devices are still removed one by one when stale")
        XCTAssertNotNil(BlueZCentralOptions().discoveryRestartInterval)

        let clock = TestClock()
        let voter = makePeripheral(clock: RadioClock(clock))
        let status = Collector(voter.listenerStatus())
        let reports = Collector(voter.listen(companyID: 0xFFFF, dutyCycle: .fast))
        try await status.wait("scanning") { $0.last?.state == .scanning }
        // Past the 10 s the listener used to restart at, on the listener's clock: a frame from a new address
        // every second, each heard before the clock moves on; the clock moves in 100 ms steps, each taken
        // while the listener's timers wait on it.
        var sent = 0
        while clock.now.offset < .seconds(12) {
            let address = String(format: "00:DD:04:00:00:%02X", sent)
            try await mock.mock("AddAdvertisingDevice", [.string("hci0"), .string(address), .uint16(0xFFFF),
                                                         .bytes(Self.state + [UInt8(sent)]), .int16(-50)])
            sent += 1
            let expected = sent
            try await reports.wait("frame \(sent)") { $0.count >= expected }
            for _ in 0..<10 {
                await clock.waitForSleepers(1)
                clock.advance(by: .milliseconds(100))
            }
        }
        let got = try await reports.wait("every frame") { $0.count >= sent }
        XCTAssertEqual(got.map { $0.data.last }, (0..<sent).map { UInt8($0) })
        let calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "StartDiscovery" }.count, 1, "\(calls)")
        XCTAssertEqual(calls.filter { $0 == "StopDiscovery" }.count, 0, "\(calls)")
        let discovering = try await mock.property("/org/bluez/hci0", "org.bluez.Adapter1", "Discovering")
        XCTAssertEqual(discovering.unwrapped, .boolean(true))
    }

    func testBluetoothdVanishingEndsTheStreamWithAnError() async throws {
        try await mock.addDevice(Self.tally)
        let voter = makePeripheral()
        let status = Collector(voter.listenerStatus())
        let reports = Collector(voter.listen(companyID: 0xFFFF, dutyCycle: .slow))
        try await status.wait("scanning") { $0.last?.state == .scanning }
        try await mock.advertise(Self.tally, data: Self.state)
        try await reports.wait("a frame") { !$0.isEmpty }

        mock.kill()
        try await reports.end()
        XCTAssertEqual(reports.error as? BlueZError, .bluetoothdNotRunning)
        // Listening again while bluetoothd is away ends at once, with the same error.
        let again = Collector(voter.listen(companyID: 0xFFFF, dutyCycle: .fast))
        try await again.end("the new stream to end")
        XCTAssertEqual(again.error as? BlueZError, .bluetoothdNotRunning)

        // bluetoothd back: listening works again.
        mock = try await BlueZMock(bus: bus)
        try await mock.addAdapter()
        try await mock.addDevice(Self.tally)
        // (once the radio is acquired again: the engine is idle, without error)
        try await status.wait("radio back") { $0.last?.state == .stopped && $0.last?.lastError == nil }
        let third = Collector(voter.listen(companyID: 0xFFFF, dutyCycle: .fast))
        try await eventually("discovery restarted") {
            let d = try? await self.mock.property("/org/bluez/hci0", "org.bluez.Adapter1", "Discovering")
            return d?.unwrapped == .boolean(true)
        }
        try await mock.advertise(Self.tally, data: Self.state)
        let got = try await third.wait("a frame after the restart") { !$0.isEmpty }
        XCTAssertEqual(got.first?.data, Self.state)
    }

    func testPowerOffEndsTheStreamAndPowerOnAllowsListeningAgain() async throws {
        try await mock.addDevice(Self.tally)
        let voter = makePeripheral()
        let status = Collector(voter.listenerStatus())
        let reports = Collector(voter.listen(companyID: 0xFFFF, dutyCycle: .fast))
        try await status.wait("scanning") { $0.last?.state == .scanning }
        try await mock.setPowered(false)
        try await reports.end()
        XCTAssertEqual(reports.error as? BlueZError, .adapterPoweredOff("hci0"))
        XCTAssertFalse(voter.listener.state.withLock { $0.adapterPowered })
        try await mock.setPowered(true)
        try await eventually("power on seen") { voter.listener.state.withLock { $0.adapterPowered } }
        let again = Collector(voter.listen(companyID: 0xFFFF, dutyCycle: .fast))
        try await eventually("discovery on again") {
            let d = try? await self.mock.property("/org/bluez/hci0", "org.bluez.Adapter1", "Discovering")
            return d?.unwrapped == .boolean(true)
        }
        try await mock.advertise(Self.tally, data: Self.state)
        let got = try await again.wait("a frame after power on") { !$0.isEmpty }
        XCTAssertEqual(got.first?.data, Self.state)
    }

    func testNoBluetoothdEndsTheStreamAtOnce() async throws {
        mock.kill()
        mock = nil
        let voter = makePeripheral()
        let reports = Collector(voter.listen(companyID: 0xFFFF, dutyCycle: .fast))
        try await reports.end()
        XCTAssertEqual(reports.error as? BlueZError, .bluetoothdNotRunning)
    }
}
