import ClickerTestSupport
@testable import BlueZ
import ClickerTransport
import DBus
import Foundation
import Logging
import XCTest

/// Tier 2: bluetoothd gone on a bus that tries to start it on demand and cannot (a service file names
/// `org.bluez`, but its Exec fails, as on a machine without systemd). The bus answers
/// `org.freedesktop.DBus.Error.Spawn.*`, which means what `ServiceUnknown` means: bluetoothd is not running.
final class BlueZActivationTests: XCTestCase {
    var bus: PrivateBus!
    var mock: BlueZMock?
    var services: URL!

    override func setUp() async throws {
        services = FileManager.default.temporaryDirectory.appendingPathComponent("clicker-services-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
    }

    override func tearDown() async throws {
        mock?.kill()
        mock = nil
        bus?.stop()
        bus = nil
        try? FileManager.default.removeItem(at: services)
    }

    /// A service file for org.bluez whose Exec is `exec`.
    func serve(_ exec: String) throws {
        try "[D-BUS Service]\nName=org.bluez\nExec=\(exec)\n".write(to: services.appendingPathComponent("org.bluez.service"),
                                                                    atomically: true, encoding: .utf8)
    }

    func testAnExecThatFailsIsASpawnErrorThatMeansBluetoothdIsGone() async throws {
        try serve(services.appendingPathComponent("no-such-bluetoothd").path)
        bus = try PrivateBus(serviceDirectory: services)
        let conn = try await DBusConnection.connect(bus.target)
        defer { conn.close() }
        do {
            _ = try await conn.call(destination: BlueZ.service, path: BlueZ.root, interface: BlueZ.objectManager,
                                    method: "GetManagedObjects", timeout: .seconds(10))
            XCTFail("nothing can own org.bluez")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, "org.freedesktop.DBus.Error.Spawn.ExecFailed")
            XCTAssertTrue(e.meansBluetoothdGone)
        }
        for name in ["Spawn.ChildExited", "Spawn.ChildSignaled", "Spawn.ServiceNotFound", "Spawn.FailedToSetup", "Spawn.NoMemory"] {
            XCTAssertTrue(DBusError(name: "org.freedesktop.DBus.Error." + name, message: "").meansBluetoothdGone, name)
        }
        XCTAssertFalse(DBusError(name: "org.bluez.Error.Failed", message: "").meansBluetoothdGone)
    }

    /// The tally's radio while the bus keeps failing to start bluetoothd: "bluetoothd is not running" (not
    /// "BlueZ refused"), logged once however often it looks again, and the beacon's refusals once too; it
    /// scans as soon as bluetoothd appears.
    func testTheTallyWaitsForBluetoothdLogsItOnceAndScansWhenItAppears() async throws {
        // Each try to start bluetoothd leaves a line in `spawns`, then fails.
        let spawns = services.appendingPathComponent("spawns")
        let script = services.appendingPathComponent("fake-bluetoothd")
        try "#!/bin/sh\necho spawn >> '\(spawns.path)'\nexit 1\n".write(to: script, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        try serve(script.path)
        bus = try PrivateBus(serviceDirectory: services)
        func spawned() -> Int { ((try? String(contentsOf: spawns, encoding: .utf8)) ?? "").split(separator: "\n").count }

        let logged = LogLines()
        let central = BlueZCentral(options: BlueZCentralOptions(bus: bus.target, discoveryRestartInterval: nil, staleDeviceTimeout: nil,
                                                                callTimeout: .seconds(5), retryInterval: .milliseconds(50),
                                                                waitForRadio: true),
                                   logger: Logger(label: "test", factory: { _ in logged }))
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: 0xFFFF))
        try await status.wait("recovering: bluetoothd is not running") {
            $0.last?.lastError == BlueZError.bluetoothdNotRunning.description
        }
        for _ in 0..<3 {
            do {
                try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: [[1, 2, 3]]))
                XCTFail("no bluetoothd")
            } catch let e as BlueZError {
                XCTAssertEqual(e, .bluetoothdNotRunning)
            }
        }
        try await eventually("the radio looked for bluetoothd again and again", timeout: .seconds(30)) { spawned() >= 5 }
        let notRunning = logged.messages.filter { $0 == BlueZError.bluetoothdNotRunning.description }
        XCTAssertEqual(notRunning.count, 1, "logged at every retry: \(logged.messages)")
        XCTAssertEqual(logged.messages.filter { $0 == "beacon: \(BlueZError.bluetoothdNotRunning)" }.count, 1,
                       "each refused broadcast logged: \(logged.messages)")
        XCTAssertFalse(logged.messages.contains { $0.contains("refused") }, "\(logged.messages)")

        mock = try await BlueZMock(bus: bus)
        try await mock?.addAdapter()
        try await status.wait("scanning once bluetoothd is there", timeout: .seconds(20)) { $0.last?.state == .scanning }
        reports.cancel()
        await central.shutdown()
    }
}
