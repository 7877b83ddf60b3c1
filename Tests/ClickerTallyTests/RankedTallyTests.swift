import struct ClickerTransport.SplitMix64
import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

/// A ranked question's rounds come from the count the tally keeps (``QuestionTally/rankedCount``),
/// moved by each ballot it counts, replaces or drops: they must be those of a count from scratch of
/// the answers it holds, after every ballot.
final class RankedTallyTests: XCTestCase {
    let address = DeviceAddress(rawValue: 1)

    func ranking(_ rng: inout SplitMix64, options: Int) -> Ranking {
        let k = Int.random(in: 1...options, using: &rng)
        // Ranking(order:) takes 1…8 distinct options, which a prefix of a shuffle always is.
        return Ranking(order: Array((0..<UInt8(options)).shuffled(using: &rng).prefix(k)))!
    }

    /// Random streams of ballots on a ranked question: new voters, changes of answer (higher
    /// sequences), repeats, stale and conflicting sequences, signed reads that outrank advertisements,
    /// under both change policies, in close elections (3–5 options, few voters) so that rounds' decisions
    /// flip often. After every ballot the kept count, and the results by kind built from it, equal a
    /// count from scratch of the answers the tally holds.
    func testKeptRoundsEqualAFullRecountAfterEveryBallot() {
        var changes = 0
        for seed in UInt64(1)...120 {
            var rng = SplitMix64(seed: seed)
            let options = Int.random(in: 3...5, using: &rng)
            let policy: ChangePolicy = seed % 3 == 0 ? .firstResponseOnly : .latestWins
            let spec = QuestionSpec(number: 1, options: options, kinds: [.ranking], optionTexts: ["x", "y"])
            var t = Tally(voteID: 4821, policy: policy)
            t.open(spec)
            var sequences: [UInt32: UInt16] = [:]
            for _ in 0..<80 {
                let voter = UInt32.random(in: 1...12, using: &rng)
                let last = sequences[voter] ?? 0
                let sequence: UInt16 = switch Int.random(in: 0..<6, using: &rng) {
                case 0: last > 1 ? last - 1 : last + 1      // stale (or first)
                case 1: max(last, 1)                          // the same sequence: repeat or conflict
                default: last + 1                             // a later ballot: usually a change
                }
                sequences[voter] = max(last, sequence)
                let answer = Answer.ranking(ranking(&rng, options: options))
                let b = Ballot(mode: .anonymous, voteID: 4821, question: 1, voterID: voter, sequence: sequence, answer: answer)
                let proof: BallotProof = Int.random(in: 0..<8, using: &rng) == 0
                    ? .signed(VoterPublicKey((0..<32).map { UInt8(truncatingIfNeeded: voter &* 7 &+ UInt32($0)) })!)
                    : .advertised
                if case .changed = t.record(b, from: address, at: .zero, proof: proof) { changes += 1 }

                let held = (t.question(1)?.voters.values.map(\.answer) ?? []).compactMap { a -> Ranking? in
                    if case .ranking(let r) = a { return r }
                    return nil
                }
                let fromScratch = InstantRunoff(options: options, rankings: held)
                XCTAssertEqual(t.question(1)?.rankedCount, fromScratch, "seed \(seed)")
                guard case .ranked(let shown)? = t.results(question: 1)?.byKind else { return XCTFail("kind, seed \(seed)") }
                XCTAssertEqual(shown, RankedResults(count: fromScratch, optionTexts: spec.optionTexts), "seed \(seed)")
            }
        }
        XCTAssertGreaterThan(changes, 500, "the streams change answers often")
    }

    /// Forgetting a question's voters (an anonymous question sealed) starts its kept count over.
    func testForgettingVotersEmptiesTheKeptCount() {
        var t = Tally(voteID: 4821)
        t.open(QuestionSpec(number: 1, options: 3, kinds: [.ranking]))
        let b = Ballot(mode: .anonymous, voteID: 4821, question: 1, voterID: 1, sequence: 1,
                       answer: .ranking(Ranking(order: [1, 0])!))
        XCTAssertEqual(t.record(b, from: address, at: .zero), .new)
        XCTAssertEqual(t.question(1)?.rankedCount?.outcome, .winner(1))
        t.forgetVoters(question: 1)
        XCTAssertEqual(t.question(1)?.rankedCount, InstantRunoff(options: 3, rankings: []))
    }

    /// Other kinds keep no instant-runoff count.
    func testOnlyRankedQuestionsKeepACount() {
        var t = Tally(voteID: 4821)
        t.open(.choice(1))
        t.open(QuestionSpec(number: 2, options: 4, kinds: [.multiSelect]))
        XCTAssertNil(t.question(1)?.rankedCount)
        XCTAssertNil(t.question(2)?.rankedCount)
    }
}
