@testable import BlueZ
import ClickerDoctor
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import DBus
import Foundation
import XCTest

/// Tier 2: `doctor` against the bluetoothd stand-in, as a bluetoothd 5.66 (no extended data, no experimental
/// features), a 5.82 with experimental features (MaxAdvLen 251), and a Bluetooth 4 controller. The findings
/// are what the stand-in answered and what was tried on it; the report concludes from them.
final class BlueZDoctorTests: XCTestCase {
    var bus: PrivateBus!
    var mock: BlueZMock!
    var savedPath: String?
    var fakeDaemon: URL?

    override func setUp() async throws {
        bus = try PrivateBus()
    }

    override func tearDown() async throws {
        mock?.kill()
        mock = nil
        bus?.stop()
        bus = nil
        if let savedPath { setenv("PATH", savedPath, 1) }
        if let fakeDaemon { try? FileManager.default.removeItem(at: fakeDaemon) }
    }

    func startMock(_ parameters: String? = nil, adapter: Bool = true) async throws {
        mock = try await BlueZMock(bus: bus, parameters: parameters)
        if adapter { try await mock.addAdapter() }
    }

    /// A `bluetoothd` first on PATH that answers `--version` with `version`, as the distribution's does.
    func bluetoothdOnPath(_ version: String) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("doctor-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let exe = dir.appendingPathComponent("bluetoothd")
        try "#!/bin/sh\n[ \"$1\" = --version ] && echo \(version)\n".write(to: exe, atomically: true, encoding: .utf8)
        chmod(exe.path, 0o755)
        fakeDaemon = dir
        savedPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        setenv("PATH", "\(dir.path):\(savedPath ?? "")", 1)
    }

    func options(_ role: DoctorFindings.Role, listen: Duration = .seconds(2), clock: RadioClock = RadioClock()) -> BlueZDoctor.Options {
        BlueZDoctor.Options(bus: bus.target, role: role, listen: listen, callTimeout: .seconds(5),
                            isBeacon: BeaconCodec.isBeaconFrame, clock: clock)
    }

    func examine(_ role: DoctorFindings.Role, listen: Duration = .seconds(2)) async -> DoctorFindings {
        await BlueZDoctor.examine(options(role, listen: listen))
    }

    /// What the stand-in was offered to broadcast: no frame a follower takes for one.
    func assertOfferedOnlyProbeFrames(file: StaticString = #filePath, line: UInt = #line) async throws {
        let offered = try await mock.mock("GetRegisteredData", [.string("hci0")])
        guard case .array(_, let entries)? = try offered.arguments().first else { return XCTFail("no registrations", file: file, line: line) }
        let frames: [[UInt8]] = entries.compactMap { if case .bytes(let b) = $0 { b } else { nil } }
        XCTAssertFalse(frames.isEmpty, "something was tried", file: file, line: line)
        for f in frames {
            XCTAssertEqual(f.withUnsafeBytes { BeaconCodec.kind(of: $0, voteID: 4821) }.map(\.0), .failure(.notOurs), file: file, line: line)
            XCTAssertFalse(BeaconCodec.isBeaconFrame(f), file: file, line: line)
        }
    }

    func testBluetoothd566LegacyFramesTriedAndTheWayOutNamed() async throws {
        try bluetoothdOnPath("5.66")
        try await startMock()  // MaxAdvLen 31 for every advertisement, as 5.66's bt_ad; no experimental features
        let f = await examine(.tally)
        XCTAssertEqual(f.bluetoothd.version, "5.66")
        XCTAssertTrue(f.bluetoothd.source.contains("on PATH"), f.bluetoothd.source)
        XCTAssertEqual(f.access, .allowed)
        XCTAssertEqual(f.chosen, "hci0")
        XCTAssertEqual(f.adapters.map(\.extendedAdvertising), [true], "the controller lists secondary channels")
        XCTAssertEqual(f.broadcastWhileScanning, .worked)
        guard case .failed = f.extendedFrames else { return XCTFail("\(f.extendedFrames)") }
        let r = DoctorReport(f)
        XCTAssertEqual(r.exitStatus, 0)
        XCTAssertEqual(r.reach, .legacy)
        XCTAssertTrue(r.advice.contains { $0.contains("bluetoothd 5.69 or later") && $0.contains("5.66") }, "\(r.advice)")
        XCTAssertTrue(r.advice.contains { $0.contains("Experimental = true") }, "no SupportedFeatures listed")
        try await assertOfferedOnlyProbeFrames()
        let calls = try await mock.calls("/org/bluez/hci0")
        XCTAssertTrue(calls.contains("StartDiscovery"), "the broadcast was tried while the adapter scanned")
        let left = try await mock.advertisements()
        XCTAssertTrue(left.isEmpty, "nothing stays registered: \(left.map(\.1))")
    }

    func testBluetoothd582ExtendedFramesTried() async throws {
        try bluetoothdOnPath("5.82")
        try await startMock(#"{"ext_ad_len": 251, "experimental": true}"#)
        let f = await examine(.tally)
        XCTAssertEqual(f.adapters.first?.maxAdvertisingLength, 251)
        XCTAssertEqual(f.adapters.first?.features.isEmpty, false)
        XCTAssertEqual(f.broadcastWhileScanning, .worked)
        XCTAssertEqual(f.extendedFrames, .worked)
        XCTAssertEqual(f.frameLength, BlueZBeacon.singleReportFrameLength)
        let r = DoctorReport(f)
        XCTAssertEqual(r.reach, .extended)
        XCTAssertEqual(r.advice, [])
        try await assertOfferedOnlyProbeFrames()
        let left = try await mock.advertisements()
        XCTAssertTrue(left.isEmpty, "nothing stays registered")
    }

    func testABluetooth4ControllerFailsTheBroadcastWhileScanningAndIsToldToGetABluetooth5Adapter() async throws {
        try await startMock(#"{"legacy_controller": true}"#)
        let f = await examine(.tally)
        guard case .failed = f.broadcastWhileScanning else { return XCTFail("\(f.broadcastWhileScanning)") }
        guard case .notTried = f.extendedFrames else { return XCTFail("\(f.extendedFrames)") }
        let r = DoctorReport(f)
        XCTAssertEqual(r.exitStatus, 0, "the tally counts without its beacon")
        XCTAssertEqual(r.reach, .off)
        XCTAssertTrue(r.advice.contains { $0.contains("Bluetooth 5 USB adapter") })
    }

    func testNoAdapterOrAnAdapterOffCannotRun() async throws {
        try await startMock(adapter: false)
        var r = DoctorReport(await examine(.tally))
        XCTAssertEqual(r.exitStatus, DoctorReport.cannotRunStatus)
        XCTAssertTrue(r.problems.first?.contains("no Bluetooth adapter") == true, "\(r.problems)")
        try await mock.addAdapter()
        try await mock.setPowered(false)
        r = DoctorReport(await examine(.vote))
        XCTAssertEqual(r.exitStatus, DoctorReport.cannotRunStatus)
        XCTAssertEqual(r.problems, ["adapter hci0 is powered off"])
    }

    func testNoBluetoothdCannotRun() async throws {
        let r = DoctorReport(await examine(.tally))  // the bus, and nobody owns org.bluez
        XCTAssertEqual(r.exitStatus, DoctorReport.cannotRunStatus)
        XCTAssertTrue(r.problems.first?.contains("bluetoothd is not running") == true, "\(r.problems)")
    }

    func testTheVotersDoctorHearsATallysBeaconAndOnlyThat() async throws {
        try await startMock()
        try await mock.addDevice("00:AA:01:00:00:09")
        try await mock.addDevice("00:AA:01:00:00:0A")
        // Nothing but someone else's data and the probe: no tally, for as long as the doctor listens on
        // its clock. (1.5 s: a deadline no timer of the central's shares; its tick is whole seconds.)
        try await mock.advertise("00:AA:01:00:00:09", data: BlueZBeacon.probeFrame(length: 24))
        let clock = TestClock()
        let listen = Duration.milliseconds(1500)
        let quiet = Task { [options = options(.vote, listen: listen, clock: RadioClock(clock))] in await BlueZDoctor.examine(options) }
        await clock.waitForSleeper(until: TestClock.Instant(offset: listen))
        clock.advance(by: listen)
        var f = await quiet.value
        XCTAssertEqual(f.tallyHeard, false)
        XCTAssertEqual(f.listenedSeconds, 1.5, "listened until the deadline on its clock")
        XCTAssertEqual(f.broadcastWhileScanning, .worked)
        // A tally's STATE frame (tagged), changing as the beacon's do, while the doctor listens.
        let tally: BlueZMock = mock
        let pusher = Task { [tally] in
            for i in 0..<200 where !Task.isCancelled {
                let frame = [BallotFormat.magic, BeaconFrameKind.state.typeByte(signed: false)] + [UInt8](repeating: UInt8(i & 0xFF), count: 22)
                try? await tally.advertise("00:AA:01:00:00:0A", data: frame)
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { pusher.cancel() }
        f = await examine(.vote, listen: .seconds(20))
        XCTAssertEqual(f.tallyHeard, true)
        XCTAssertEqual(DoctorReport(f).exitStatus, 0)
    }
}
