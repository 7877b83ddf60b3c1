import BlueZ
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import DBus
import Foundation
import TallyDaemon
import XCTest

/// Tier 2: one tally on two adapters of the bluetoothd stand-in, hci0 and hci1, as `clicker-tally
/// --adapter hci0,hci1` opens them: a `BlueZCentral` each, merged (`MergedCentral`), under a real
/// `PollController`. Voters heard only on hci1 are counted and read back over GATT through hci1, a voter
/// both adapters hear is counted once, and the beacon is registered on both adapters.
final class BlueZTwoAdapterTests: XCTestCase {
    static let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input
    static let secret = PollSecret(deriving: code)

    func testVotersHeardOnTheSecondAdapterAreCountedAndTheBeaconGoesOutOnBoth() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let mock = try await BlueZMock(bus: bus)
        defer { mock.kill() }
        try await mock.addAdapter("hci0")
        try await mock.addAdapter("hci1")
        let centrals = ["hci0", "hci1"].map { name in
            BlueZCentral(options: BlueZCentralOptions(bus: bus.target, adapter: .name(name), discoveryRestartInterval: nil,
                                                      staleDeviceTimeout: nil))
        }
        let central = MergedCentral.combining(zip(["hci0", "hci1"], centrals).map { MergedCentral.Member(name: $0, central: $1) })
        XCTAssertTrue(central is MergedBroadcastingCentral)
        let controller = try PollController(options: PollOptions(joinCode: Self.code, gattTimeout: .seconds(5)), store: nil)
        let run = Task { try await controller.run(central: central) }
        try await until(controller.changeFeed.subscribe(), "both adapters scanning") { await controller.radio.adapter == "hci0, hci1" }

        // Three voters only hci1 hears, each serving its ballot over GATT there; one voter both hear.
        var adverts: [(String, String, [UInt8])] = []
        for i in 0..<4 {
            let sealer = BallotSealer(secret: Self.secret, deviceKey: DeviceKey(bytes: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ i &* 31 &+ 1) })!)
            let address = String(format: "00:AA:07:00:00:%02X", i + 1)
            let answer = Answer.choice(UInt8(i % 2))
            for adapter in i == 3 ? ["hci0", "hci1"] : ["hci1"] {
                try await mock.addDevice(address, adapter: adapter)
                try await mock.addCharacteristic(address, service: BallotFormat.serviceUUID,
                                                 characteristic: BallotFormat.ballotCharacteristicUUID,
                                                 value: sealer.gattValue(question: 1, sequence: 1, answer: answer), adapter: adapter)
                let data = sealer.advertisement(question: 1, sequence: 1, answer: answer)
                try await mock.advertise(address, data: data, adapter: adapter)
                adverts.append((address, adapter, data))
            }
        }
        // The tally reads at most 5 % of the radio's time and retries a deferred read when reports come
        // in: the voters go on advertising (a new RSSI each time, as a real scan reports) until read.
        var round: Int16 = 0
        try await eventually("four voters counted, each read back over GATT", timeout: .seconds(30)) {
            let r = await controller.results()
            if r.voters == 4 && r.ballots.filter(\.gattVerified).count == 4 { return true }
            round += 1
            for (address, adapter, data) in adverts {
                try await mock.advertise(address, data: data, rssi: -50 - round % 20, adapter: adapter)
            }
            return false
        }
        let r = await controller.results()
        XCTAssertEqual(r.counts["A"], 2)
        XCTAssertEqual(r.counts["B"], 2, "the voter both adapters heard is counted once")
        XCTAssertEqual(r.ballots.count, 4)

        // The beacon: registered with bluetoothd on each adapter, with its frames.
        try await eventually("the beacon registered on hci0 and hci1") {
            let on0 = try await mock.advertisements(adapter: "hci0"), on1 = try await mock.advertisements(adapter: "hci1")
            return on0.count == 1 && on1.count == 1
        }
        let data = { (adapter: String) async throws -> DBusValue? in
            try await mock.advertisements(adapter: adapter).first?.2["ManufacturerData"]
        }
        let on0 = try await data("hci0"), on1 = try await data("hci1")
        XCTAssertNotNil(on0)
        XCTAssertNotNil(on1)

        run.cancel()
        _ = try? await run.value
        for c in centrals { await c.shutdown() }
    }
}
