@testable import BlueZ
import ClickerTransport
import ClickerWire
import DBus
import Foundation
import XCTest

/// Tier 2: the tally's beacon (`BlueZCentral` as `BroadcasterTransport`) against python-dbusmock as
/// bluetoothd. The fake bluetoothd reads the advertisement back at registration (GetAll) and then follows
/// its PropertiesChanged as bluetoothd 5.66 does, recording every ManufacturerData it applied.
final class BlueZBeaconTests: XCTestCase {
    var bus: PrivateBus!
    var mock: BlueZMock!
    var centrals: [BlueZCentral] = []
    var peripherals: [BlueZPeripheral] = []

    static let beaconPath: DBusObjectPath = "/org/clicker/beacon/beacon0"
    static let voter = "00:AA:01:00:00:01"

    override func setUp() async throws {
        bus = try PrivateBus()
    }

    override func tearDown() async throws {
        for c in centrals { await c.shutdown() }
        for p in peripherals { await p.shutdown() }
        centrals = []
        peripherals = []
        mock?.kill()
        mock = nil
        bus?.stop()
        bus = nil
    }

    func startMock(_ parameters: String? = nil) async throws {
        mock = try await BlueZMock(bus: bus, parameters: parameters)
        try await mock.addAdapter()
    }

    /// What a frame costs through these centrals: their 20 ms dwell and bluetoothd's refresh.
    static let frameTime: Duration = .milliseconds(20) + BlueZBeacon.frameChangeCost

    func makeCentral() -> BlueZCentral {
        var o = BlueZCentralOptions(bus: bus.target, discoveryRestartInterval: nil, staleDeviceTimeout: nil,
                                    callTimeout: .seconds(5), retryInterval: .milliseconds(200))
        o.beaconMinimumDwell = .milliseconds(20)
        let c = BlueZCentral(options: o)
        centrals.append(c)
        return c
    }

    /// Distinct frames of `length` bytes (STATE-like first bytes, then a counter).
    static func frames(_ n: Int, length: Int = 24, seed: UInt8 = 0) -> [[UInt8]] {
        (0..<n).map { i -> [UInt8] in
            var frame: [UInt8] = [0xCB, 0x2B, seed, UInt8(i)]
            for k in 0..<(length - 4) { frame.append(UInt8((k * 7 + i * 13) & 0xFF)) }
            return frame
        }
    }

    func testBeaconIsABroadcastWithOnlyManufacturerDataAndRotatesWhileScanning() async throws {
        try await startMock()
        try await mock.addDevice(Self.voter)
        let central = makeCentral()
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await status.wait("scanning") { $0.last?.state == .scanning }

        let caps = try await central.broadcastCapabilities()
        XCTAssertEqual(caps, BroadcastCapabilities(maxFrameLength: 24, extended: false).withFrameTime(slack: BlueZBeacon.frameChangeCost, minimum: Self.frameTime))
        let probes = try await mock.calls("/org/bluez/hci0").filter { $0 == "RegisterAdvertisement" }.count
        XCTAssertEqual(probes, 1, "an extended frame was tried (and refused, as by BlueZ 5.66)")

        let frames = Self.frames(3)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: frames, interval: .milliseconds(100)))
        let ads = try await mock.advertisements()
        XCTAssertEqual(ads.count, 1)
        XCTAssertEqual(ads.first?.1, Self.beaconPath.rawValue)
        let props = ads.first?.2 ?? [:]
        XCTAssertEqual(props["Type"]?.unwrapped, .string("broadcast"))
        XCTAssertEqual(BlueZPeripheralTests.manufacturerData(props), [0xFFFF: frames[0]])
        // Nothing the host would add bytes for, and no extended advertising for legacy frames.
        for key in ["Includes", "LocalName", "Appearance", "TxPower", "Discoverable", "SecondaryChannel", "ServiceData",
                    "ServiceUUIDs", "Data"] {
            XCTAssertNil(props[key], "\(key) must not be set")
        }
        XCTAssertEqual(Set(props.keys), ["Type", "ManufacturerData", "MinInterval", "MaxInterval"])

        // The frames rotate, in order, through PropertiesChanged that bluetoothd applies; nothing re-registers.
        let history = try await eventuallyHistory(atLeast: 5)
        XCTAssertEqual(Array(history.prefix(5)), [frames[0], frames[1], frames[2], frames[0], frames[1]])
        let calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "RegisterAdvertisement" }.count, probes + 1)
        XCTAssertEqual(calls.filter { $0 == "UnregisterAdvertisement" }.count, 0)
        XCTAssertGreaterThanOrEqual(central.broadcastStatistics.frameChanges, 4)
        // bluetoothd's TxPower write-back after each refresh starts no refresh of its own: one per applied frame.
        try await central.stopBroadcasting()
        let writes = try await mock.mock("GetTxPowerWrites", [.string("hci0")]).decode(UInt32.self)
        XCTAssertEqual(Int(writes), 1 + central.broadcastStatistics.frameChanges,
                       "one write-back per registration and per frame change, none caused by a write-back")

        // Discovery goes on meanwhile: a voter's ballot still arrives.
        let discovering = try await mock.property("/org/bluez/hci0", "org.bluez.Adapter1", "Discovering")
        XCTAssertEqual(discovering.unwrapped, .boolean(true))
        try await mock.advertise(Self.voter, data: [1, 2, 3], rssi: -60)
        let got = try await reports.wait("the ballot") { !$0.isEmpty }
        XCTAssertEqual(got.first?.data, [1, 2, 3])
    }

    func testReplacementStartsWithItsFirstFrameWithoutRegisteringAgain() async throws {
        try await startMock()
        let central = makeCentral()
        let first = Self.frames(2, seed: 1)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: first, interval: .milliseconds(100)))
        let second = Self.frames(1, seed: 2)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: second, interval: .milliseconds(100)))
        let history = try await eventuallyHistory(atLeast: 2) { $0.last == second[0] }
        XCTAssertEqual(history.first, first[0])
        XCTAssertEqual(history.last, second[0])
        let ads = try await mock.advertisements()
        XCTAssertEqual(BlueZPeripheralTests.manufacturerData(ads.first?.2 ?? [:]), [0xFFFF: second[0]])
        var calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "RegisterAdvertisement" }.count, 1)

        // Without experimental features bluetoothd ignores intervals: a new one neither registers again nor is sent.
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: second, interval: .milliseconds(250)))
        calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "RegisterAdvertisement" }.count, 1)
        XCTAssertEqual(calls.filter { $0 == "UnregisterAdvertisement" }.count, 0)
        let props = try await mock.advertisements().first?.2 ?? [:]
        XCTAssertEqual(props["MinInterval"]?.unwrapped, .uint32(100))
        XCTAssertEqual(central.broadcastStatistics.intervalChanges, 0)
    }

    /// Where bluetoothd applies intervals, a new one goes out as two property changes, never through
    /// MinInterval > MaxInterval (a refresh the kernel refuses, which bluetoothd 5.66 answers by aborting),
    /// and the advertisement is not registered again: bluetoothd 5.66 can crash when an advertisement is
    /// unregistered with refreshes queued for it (seen in the QEMU guest).
    func testANewIntervalIsTwoPropertyChangesInASafeOrderWithoutRegisteringAgain() async throws {
        try await startMock(#"{"experimental": true}"#)
        let central = makeCentral()
        let frames = Self.frames(2)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: frames, interval: .milliseconds(100)))
        for ms in [400, 30, 1000, 20] {
            try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: frames, interval: .milliseconds(ms)))
            try await eventually("interval \(ms) applied") {
                let props = try await self.mock.advertisements().first?.2 ?? [:]
                return props["MinInterval"]?.unwrapped == .uint32(UInt32(ms)) && props["MaxInterval"]?.unwrapped == .uint32(UInt32(ms))
            }
        }
        let calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "RegisterAdvertisement" }.count, 1, "registered once")
        XCTAssertEqual(calls.filter { $0 == "UnregisterAdvertisement" }.count, 0)
        let reply = try await mock.mock("GetRefreshErrors", [.string("hci0")])
        XCTAssertEqual(try reply.arguments().first, .uint32(0), "a refresh passed through MinInterval > MaxInterval")
        XCTAssertEqual(central.broadcastStatistics.intervalChanges, 4)
    }

    /// Stopping waits until the last frame change is `beaconUnregisterSettle` old before it unregisters.
    func testStopLetsTheLastFrameChangesSettleBeforeUnregistering() async throws {
        try await startMock()
        var o = BlueZCentralOptions(bus: bus.target, discoveryRestartInterval: nil, staleDeviceTimeout: nil,
                                    callTimeout: .seconds(5), retryInterval: .milliseconds(200))
        o.beaconMinimumDwell = .milliseconds(20)
        o.beaconUnregisterSettle = .milliseconds(600)
        let central = BlueZCentral(options: o)
        centrals.append(central)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: Self.frames(3), interval: .milliseconds(20)))
        _ = try await eventuallyHistory(atLeast: 3)
        let start = ContinuousClock.now
        try await central.stopBroadcasting()
        let took = ContinuousClock.now - start
        XCTAssertGreaterThanOrEqual(took, .milliseconds(500), "unregistered while frame changes were fresh")
        let ads = try await mock.advertisements()
        XCTAssertTrue(ads.isEmpty)
    }

    func testStopBroadcastingUnregistersAndStopsTheRotation() async throws {
        try await startMock()
        let central = makeCentral()
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: Self.frames(3), interval: .milliseconds(20)))
        _ = try await eventuallyHistory(atLeast: 2)
        try await central.stopBroadcasting()
        try await central.stopBroadcasting()  // idempotent
        let ads = try await mock.advertisements()
        XCTAssertTrue(ads.isEmpty)
        let calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "UnregisterAdvertisement" }.count, 1)
        let changes = central.broadcastStatistics.frameChanges
        // Broadcasting again works and starts from the new payload's first frame.
        let again = Self.frames(1, seed: 9)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: again))
        let props = try await mock.advertisements().first?.2 ?? [:]
        XCTAssertEqual(BlueZPeripheralTests.manufacturerData(props), [0xFFFF: again[0]])
        XCTAssertEqual(central.broadcastStatistics.frameChanges, changes, "a stopped rotation changed a frame")
    }

    func testNoFrameChangeWhileTheAdapterIsPoweredOff() async throws {
        // BlueZ 5.66 aborts when the kernel refuses a refresh that a property change started: hold the frames.
        try await startMock()
        let central = makeCentral()
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await status.wait("scanning") { $0.last?.state == .scanning }
        let frames = Self.frames(3)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: frames, interval: .milliseconds(20)))
        _ = try await eventuallyHistory(atLeast: 2)
        try await mock.setPowered(false)
        try await status.wait("powered off seen") { $0.last?.state == .recovering }
        let before = try await history().count
        try await eventually("three changes held") { central.broadcastStatistics.heldWhilePoweredOff >= 3 }
        let during = try await history().count
        XCTAssertLessThanOrEqual(during, before + 1, "frames changed while the adapter was off")  // one may have been in flight
        try await mock.setPowered(true)
        _ = try await eventuallyHistory(atLeast: during + 2)
        reports.cancel()
    }

    func testExtendedFramesWhereBlueZCarriesThem() async throws {
        try await startMock(#"{"ext_ad_len": 251}"#)
        let central = makeCentral()
        let caps = try await central.broadcastCapabilities()
        // What one extended advertising report carries to a voter behind BlueZ (229 bytes of AD): 222, within
        // the 238 that bluetoothd 5.82 and Linux 6.12 take of MaxAdvLen 251 (244 was refused there, and the
        // refusal killed bluetoothd).
        XCTAssertEqual(caps, BroadcastCapabilities(maxFrameLength: 222, extended: true).withFrameTime(slack: BlueZBeacon.frameChangeCost, minimum: Self.frameTime))
        // The probe registration is gone again.
        var ads = try await mock.advertisements()
        XCTAssertTrue(ads.isEmpty)

        let frames = Self.frames(2, length: 222)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: frames))
        ads = try await mock.advertisements()
        XCTAssertEqual(ads.count, 1)
        let props = ads.first?.2 ?? [:]
        XCTAssertEqual(props["SecondaryChannel"]?.unwrapped, .string("1M"))
        XCTAssertEqual(BlueZPeripheralTests.manufacturerData(props), [0xFFFF: frames[0]])
        let history = try await eventuallyHistory(atLeast: 2)
        XCTAssertEqual(history[1], frames[1])

        do {
            try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: Self.frames(1, length: 223)))
            XCTFail("223 bytes do not fit")
        } catch let e as TransportError {
            guard case .unsupported = e else { return XCTFail("\(e)") }
        }
    }

    func testAnAdapterWithShorterExtendedDataGetsWhatItsMaxAdvLenLeaves() async throws {
        // MaxAdvLen 200: 200 less what bluetoothd and the kernel keep (13), below one report's 222.
        try await startMock(#"{"ext_ad_len": 200, "experimental": true}"#)
        let caps = try await makeCentral().broadcastCapabilities()
        XCTAssertEqual(caps, BroadcastCapabilities(maxFrameLength: 187, extended: true).withFrameTime(slack: BlueZBeacon.frameChangeCost, minimum: Self.frameTime))
    }

    func testTheProbeIsNoFrameThatAVoterOrTheTallyTakesForOurs() async throws {
        // The probe is on the air for a moment and any scanner near may hear it: it must read as someone else's data.
        for length in [25, 200, 244] {
            let probe = BlueZBeacon.probeFrame(length: length)
            XCTAssertEqual(probe.count, length)
            XCTAssertNotEqual(probe.first, BallotFormat.magic, "a frame with the clicker magic is malformed, not someone else's")
        }
        // And it is what bluetoothd was offered: the stand-in records the first registration's data.
        try await startMock(#"{"ext_ad_len": 251}"#)
        let central = makeCentral()
        _ = try await central.broadcastCapabilities()
        let offered = try await mock.mock("GetRegisteredData", [.string("hci0")])
        guard case .array(_, let entries)? = try offered.arguments().first else { return XCTFail("no registrations recorded") }
        let frames: [[UInt8]] = entries.compactMap { if case .bytes(let b) = $0 { b } else { nil } }
        XCTAssertEqual(frames.count, 1, "one probe")
        XCTAssertNotEqual(frames.first?.first, BallotFormat.magic)
        XCTAssertEqual(frames.first?.count, 222, "no longer than one report carries, within what bluetoothd 5.82 takes")
    }

    func testAShortFrameOnAnExtendedAdapterKeepsTheExtendedShape() async throws {
        // The closing STATE (24 bytes) after extended frames: the same shape, SecondaryChannel included, and no new registration.
        try await startMock(#"{"ext_ad_len": 251}"#)
        let central = makeCentral()
        _ = try await central.broadcastCapabilities()
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: Self.frames(2, length: 222)))
        let before = try await mock.calls("/org/bluez/hci0").filter { $0 == "RegisterAdvertisement" }.count
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: Self.frames(1, length: 24, seed: 9)))
        let ads = try await mock.advertisements()
        XCTAssertEqual(ads.count, 1)
        XCTAssertEqual(ads.first?.2["SecondaryChannel"]?.unwrapped, .string("1M"), "the closing frame is extended too")
        let after = try await mock.calls("/org/bluez/hci0").filter { $0 == "RegisterAdvertisement" }.count
        XCTAssertEqual(after, before, "a shorter frame did not register the advertisement again")
        _ = try await eventuallyHistory(atLeast: 1)
        let shown = try await history().last
        XCTAssertEqual(shown, Self.frames(1, length: 24, seed: 9)[0])
    }

    func testAClosingFrameRegisteredAfterABluetoothdRestartIsExtendedLikeTheFramesBefore() async throws {
        // bluetoothd restarts, and the tally's closing STATE (24 bytes) is what it registers then: extended, as
        // the frames before it were, not a legacy advertisement without SecondaryChannel.
        try await startMock(#"{"ext_ad_len": 251}"#)
        let central = makeCentral()
        let status = Collector(central.broadcastStatus())
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: Self.frames(2, length: 132)))
        let before = try await mock.advertisements().first?.2 ?? [:]
        XCTAssertEqual(before["SecondaryChannel"]?.unwrapped, .string("1M"))
        mock.kill()
        try await status.wait("recovering") { $0.last?.state == .recovering }
        let closing = Self.frames(1, length: 24, seed: 7)
        do {
            try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: closing))
            XCTFail("no bluetoothd")
        } catch {}
        try await startMock(#"{"ext_ad_len": 251}"#)
        try await eventually("the closing frame registered again") {
            let ads = try await self.mock.advertisements()
            return ads.count == 1 && BlueZPeripheralTests.manufacturerData(ads.first?.2 ?? [:]) == [0xFFFF: closing[0]]
        }
        let props = try await mock.advertisements().first?.2 ?? [:]
        XCTAssertEqual(props["SecondaryChannel"]?.unwrapped, .string("1M"), "the closing frame went out legacy")
    }

    func testABluetooth4AdapterCannotBroadcastWhileItScans() async throws {
        // No SupportedSecondaryChannels: the kernel has no LE Extended Advertising for this controller, and (as in
        // the QEMU guest with bluetoothd 5.66) a broadcast registered while it discovers fails.
        try await startMock(#"{"legacy_controller": true}"#)
        let central = makeCentral()
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await status.wait("scanning") { $0.last?.state == .scanning }
        let caps = try await central.broadcastCapabilities()
        XCTAssertEqual(caps, BroadcastCapabilities(maxFrameLength: 24, extended: false, whileScanning: false).withFrameTime(slack: BlueZBeacon.frameChangeCost, minimum: Self.frameTime))
        let calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "RegisterAdvertisement" }.count, 0, "no extended probe without secondary channels")
        do {
            try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: Self.frames(1)))
            XCTFail("the stand-in refuses a broadcast while discovering, as the kernel does on such a controller")
        } catch {}
        reports.cancel()
    }

    func testBlueZWithoutExtendedDataGivesLegacyFramesOnly() async throws {
        // The adapter lists secondary channels, but (as BlueZ 5.66) no advertisement carries more than 31 bytes.
        try await startMock(#"{"experimental": true}"#)
        let central = makeCentral()
        let caps = try await central.broadcastCapabilities()
        XCTAssertEqual(caps, BroadcastCapabilities(maxFrameLength: 24, extended: false).withFrameTime(slack: BlueZBeacon.frameChangeCost, minimum: Self.frameTime))
        let calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertEqual(calls.filter { $0 == "RegisterAdvertisement" }.count, 1, "the probe was tried")
        do {
            try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: Self.frames(1, length: 25)))
            XCTFail("25 bytes do not fit a legacy frame")
        } catch let e as TransportError {
            guard case .unsupported = e else { return XCTFail("\(e)") }
        }
        let ads = try await mock.advertisements()
        XCTAssertTrue(ads.isEmpty)
        // With experimental features the interval is applied.
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: Self.frames(1), interval: .milliseconds(30)))
        XCTAssertEqual(central.broadcastIntervalSupport, .honoured)
        let props = try await mock.advertisements().first?.2 ?? [:]
        XCTAssertEqual(props["MinInterval"]?.unwrapped, .uint32(30))
    }

    func testRefusalsAreClearErrorsAndCountingGoesOn() async throws {
        try await startMock(#"{"instances": 1}"#)
        try await mock.addDevice(Self.voter)
        // Another program holds the only advertising instance.
        let other = BlueZPeripheral(options: BlueZPeripheralOptions(bus: bus.target, objectPath: "/org/other"))
        peripherals.append(other)
        try await other.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1]))

        let central = makeCentral()
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await status.wait("scanning") { $0.last?.state == .scanning }
        do {
            try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: Self.frames(2)))
            XCTFail("no free instance")
        } catch let e as BlueZError {
            XCTAssertEqual(e, .noFreeAdvertisingInstance("hci0"))
        }
        XCTAssertEqual(central.broadcastIntervalSupport, .ignored)
        try await mock.advertise(Self.voter, data: [7, 7], rssi: -50)
        let got = try await reports.wait("a ballot after the refusal") { !$0.isEmpty }
        XCTAssertEqual(got.first?.data, [7, 7])

        // bluetoothd gone: a clear error, never a crash; the scanning side shows it is recovering.
        mock.kill()
        try await status.wait("recovering") { $0.last?.state == .recovering }
        do {
            try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: Self.frames(1)))
            XCTFail("no bluetoothd")
        } catch let e as BlueZError {
            XCTAssertEqual(e, .bluetoothdNotRunning)
        }
        try await central.stopBroadcasting()
    }

    func testReleasedBeaconIsRegisteredByTheNextBroadcast() async throws {
        try await startMock()
        let central = makeCentral()
        let status = Collector(central.broadcastStatus())
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: Self.frames(2)))
        let released = try await mock.mock("ReleaseAdvertisements", [.string("hci0")]).decode(UInt32.self)
        XCTAssertEqual(released, 1)
        let s = try await status.wait("stopped after Release") { $0.last?.state == .stopped }
        XCTAssertTrue(s.last?.lastError?.contains("released") ?? false)
        let next = Self.frames(1, seed: 3)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: next))
        let props = try await mock.advertisements().first?.2 ?? [:]
        XCTAssertEqual(BlueZPeripheralTests.manufacturerData(props), [0xFFFF: next[0]])
    }

    func testRegistersAgainAfterBluetoothdRestart() async throws {
        try await startMock()
        let central = makeCentral()
        let frames = Self.frames(2, seed: 5)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: frames))
        let status = Collector(central.broadcastStatus())
        mock.kill()
        try await status.wait("recovering") { $0.last?.state == .recovering }
        try await startMock()
        try await eventually("the beacon registered again") { try await self.mock.advertisements().count == 1 }
        let props = try await mock.advertisements().first?.2 ?? [:]
        XCTAssertEqual(props["Type"]?.unwrapped, .string("broadcast"))
        XCTAssertEqual(BlueZPeripheralTests.manufacturerData(props), [0xFFFF: frames[0]])
        try await status.wait("advertising again") { $0.last?.state == .advertising }
    }

    // MARK: Helpers

    /// The beacon's ManufacturerData values (company 0xFFFF) as the fake bluetoothd applied them.
    func history() async throws -> [[UInt8]] {
        let reply = try await mock.mock("GetAdvertisementHistory", [.string("hci0"), .objectPath(Self.beaconPath)])
        guard case .array(_, let entries)? = try reply.arguments().first else { return [] }
        return entries.compactMap { entry -> [UInt8]? in
            guard case .array(_, let pairs) = entry else { return nil }
            for pair in pairs {
                if case .structure(let f) = pair, f.count == 2, f[0] == .uint16(0xFFFF), case .bytes(let b) = f[1] { return b }
            }
            return nil
        }
    }

    func eventuallyHistory(atLeast n: Int, file: StaticString = #filePath, line: UInt = #line,
                           where condition: @escaping @Sendable ([[UInt8]]) -> Bool = { _ in true }) async throws -> [[UInt8]] {
        try await eventually("\(n) frames applied by bluetoothd", file: file, line: line) {
            let h = try await self.history()
            return h.count >= n && condition(h)
        }
        return try await history()
    }
}
