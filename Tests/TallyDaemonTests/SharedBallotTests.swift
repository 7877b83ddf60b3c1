import ClickerStore
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import Synchronization
@testable import TallyDaemon
import XCTest

/// One poll counted by several receivers (docs/LEDGER.md): the ballots other receivers counted count
/// in the tally by the counting rule, are saved and acknowledged like its own; the tally hands on
/// only what its own radio got counted.
final class SharedBallotTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // test constant

    func report(voter: UInt32, sequence: UInt16 = 1, answer: Answer, at ms: UInt64) -> AdvertisementReport {
        let b = Ballot(mode: .anonymous, voteID: code.voteID, question: 1, voterID: voter, sequence: sequence, answer: answer)
        return AdvertisementReport(address: DeviceAddress(rawValue: UInt64(voter)), rssi: -60, companyID: BallotFormat.companyID,
                                   data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(code))),
                                   timestamp: RadioInstant(nanoseconds: ms * 1_000_000))
    }

    func shared(voter: UInt32, sequence: UInt16 = 1, answer: Answer, question: UInt8 = 1) -> SharedBallot {
        SharedBallot(question: question, voter: VoterKey(mode: .anonymous, voterID: voter), sequence: sequence, answer: answer,
                     verified: false, address: DeviceAddress(rawValue: 0xE000_0000_0000 | UInt64(voter)))
    }

    func testBallotsOtherReceiversCountedAreCountedSavedAndAcknowledgedAndOnlyOwnBallotsGoOut() async throws {
        var template = Array("/tmp/clicker-shared-XXXXXX".utf8CString)
        let dir = String(cString: try XCTUnwrap(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
        let radio = RecordingBroadcaster(capabilities: .extended)
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: store)
        let out = Mutex<[SharedBallot]>([])
        await controller.shareCounted { b in out.withLock { $0.append(b) } }
        let run = Task { try await controller.run(central: radio) }
        defer { run.cancel() }
        await controller.untilScanning()

        // The tally's own radio hears 100 voters (ids 1–100), each once, then voters 1–20 change to B.
        for v in 1...100 { radio.ads.yield(report(voter: UInt32(v), answer: .choice(0), at: UInt64(v))) }
        for v in 1...20 { radio.ads.yield(report(voter: UInt32(v), sequence: 2, answer: .choice(1), at: 200 + UInt64(v))) }
        try await untilChanged(controller, "the tally's own 100 voters") {
            await controller.results().voters == 100 && out.withLock { $0.count } == 120
        }
        let own = out.withLock { $0 }
        XCTAssertEqual(Set(own.map(\.voter.voterID)), Set(1...100), "each of its own voters handed on")
        XCTAssertEqual(own.filter { $0.sequence == 2 }.map(\.answer), Array(repeating: .choice(1), count: 20))
        XCTAssertTrue(own.allSatisfy { $0.heard > .zero }, "handed on with when it was heard")

        // What the other receivers counted: 200 voters only they heard (101–300); its own ballots back
        // (1–100, as counted); for voters 1–20 their first ballot, which ranks below the change heard here;
        // for 21–40 a change the tally missed (sequence 2, answer C); and a ballot of a question not open.
        var elsewhere = (101...300).map { shared(voter: UInt32($0), answer: .choice(UInt8($0 % 4))) }
        elsewhere += own.map { SharedBallot(question: $0.question, voter: $0.voter, sequence: $0.sequence, answer: $0.answer,
                                            verified: $0.verified, address: $0.address) }
        elsewhere += (1...20).map { shared(voter: UInt32($0), answer: .choice(0)) }
        elsewhere += (21...40).map { shared(voter: UInt32($0), sequence: 2, answer: .choice(2)) }
        elsewhere.append(shared(voter: 999, answer: .choice(0), question: 9))
        var rng = SplitMix64(seed: 40)
        let changed = await controller.countShared(elsewhere.shuffled(using: &rng))
        XCTAssertEqual(changed, 220, "200 new voters and 20 changes changed a count; its own and older ballots nothing")

        let r = await controller.results()
        XCTAssertEqual(r.voters, 300, "every voter once")
        XCTAssertEqual(r.rejected, [:], "older and own ballots from elsewhere are not rejections")
        var expected = [0, 0, 0, 0]
        for v in 1...300 {
            let a = v <= 20 ? 1 : v <= 40 ? 2 : v <= 100 ? 0 : v % 4
            expected[a] += 1
        }
        XCTAssertEqual(r.counts, ["A": expected[0], "B": expected[1], "C": expected[2], "D": expected[3]])
        XCTAssertEqual(r.changes, 40, "the 20 changes heard here and the 20 heard elsewhere")
        XCTAssertEqual(out.withLock { $0.count }, 120, "ballots from elsewhere are not handed on again")

        // Saved: the store has every counted ballot, its own and the others'.
        let stored = try store.ballots(poll: 1, question: 1)
        var latest: [Data: UInt32] = [:]
        for b in stored { latest[b.voter] = max(latest[b.voter] ?? 0, b.sequence) }
        XCTAssertEqual(latest.count, 300)
        XCTAssertEqual(latest.values.filter { $0 == 2 }.count, 40)

        // Acknowledged by this tally's beacon: a voter only another receiver heard is in an ACKS frame.
        let key = BeaconKey(pollSecret(code))
        @Sendable func acknowledged() -> Set<AckFingerprint> {
            Set(radio.payloads.flatMap(\.frames).flatMap { f -> [AckFingerprint] in
                if case .success(.acks(let a)) = BeaconCodec.open(f, key: key), a.question == 1 { a.fingerprints } else { [] }
            })
        }
        let onlyElsewhere = key.fingerprint(voterID: 250, question: 1, sequence: 1)
        let changedElsewhere = key.fingerprint(voterID: 30, question: 1, sequence: 2)
        try await until(radio.broadcasts.subscribe(), "ballots counted elsewhere acknowledged") {
            acknowledged().isSuperset(of: [onlyElsewhere, changedElsewhere])
        }
    }
}
