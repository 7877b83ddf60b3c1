import BlueZ
import ClickerTestSupport
import ClickerTransport
import DBus
import Foundation
import XCTest

/// Tier 2: a GATT read whose caller went away while it waited for a connection slot (the tally shutting
/// down with reads queued) makes no Device1.Connect.
final class BlueZReadCancellationTests: XCTestCase {
    static let busy = "00:AA:06:00:00:01"
    static let queued = "00:AA:06:00:00:02"
    static let service = UUID128("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!
    static let ballotChar = UUID128("6e400002-b5a3-f393-e0a9-e50e24dcca9e")!

    func testAReadCancelledWhileWaitingForASlotNeverConnects() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let mock = try await BlueZMock(bus: bus)
        defer { mock.kill() }
        try await mock.addAdapter()
        for a in [Self.busy, Self.queued] {
            try await mock.addDevice(a)
            try await mock.addCharacteristic(a, service: Self.service, characteristic: Self.ballotChar, value: [1])
        }
        try await mock.setConnectBehaviour(Self.busy, "hang")
        // The first read's Connect times out when the test moves the central's clock, not in real time.
        let clock = TestClock()
        var options = BlueZCentralOptions(bus: bus.target, discoveryRestartInterval: nil, staleDeviceTimeout: nil,
                                          maxConcurrentConnections: 1)
        options.clock = RadioClock(clock)
        let central = BlueZCentral(options: options)
        let service = Self.service, char = Self.ballotChar
        let busy = DeviceAddress(Self.busy)!, queued = DeviceAddress(Self.queued)!
        // The one connection slot is taken by a read whose Connect never answers.
        let first = Task {
            try await central.readCharacteristic(device: busy, service: service, characteristic: char, timeout: .seconds(2))
        }
        let busyPath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_06_00_00_01"
        try await eventually("the first read connecting") { try await mock.calls(busyPath).contains("Connect") }
        let second = Task {
            try await central.readCharacteristic(device: queued, service: service, characteristic: char, timeout: .seconds(10))
        }
        second.cancel()
        clock.advance(by: .seconds(2))
        _ = try? await first.value  // times out and frees the slot
        do {
            _ = try await second.value
            XCTFail("a cancelled read returned a value")
        } catch {}
        let queuedPath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_06_00_00_02"
        let calls = try await mock.calls(queuedPath)
        XCTAssertFalse(calls.contains("Connect"), "\(calls)")
        await central.shutdown()
    }
}
