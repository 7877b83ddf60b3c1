import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Crypto
import Foundation
import Synchronization
@testable import TallyDaemon
import XCTest

/// A central whose GATT reads answer at once with the value the test set for each device; a device
/// with no value fails the read (no connection).
final class ScriptedCentral: CentralTransport {
    private let values = Mutex<[DeviceAddress: [UInt8]]>([:])

    func serve(_ value: [UInt8]?, at address: DeviceAddress) { values.withLock { $0[address] = value } }

    func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        AsyncThrowingStream { _ in }
    }

    func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                            timeout: Duration) async throws -> [UInt8] {
        guard let v = values.withLock({ $0[device] }) else { throw TransportError.notConnected(device) }
        return v
    }

    func status() -> AsyncStream<RadioStatus> { AsyncStream { $0.finish() } }
}

/// Takes over a controller's GATT read queue and carries out the reads it asks for, one at a time,
/// each awaited to the end: no timing is involved.
struct ReadPump {
    let controller: PollController
    let central: any CentralTransport
    private let continuation: AsyncStream<VerificationState.Request>.Continuation
    private var iterator: AsyncStream<VerificationState.Request>.Iterator
    /// Marks the end of what was asked so far (no real request has question 0 and a roster voter).
    private static let marker = VerificationState.Request(address: DeviceAddress(rawValue: 0), voter: VoterKey(mode: .roster, voterID: 0),
                                                          question: 0, sequence: 0)

    init(_ controller: PollController, _ central: any CentralTransport) async {
        let (stream, continuation) = AsyncStream<VerificationState.Request>.makeStream()
        await controller.takeReadQueue(continuation)
        self.controller = controller
        self.central = central
        self.continuation = continuation
        iterator = stream.makeAsyncIterator()
    }

    /// Carries out every read asked for so far; returns the devices read.
    mutating func drain() async -> [DeviceAddress] {
        continuation.yield(Self.marker)
        var read: [DeviceAddress] = []
        while let r = await iterator.next(), r != Self.marker {
            await controller.confirm(r, central: central)
            read.append(r.address)
        }
        return read
    }
}

extension PollController {
    func takeReadQueue(_ c: AsyncStream<VerificationState.Request>.Continuation) { gattQueue = c }
}

/// Issue 12 §1 through a real `PollController` and its store: what a GATT read-back verifies, what
/// `changes` counts, and a repeat cast.
final class ReadBackTests: XCTestCase {
    static let code = TakeoverAttackTests.code
    let pollKey = BallotKey.anonymous(TakeoverAttackTests.secret)
    let victim = BallotSealer(secret: TakeoverAttackTests.secret,
                              deviceKey: DeviceKey(bytes: [UInt8](repeating: 0x5A, count: 32))!)
    let victimAddress = DeviceAddress(rawValue: 0xC0_0000_0001)
    let attackerAddress = DeviceAddress(rawValue: 0xC0_0000_0666)

    func ad(_ data: [UInt8], from a: DeviceAddress) -> AdvertisementReport {
        AdvertisementReport(address: a, rssi: -60, companyID: BallotFormat.companyID, data: data, timestamp: .zero)
    }

    /// A ballot for the victim's voter ID made by whoever knows the join code (unverified).
    func forged(q: UInt8 = 1, _ seq: UInt16, _ answer: Answer, voter: UInt32? = nil) -> [UInt8] {
        BallotCodec.sealAdvertisement(Ballot(voteID: Self.code.voteID, question: q, voterID: voter ?? victim.voterID,
                                             sequence: seq, answer: answer), key: pollKey)
    }

    func make(policy: ChangePolicy = .latestWins) async throws -> (PollController, ClickerStore, String, ReadPump, ScriptedCentral) {
        let path = NSTemporaryDirectory() + "clicker-readback-\(UUID().uuidString)/db.sqlite"
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        let store = try ClickerStore(path: path, durability: .normal)
        var options = PollOptions(joinCode: Self.code, policy: policy)
        options.publishRule = .perBallot  // live counts show every ballot at once
        let controller = try PollController(options: options, store: store)
        let central = ScriptedCentral()
        return (controller, store, path, await ReadPump(controller, central), central)
    }

    func storedRows(_ store: ClickerStore, q: Int) throws -> [BallotRecord] {
        try store.ballots(poll: 1, question: q)
    }

    /// A read-back of another ballot with the counted one's sequence (the device reused sequence 5)
    /// is `conflictingSequence` once the counted ballot is verified, and verifies nothing: the row,
    /// the stored ballot and the GATT counters stay as they were. A value with the counted sequence
    /// signed by another key verifies nothing either.
    func testAReadBackOfAnotherBallotVerifiesNothing() async throws {
        let (controller, store, _, pump, central) = try await make()
        var p = pump
        await controller.ingest(ad(victim.advertisement(question: 1, sequence: 5, answer: .choice(1)), from: victimAddress))
        central.serve(victim.gattValue(question: 1, sequence: 5, answer: .choice(1)), at: victimAddress)
        let firstReads = await p.drain()
        XCTAssertEqual(firstReads, [victimAddress])
        var r = await controller.results()
        XCTAssertEqual(r.ballots.map(\.gattVerified), [true], "the ballot read back equals the counted one")

        // The voter's device advertises 6 and serves a signed ballot with sequence 5 and another answer.
        central.serve(victim.gattValue(question: 1, sequence: 5, answer: .choice(3)), at: victimAddress)
        await controller.ingest(ad(victim.advertisement(question: 1, sequence: 6, answer: .choice(3)), from: victimAddress))
        let again = await p.drain()
        XCTAssertEqual(again, [victimAddress], "the unverified change is read back")
        r = await controller.results()
        XCTAssertEqual(r.rejected["conflictingSequence"], 1, "\(r.rejected)")
        XCTAssertEqual(r.ballots.map(\.answer), ["B"])
        XCTAssertEqual(r.ballots.map(\.sequence), [5])
        XCTAssertEqual(r.ballots.map(\.gattVerified), [true])
        let reads = await controller.gattReads
        XCTAssertEqual(reads.ok, 1, "the conflicting read verified nothing")
        XCTAssertEqual(reads.failed, 1)
        XCTAssertEqual(try storedRows(store, q: 1).map { "\($0.answer) \($0.sequence) \($0.gattVerified)" }, ["B 5 true"])

        // Question 2: the victim's ballot is counted unverified (its read fails); an attacker's
        // ballot with the same sequence is read back signed by the attacker's key: nothing verified.
        try await controller.nextQuestion()
        central.serve(nil, at: victimAddress)
        await controller.ingest(ad(victim.advertisement(question: 2, sequence: 7, answer: .choice(0)), from: victimAddress))
        _ = await p.drain()
        let attacker = Ballot(voteID: Self.code.voteID, question: 2, voterID: victim.voterID, sequence: 7, answer: .choice(2))
        central.serve(BallotCodec.sealGATT(attacker, key: pollKey, signingKey: Curve25519.Signing.PrivateKey()), at: attackerAddress)
        await controller.ingest(ad(forged(q: 2, 7, .choice(2)), from: attackerAddress))
        let attackReads = await p.drain()
        XCTAssertEqual(attackReads, [attackerAddress])
        r = await controller.results()
        XCTAssertEqual(r.ballots.map(\.answer), ["A"])
        XCTAssertEqual(r.ballots.map(\.gattVerified), [false], "a value signed by another key verifies nothing")
        XCTAssertEqual(r.gattVerified, 0)
        XCTAssertEqual(try storedRows(store, q: 2).map(\.gattVerified), [false])
    }

    /// `changes` counts voters who changed their answer: a counted ballot with a higher sequence and
    /// another answer replaced theirs. Not a stale ballot, not a repeat cast, and not the voter's own
    /// verified ballot outranking an attacker's copy with a higher sequence. The live results, the
    /// live counts, the stored summary (the export's figure) and a resumed poll agree.
    func testChangesCountsVotersWhoChangedTheirAnswer() async throws {
        let (controller, store, path, pump, central) = try await make()
        var p = pump
        // The attacker first, with the victim's voter ID and a high sequence; its read fails.
        await controller.ingest(ad(forged(9, .choice(3)), from: attackerAddress))
        _ = await p.drain()
        // The victim's own ballot, stale by sequence, is read back verified and outranks it.
        central.serve(victim.gattValue(question: 1, sequence: 4, answer: .choice(1)), at: victimAddress)
        await controller.ingest(ad(victim.advertisement(question: 1, sequence: 4, answer: .choice(1)), from: victimAddress))
        let reads = await p.drain()
        XCTAssertEqual(reads, [victimAddress])
        // Unverified voters (their reads fail): one stale ballot, one repeat cast, one real change (twice).
        for (voter, seq, answer) in [(UInt32(1), UInt16(2), UInt8(0)), (1, 1, 3),     // stale: no change
                                     (2, 1, 0), (2, 2, 0),                            // repeat cast: no change
                                     (3, 1, 0), (3, 2, 1), (3, 3, 2)] {               // changed (one voter)
            await controller.ingest(ad(forged(seq, .choice(answer), voter: voter),
                                       from: DeviceAddress(rawValue: 0xD0_0000_0000 | UInt64(voter))))
        }
        _ = await p.drain()
        let r = await controller.results()
        XCTAssertEqual(r.counts, ["A": 2, "B": 1, "C": 1, "D": 0])
        XCTAssertEqual(r.ballots.first { $0.voter == IDText.voter(victim.voterID) }?.gattVerified, true)
        XCTAssertEqual(r.changes, 1, "only voter 3 changed their answer")
        let live = await controller.liveCounts()
        XCTAssertEqual(live.changes, 1)
        XCTAssertEqual(try store.summary(poll: 1).first?.changes, 1, "the export's figure")
        let resumed = try PollController(options: PollOptions(joinCode: Self.code),
                                         store: try ClickerStore(path: path, durability: .normal),
                                         start: .resume(maxAge: .seconds(3600)))
        let again = await resumed.results()
        XCTAssertEqual(again.changes, 1)
        XCTAssertEqual(again.counts, r.counts)
    }

    /// First response only: a voter's earlier ballot heard late replaces the later one it counted
    /// first; the voter did not change a counted answer, live or in the stored summary.
    func testFirstResponseOnlyOutOfOrderIsNoChange() async throws {
        let (controller, store, _, pump, _) = try await make(policy: .firstResponseOnly)
        var p = pump
        await controller.ingest(ad(forged(5, .choice(3), voter: 2), from: attackerAddress))
        await controller.ingest(ad(forged(4, .choice(2), voter: 2), from: attackerAddress))
        _ = await p.drain()
        let r = await controller.results()
        XCTAssertEqual(r.counts["C"], 1)
        XCTAssertEqual(r.changes, 0)
        XCTAssertEqual(try store.summary(poll: 1).first?.changes, 0)
    }

    /// A repeat cast (higher sequence, same answer) of a verified ballot is no change; its
    /// advertisement cannot replace the verified ballot (`unverifiedChange`), so it is read back, and
    /// the counted ballot stays verified with the new sequence, live and stored.
    func testARepeatCastIsNoChangeAndIsReadBackAgain() async throws {
        let (controller, store, _, pump, central) = try await make()
        var p = pump
        central.serve(victim.gattValue(question: 1, sequence: 1, answer: .choice(2)), at: victimAddress)
        await controller.ingest(ad(victim.advertisement(question: 1, sequence: 1, answer: .choice(2)), from: victimAddress))
        _ = await p.drain()
        central.serve(victim.gattValue(question: 1, sequence: 2, answer: .choice(2)), at: victimAddress)
        await controller.ingest(ad(victim.advertisement(question: 1, sequence: 2, answer: .choice(2)), from: victimAddress))
        let reads = await p.drain()
        XCTAssertEqual(reads, [victimAddress], "the repeat cast is read back")
        let r = await controller.results()
        XCTAssertEqual(r.changes, 0)
        XCTAssertEqual(r.ballots.map(\.sequence), [2])
        XCTAssertEqual(r.ballots.map(\.gattVerified), [true])
        XCTAssertEqual(r.gattVerified, 1)
        let stored = try storedRows(store, q: 1)
        XCTAssertEqual(stored.map { [Int($0.sequence), $0.gattVerified ? 1 : 0] }, [[1, 1], [2, 1]])
        XCTAssertEqual(try store.summary(poll: 1).first?.changes, 0)
        XCTAssertEqual(try store.summary(poll: 1).first?.gattVerified, 1)
    }
}
