@testable import BlueZ
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import DBus
import Foundation
import ServiceLifecycle
import Voter
import XCTest

/// Tier 2: a voter following the beacon (`BeaconFollowService` on a `BlueZPeripheral`) while
/// bluetoothd (python-dbusmock) vanishes and comes back: it listens again, with back-off, on the
/// same peripheral, and follows the beacon it hears afterwards without a restart.
final class BlueZFollowRestartTests: XCTestCase {
    var bus: PrivateBus!
    var mock: BlueZMock!

    static let tally = "00:BB:02:00:00:01"

    override func setUp() async throws {
        bus = try PrivateBus()
        mock = try await BlueZMock(bus: bus)
        try await mock.addAdapter()
    }

    override func tearDown() async throws {
        mock?.kill()
        mock = nil
        bus?.stop()
        bus = nil
    }

    func testAFollowerHearsTheBeaconAgainAfterBluetoothdCameBack() async throws {
        let code = try JoinCode(parsing: "4821-ABCDE-FGHJK")
        let secret = PollSecret(deriving: code)
        let key = BeaconKey(secret)
        func state(_ q: UInt8, counter: UInt32) throws -> [UInt8] {
            try BeaconCodec.seal(BeaconState(voteID: key.voteID, counter: counter, mode: .anonymous,
                                             poll: .open(BeaconQuestion(number: q, kind: .single, options: 4)),
                                             interval: BeaconInterval(milliseconds: 100) ?? .stop), key: key)
        }
        try await mock.addDevice(Self.tally)
        let voter = BlueZPeripheral(options: BlueZPeripheralOptions(bus: bus.target, callTimeout: .seconds(5)))
        let (shown, sink) = AsyncStream<String>.makeStream()
        let lines = Collector(shown)
        let service = BeaconFollowService(secret: secret, identity: DeviceKey.generate(), roster: false, transport: voter,
                                          state: nil, lines: AsyncStream { _ in }, report: { sink.yield($0.line) },
                                          tick: .seconds(3600), start: .immediate)
        let run = Task { try await service.run() }
        defer { run.cancel() }
        let status = Collector(voter.listenerStatus())
        try await status.wait("scanning") { $0.last?.state == .scanning }
        try await mock.advertise(Self.tally, data: try state(1, counter: 10))
        try await lines.wait("question 1") { $0.contains("question 1 single 4") }

        mock.kill()
        mock = try await BlueZMock(bus: bus)
        try await mock.addAdapter()
        try await mock.addDevice(Self.tally)
        // Listening again after the first failures' back-off (1 s, then 2 s, …).
        try await eventually("discovery on again", timeout: .seconds(30)) {
            let d = try? await self.mock.property("/org/bluez/hci0", "org.bluez.Adapter1", "Discovering")
            return d?.unwrapped == .boolean(true)
        }
        try await mock.advertise(Self.tally, data: try state(2, counter: 110))  // within the replay guard's lead
        try await lines.wait("question 2 after the restart", timeout: .seconds(20)) { $0.contains("question 2 single 4") }
        run.cancel()
        _ = try? await run.value
        await voter.shutdown()
    }
}
