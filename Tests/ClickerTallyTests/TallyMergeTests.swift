import struct ClickerTransport.SplitMix64
import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

/// `Tally.merge`: ballots another receiver counted, by the counting rule of an advertised ballot,
/// with nothing it refuses counted as a rejection.
final class TallyMergeTests: XCTestCase {
    let a = DeviceAddress(rawValue: 1)
    let key = VoterPublicKey([UInt8](repeating: 0x11, count: 32))!

    func ballot(_ voter: UInt32, _ seq: UInt16, _ answer: Answer, q: UInt8 = 1) -> Ballot {
        Ballot(mode: .anonymous, voteID: 4821, question: q, voterID: voter, sequence: seq, answer: answer)
    }

    func merged(_ t: inout Tally, _ b: Ballot) -> RecordOutcome {
        var previous: VoterRecord?
        return t.merge(b, from: a, at: .zero, previous: &previous)
    }

    /// Seeded streams of ballots, each fed to one tally by `record` and to another by `merge`: the
    /// counted ballots are the same; only `record` counts rejections and repeats.
    func testMergeCountsAsRecordAndRecordsNoRejectionOrRepeat() {
        for seed in UInt64(0)..<200 {
            var rng = SplitMix64(seed: seed)
            let policy: ChangePolicy = seed % 2 == 0 ? .latestWins : .firstResponseOnly
            var recorded = Tally(voteID: 4821, policy: policy), merging = Tally(voteID: 4821, policy: policy)
            for t in [1, 2] as [UInt8] where t == 1 || seed % 3 == 0 { recorded.open(.choice(t)); merging.open(.choice(t)) }
            for _ in 0..<40 {
                let b = ballot(UInt32.random(in: 1...6, using: &rng), UInt16.random(in: 1...5, using: &rng),
                               .choice(UInt8.random(in: 0...3, using: &rng)), q: UInt8.random(in: 1...3, using: &rng))
                XCTAssertEqual(recorded.record(b, from: a, at: .zero), merged(&merging, b), "seed \(seed) \(b)")
            }
            for q in [1, 2] as [UInt8] {
                XCTAssertEqual(recorded.question(q)?.voters, merging.question(q)?.voters, "seed \(seed)")
            }
            XCTAssertEqual(merging.rejections, [:], "seed \(seed)")
            XCTAssertEqual(merging.repeats, 0, "seed \(seed)")
            XCTAssertGreaterThan(recorded.rejectionCount + recorded.repeats, 0, "seed \(seed): the stream had refusals")
        }
    }

    /// A ballot read over GATT and verified here is never replaced by a merged one, whatever its sequence.
    func testAMergedBallotNeverReplacesOneVerifiedHere() {
        var t = Tally(voteID: 4821)
        t.open(.choice(1))
        XCTAssertEqual(t.record(ballot(7, 2, .choice(1)), from: a, at: .zero, proof: .signed(key)), .new)
        for seq in [UInt16(3), 100, 0xFFFF] {
            XCTAssertEqual(merged(&t, ballot(7, seq, .choice(3))), .rejected(.unverifiedChange))
        }
        XCTAssertEqual(t.counted(question: 1, voter: VoterKey(mode: .anonymous, voterID: 7))?.answer, .choice(1))
        XCTAssertEqual(t.rejections, [:])
    }

    /// Merged ballots are held to the voter limit like heard ones, at its real value (65,536 a question):
    /// 70,000 made-up voters from a stolen receiver token.
    func testMergedVotersStopAtTheVoterLimit() {
        var t = Tally(voteID: 4821)
        XCTAssertEqual(t.limits.votersPerQuestion, 65_536)
        t.open(.choice(1))
        var refused = 0
        for v in UInt32(1)...70_000 where merged(&t, ballot(v, 1, .choice(0))) == .rejected(.voterLimit) { refused += 1 }
        XCTAssertEqual(t.question(1)?.voterCount, 65_536)
        XCTAssertEqual(refused, 70_000 - 65_536)
        XCTAssertEqual(t.rejections, [:])
    }
}
