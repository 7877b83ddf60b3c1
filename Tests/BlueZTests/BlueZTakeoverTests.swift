import BlueZ
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Crypto
import DBus
import Foundation
import TallyDaemon
import XCTest

/// Tier 2: the takeover attack through the BlueZ backend. A fake bluetoothd (python-dbusmock) carries
/// the victim's device, which advertises its ballot and serves its signed GATT value, and an attacker's
/// device, which advertises the victim's voter ID with a winning sequence under the poll key and serves
/// that ballot signed with its own key. A real `PollController` counts through `BlueZCentral`.
final class BlueZTakeoverTests: XCTestCase {
    static let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input
    static let secret = PollSecret(deriving: code)
    static let victimAddress = "00:AA:05:00:00:01"
    static let attackerAddress = "00:AA:05:00:00:66"

    func testTheAttackerFirstIsReplacedAndThenCannotReplaceTheVictim() async throws {
        let victim = BallotSealer(secret: Self.secret, deviceKey: DeviceKey(bytes: [UInt8](repeating: 0x5A, count: 32))!)
        let victimHex = IDText.voter(victim.voterID)
        for policy in ChangePolicy.allCases {
            let bus = try PrivateBus()
            defer { bus.stop() }
            let mock = try await BlueZMock(bus: bus)
            defer { mock.kill() }
            try await mock.addAdapter()
            let central = BlueZCentral(options: BlueZCentralOptions(bus: bus.target, discoveryRestartInterval: nil,
                                                                    staleDeviceTimeout: nil))
            let controller = try PollController(options: PollOptions(joinCode: Self.code, policy: policy, gattTimeout: .seconds(5)),
                                                store: nil)
            let run = Task { try await controller.run(central: central) }
            try await until(controller.changeFeed.subscribe(), "scanning") { await controller.radio.state == .scanning }

            // The attacker first, with the sequence that wins under the policy.
            let pollKey = BallotKey.anonymous(Self.secret)
            func forge(_ answer: Answer) -> Ballot {
                Ballot(voteID: Self.code.voteID, question: 1, voterID: victim.voterID,
                       sequence: policy == .latestWins ? 0xFFFF : 1, answer: answer)
            }
            let attackerKey = Curve25519.Signing.PrivateKey()
            try await mock.addDevice(Self.attackerAddress)
            try await mock.addCharacteristic(Self.attackerAddress, service: BallotFormat.serviceUUID,
                                             characteristic: BallotFormat.ballotCharacteristicUUID,
                                             value: BallotCodec.sealGATT(forge(.choice(3)), key: pollKey, signingKey: attackerKey))
            try await mock.advertise(Self.attackerAddress, data: BallotCodec.sealAdvertisement(forge(.choice(3)), key: pollKey))
            try await until(controller.changeFeed.subscribe(), "the attacker's ballot counted, unverified, and its GATT value rejected") {
                let r = await controller.results()
                return r.counts["D"] == 1 && (r.rejected["badSignature"] ?? 0) > 0
            }

            // The victim votes (its third ballot of the poll): read over GATT, it replaces the attacker's.
            try await mock.addDevice(Self.victimAddress)
            try await mock.addCharacteristic(Self.victimAddress, service: BallotFormat.serviceUUID,
                                             characteristic: BallotFormat.ballotCharacteristicUUID,
                                             value: victim.gattValue(question: 1, sequence: 3, answer: .choice(1)))
            try await mock.advertise(Self.victimAddress, data: victim.advertisement(question: 1, sequence: 3, answer: .choice(1)))
            try await until(controller.changeFeed.subscribe(), "the victim's ballot counted, verified") {
                let r = await controller.results()
                return r.ballots.first.map { $0.answer == "B" && $0.gattVerified } ?? false
            }

            // The attacker again, with another answer: rejected, the victim's answer stays counted.
            try await mock.advertise(Self.attackerAddress, data: BallotCodec.sealAdvertisement(forge(.choice(2)), key: pollKey),
                                     rssi: -40)
            try await until(controller.changeFeed.subscribe(), "the attacker's new ballot rejected") {
                (await controller.results().rejected["unverifiedChange"] ?? 0) > 0
            }
            run.cancel()
            _ = try? await run.value
            await central.shutdown()
            let r = await controller.results()
            XCTAssertEqual(r.voters, 1, "\(policy)")
            XCTAssertEqual(r.counts.filter { $0.value > 0 }, ["B": 1], "\(policy)")
            XCTAssertEqual(r.ballots.map(\.voter), [victimHex], "\(policy)")
            XCTAssertEqual(r.ballots.first?.gattVerified, true, "\(policy)")
        }
    }
}
