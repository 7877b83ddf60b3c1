import ClickerSim
import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Crypto
import Foundation
@testable import TallyDaemon
import XCTest

/// The takeover attack (anonymous mode) through the simulated radio against a real `PollController`:
/// a classmate who knows the join code copies the victim's voter ID off the air and advertises ballots
/// that win by sequence (0xFFFF when the latest wins, 1 when only the first response counts), serving
/// over GATT a value signed with its own key. The victim's answer stays counted. Each tally on the air
/// keeps the air's time, so that its beacon broadcasts at instants of the air that `drive` waits for.
final class TakeoverAttackTests: XCTestCase {
    static let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input
    static let secret = PollSecret(deriving: code)
    let victimAddress = DeviceAddress(rawValue: 0xC0_0000_0001)
    let attackerAddress = DeviceAddress(rawValue: 0xC0_0000_0666)

    /// The victim's device in this poll (its voter ID is the hash of its per-poll public key).
    let victim = BallotSealer(secret: secret, deviceKey: DeviceKey(bytes: [UInt8](repeating: 0x5A, count: 32))!)

    /// A radio on the simulated air advertising `advertisement` and serving `gatt`.
    func radio(_ air: SimulatedAir, _ address: DeviceAddress, advertisement: [UInt8], gatt: [UInt8]) async throws {
        let p = air.addPeripheral(address: address)
        try await p.publish(service: BallotFormat.serviceUUID, characteristic: BallotFormat.ballotCharacteristicUUID, value: gatt)
        try await p.advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: advertisement))
    }

    /// The attacker's radio: the victim's voter ID, sealed under the poll key (which the join code
    /// gives everyone); its GATT value is that ballot signed with the attacker's own key.
    func attack(_ air: SimulatedAir, question: UInt8, sequence: UInt16, answer: Answer) async throws {
        let forged = Ballot(voteID: Self.code.voteID, question: question, voterID: victim.voterID, sequence: sequence,
                            answer: answer)
        let pollKey = BallotKey.anonymous(Self.secret)
        try await radio(air, attackerAddress, advertisement: BallotCodec.sealAdvertisement(forged, key: pollKey),
                        gatt: BallotCodec.sealGATT(forged, key: pollKey, signingKey: Curve25519.Signing.PrivateKey()))
    }

    func vote(_ air: SimulatedAir, question: UInt8, sequence: UInt16, answer: Answer) async throws {
        try await radio(air, victimAddress,
                        advertisement: victim.advertisement(question: question, sequence: sequence, answer: answer),
                        gatt: victim.gattValue(question: question, sequence: sequence, answer: answer))
    }

    var victimHex: String { IDText.voter(victim.voterID) }

    func assertVictimCounted(_ r: PollResults, _ answer: Answer, _ why: String, line: UInt = #line) {
        XCTAssertEqual(r.voters, 1, why, line: line)
        XCTAssertEqual(r.counts.filter { $0.value > 0 }, [answer.description: 1], why, line: line)
        XCTAssertEqual(r.ballots.first?.voter, victimHex, why, line: line)
        XCTAssertEqual(r.ballots.first?.answer, answer.description, why, line: line)
        XCTAssertEqual(r.ballots.first?.gattVerified, true, why, line: line)
    }

    /// The sequence that wins under `policy` against the victim's.
    func winning(_ policy: ChangePolicy) -> UInt16 { policy == .latestWins ? 0xFFFF : 1 }

    func testTheAttackerCannotReplaceACountedVote() async throws {
        for policy in ChangePolicy.allCases {
            let air = SimulatedAir(AirConfiguration(seed: 11, clock: .virtual))
            let controller = try PollController(options: PollOptions(joinCode: Self.code, policy: policy), store: nil,
                                                clock: PollClock(air.clock))
            let run = await air.start(controller)
            // The victim's third ballot of the poll (sequences run per poll).
            try await vote(air, question: 1, sequence: 3, answer: .choice(1))
            await air.drive(controller, until: RadioInstant(nanoseconds: 5_000_000_000))
            assertVictimCounted(await controller.results(), .choice(1), "\(policy): before the attack")

            try await attack(air, question: 1, sequence: winning(policy), answer: .choice(3))
            await air.drive(controller, until: RadioInstant(nanoseconds: 20_000_000_000))
            run.cancel()
            _ = try? await run.value
            let r = await controller.results()
            assertVictimCounted(r, .choice(1), "\(policy): after the attack")
            XCTAssertGreaterThan(r.rejected["unverifiedChange"] ?? 0, 0, "\(policy): \(r.rejected)")
            XCTAssertEqual(r.rejected["badSignature"], 1,
                           "\(policy): the attacker's GATT value, read once per voter, sequence and address: \(r.rejected)")
        }
    }

    /// The attacker gets in first on a new question with the victim's known voter ID; the victim's own
    /// ballot then replaces it as soon as the tally reads it over GATT.
    func testTheAttackerFirstOnANewQuestionIsReplacedByTheVictim() async throws {
        for policy in ChangePolicy.allCases {
            let air = SimulatedAir(AirConfiguration(seed: 12, clock: .virtual))
            let controller = try PollController(options: PollOptions(joinCode: Self.code, policy: policy), store: nil,
                                                clock: PollClock(air.clock))
            let run = await air.start(controller)
            try await vote(air, question: 1, sequence: 1, answer: .choice(0))
            await air.drive(controller, until: RadioInstant(nanoseconds: 5_000_000_000))
            try await controller.nextQuestion()
            try await attack(air, question: 2, sequence: winning(policy), answer: .choice(3))
            await air.drive(controller, until: RadioInstant(nanoseconds: 10_000_000_000))
            let before = await controller.results()
            XCTAssertEqual(before.counts["D"], 1, "\(policy): the attacker's ballot counts while nothing is verified \(before)")
            XCTAssertEqual(before.ballots.first?.gattVerified, false)

            try await vote(air, question: 2, sequence: 4, answer: .choice(2))
            await air.drive(controller, until: RadioInstant(nanoseconds: 25_000_000_000))
            // The victim's ballot is verified once every read has finished; the attacker is heard after it.
            await air.drive(controller, until: RadioInstant(nanoseconds: air.now.nanoseconds + 2_000_000_000))
            run.cancel()
            _ = try? await run.value
            let r = await controller.results()
            assertVictimCounted(r, .choice(2), "\(policy): the victim's ballot replaced the attacker's")
            XCTAssertGreaterThan(r.rejected["unverifiedChange"] ?? 0, 0, "\(policy): \(r.rejected)")
        }
    }

    /// Verification and key bindings are kept with the poll: a restart gives the same results, and the
    /// attack still fails after it, under both counting rules: the copied advertisement is
    /// `unverifiedChange`, and a read signed by another key is `keyMismatch` because the victim's key
    /// is still bound (unbound, that key would be bound and its ballot would replace the victim's).
    func testARestartKeepsVerificationAndBindings() async throws {
        for policy in ChangePolicy.allCases {
            let path = NSTemporaryDirectory() + "clicker-takeover-\(UUID().uuidString)/db.sqlite"
            let dir = (path as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
            let store = try ClickerStore(path: path, durability: .normal)
            let air = SimulatedAir(AirConfiguration(seed: 13, clock: .virtual))
            let first = try PollController(options: PollOptions(joinCode: Self.code, policy: policy), store: store,
                                           clock: PollClock(air.clock))
            let run = await air.start(first)
            try await attack(air, question: 1, sequence: winning(policy), answer: .choice(3))
            await air.drive(first, until: RadioInstant(nanoseconds: 3_000_000_000))
            try await vote(air, question: 1, sequence: 2, answer: .choice(1))
            await air.drive(first, until: RadioInstant(nanoseconds: 15_000_000_000))
            run.cancel()
            _ = try? await run.value
            let before = await first.results()
            assertVictimCounted(before, .choice(1), "\(policy): before the restart")

            let second = try PollController(options: PollOptions(joinCode: Self.code, policy: policy),
                                            store: try ClickerStore(path: path, durability: .normal),
                                            start: .resume(maxAge: .seconds(3600)))
            let after = await second.results()
            XCTAssertEqual(after.counts, before.counts, "\(policy)")
            XCTAssertEqual(after.changes, before.changes, "\(policy)")
            XCTAssertEqual(after.ballots, before.ballots, "\(policy)")
            // The attacker's advertisement again, to the restarted tally: the verified vote stands.
            let forged = Ballot(voteID: Self.code.voteID, question: 1, voterID: victim.voterID, sequence: winning(policy),
                                answer: .choice(0))
            await second.ingest(AdvertisementReport(address: attackerAddress, rssi: -60, companyID: BallotFormat.companyID,
                                                    data: BallotCodec.sealAdvertisement(forged, key: .anonymous(Self.secret)),
                                                    timestamp: .zero))
            let attacked = await second.results()
            assertVictimCounted(attacked, .choice(1), "\(policy): after the restart")
            XCTAssertEqual(attacked.rejected["unverifiedChange"], (after.rejected["unverifiedChange"] ?? 0) + 1, "\(policy)")
            // A read of that ballot signed by another key whose hash is the victim's voter ID (as
            // grinding 2^32 keys would give; any other key is `badSignature` at the codec): the binding
            // restored from the store refuses it.
            let ground = try XCTUnwrap(VoterPublicKey(Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation)))
            let outcome = await second.recordRead(forged, signedBy: ground, from: attackerAddress)
            XCTAssertEqual(outcome, .rejected(.keyMismatch), "\(policy)")
            assertVictimCounted(await second.results(), .choice(1), "\(policy): after a read signed by another key")
        }
    }

    /// Attack #2 of the security review, against a follower: the victim advertises at the keep-alive
    /// (10.24 s, `BeaconInterval.keepAlive`), as a follower whose ballot the tally acknowledged does, and
    /// its first read is lost (its radio drops out of reach for half a second while the tally waits to
    /// connect). The attacker's copy with the winning sequence (0xFFFF when the latest wins) replaces the
    /// unverified ballot; the tally tries the lost read again after its back-off, and a read waits long
    /// enough for the victim's next advertising event, so the victim's ballot is verified and counted
    /// again. (With reads that gave up after 10 s, every read of the victim ended 0.24 s before the
    /// advertising event it waited for, and the copy stayed counted for good.)
    func testAVictimAtTheKeepAliveWhoseFirstReadIsLostGetsItsVoteBack() async throws {
        for policy in ChangePolicy.allCases {
            let air = SimulatedAir(AirConfiguration(seed: 21, clock: .virtual, firstEventPhase: .immediate))
            let controller = try PollController(options: PollOptions(joinCode: Self.code, policy: policy), store: nil,
                                                clock: PollClock(air.clock))
            let run = await air.start(controller)
            let sequence: UInt16 = policy == .latestWins ? 3 : 2
            let advertisement = victim.advertisement(question: 1, sequence: sequence, answer: .choice(1))
            let gatt = victim.gattValue(question: 1, sequence: sequence, answer: .choice(1))
            let keepAlive = AdvertisingPayload(companyID: BallotFormat.companyID, data: advertisement,
                                               interval: BeaconInterval.keepAlive)
            let p = air.addPeripheral(address: victimAddress)
            try await p.publish(service: BallotFormat.serviceUUID, characteristic: BallotFormat.ballotCharacteristicUUID, value: gatt)
            try await p.advertise(keepAlive)
            // The victim is heard at once and its read waits for its next event, 10.24 s later. The
            // attacker's copy comes at 1 s; at 5 s the victim's radio is out of reach for half a second,
            // which loses the read under way.
            let forged = Ballot(voteID: Self.code.voteID, question: 1, voterID: victim.voterID, sequence: winning(policy),
                                answer: .choice(3))
            let pollKey = BallotKey.anonymous(Self.secret)
            let copy = AdvertisingPayload(companyID: BallotFormat.companyID, data: BallotCodec.sealAdvertisement(forged, key: pollKey))
            let copyGATT = BallotCodec.sealGATT(forged, key: pollKey, signingKey: Curve25519.Signing.PrivateKey())
            let victimAddress = self.victimAddress, attackerAddress = self.attackerAddress
            air.schedule(at: RadioInstant(nanoseconds: 1_000_000_000)) { ctx in
                ctx.addDevice(address: attackerAddress)
                ctx.publish(attackerAddress, service: BallotFormat.serviceUUID,
                            characteristic: BallotFormat.ballotCharacteristicUUID, value: copyGATT)
                try? ctx.advertise(attackerAddress, copy)
            }
            air.schedule(at: RadioInstant(nanoseconds: 5_000_000_000)) { $0.remove(victimAddress) }
            air.schedule(at: RadioInstant(nanoseconds: 5_500_000_000)) { ctx in
                ctx.addDevice(address: victimAddress)
                ctx.publish(victimAddress, service: BallotFormat.serviceUUID,
                            characteristic: BallotFormat.ballotCharacteristicUUID, value: gatt)
                try? ctx.advertise(victimAddress, keepAlive)
            }
            // In steps of 100 ms, the controller keeping up with the air (a read under way moves it on).
            for ms in stride(from: UInt64(100), through: 60_000, by: 100) {
                await air.drive(controller, until: RadioInstant(nanoseconds: ms * 1_000_000))
            }
            // Both radios stop, the reads under way finish.
            air.perform { ctx in
                ctx.stopAdvertising(victimAddress)
                ctx.stopAdvertising(attackerAddress)
            }
            await air.drive(controller, until: RadioInstant(nanoseconds: 75_000_000_000))
            run.cancel()
            _ = try? await run.value
            let r = await controller.results()
            assertVictimCounted(r, .choice(1), "\(policy): the victim's ballot is verified and counted again")
            let reads = await controller.gattReads
            XCTAssertGreaterThanOrEqual(reads.failed, 2, "\(policy): the victim's lost read and the attacker's value")
            XCTAssertEqual(r.rejected["badSignature"], 1, "\(policy): \(r.rejected)")
            XCTAssertGreaterThan((r.rejected["staleSequence"] ?? 0) + (r.rejected["changeIgnored"] ?? 0), 0,
                                 "\(policy): the copy counted for a while, the victim's ballot losing to it: \(r.rejected)")
        }
    }
}

extension PollController {
    /// Records `b` as read over GATT signed by `key`, past the codec's check that the key hashes to
    /// the voter ID (which only a ground key passes).
    func recordRead(_ b: Ballot, signedBy key: VoterPublicKey, from address: DeviceAddress) -> RecordOutcome {
        pipeline.tally.record(b, from: address, at: radioNow, proof: .signed(key))
    }
}

