import struct ClickerTransport.SplitMix64
import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

/// Seeded property tests: the counted answers depend on the set of reports, not on their order or repeats.
final class PropertyTests: XCTestCase {
    let poll = TestPoll()

    /// Honest voters who change their minds, over two questions, plus noise.
    func scenario(_ rng: inout SplitMix64) -> [AdvertisementReport] {
        var reports: [AdvertisementReport] = []
        for voter in UInt32(1)...UInt32(40) {
            var seq: UInt16 = 0
            for q in UInt8(1)...2 {
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    seq += 1
                    reports.append(poll.report(voter: voter &* 2_654_435_761, question: q, sequence: seq,
                                               answer: .choice(UInt8.random(in: 0..<4, using: &rng)),
                                               at: UInt64.random(in: 0..<60_000, using: &rng), address: UInt64(voter)))
                }
            }
        }
        // Noise: forgeries, other polls, out-of-range answers, truncations.
        let other = TestPoll("1234-K7QXM-3PF9A")
        for i in 0..<40 {
            var r = poll.report(voter: UInt32(1000 + i), answer: .choice(0), at: UInt64(i), address: UInt64(5000 + i))
            switch i % 4 {
            case 0: r.data[20] ^= 0x10
            case 1: r = other.report(voter: UInt32(i), answer: .choice(1), address: UInt64(6000 + i))
            case 2: r = poll.report(voter: UInt32(2000 + i), answer: .choice(6), address: UInt64(7000 + i))
            default: r.data.removeLast()
            }
            reports.append(r)
        }
        return reports
    }

    func run(_ reports: [AdvertisementReport], policy: ChangePolicy) -> [QuestionResults?] {
        var p = IngestPipeline(secret: pollSecret(poll.code), changePolicy: policy)
        p.tally.open(.choice(1))
        p.tally.open(.choice(2))
        p.ingest(contentsOf: reports)
        // `changedVoters` counts voters whose counted answer was replaced while the tally ran, which
        // depends on the order ballots were heard in (a late, stale ballot is no change); everything
        // else must not.
        return [p.tally.results(question: 1), p.tally.results(question: 2)].map { r in
            r.map { var c = $0; c.changedVoters = 0; return c }
        }
    }

    func testReorderingAndDuplicationDoNotChangeResults() {
        for seed in UInt64(1)...12 {
            var rng = SplitMix64(seed: seed)
            let reports = scenario(&rng)
            for policy in ChangePolicy.allCases {
                let reference = run(reports, policy: policy)
                XCTAssertEqual(reference[0]?.voters, 40)
                XCTAssertEqual(reference[1]?.voters, 40)
                for _ in 0..<6 {
                    var shuffled = reports.shuffled(using: &rng)
                    for _ in 0..<Int.random(in: 0...200, using: &rng) {
                        if let r = reports.randomElement(using: &rng) {
                            shuffled.insert(r, at: Int.random(in: 0...shuffled.count, using: &rng))
                        }
                    }
                    XCTAssertEqual(run(shuffled, policy: policy), reference, "seed \(seed) \(policy)")
                }
            }
        }
    }

    func testResultsMatchAnIndependentModel() {
        // Latest wins = each voter's highest-sequence ballot; first-only = lowest.
        var rng = SplitMix64(seed: 99)
        let reports = scenario(&rng)
        let keyring = PollKeyring(secret: pollSecret(poll.code))
        var ballots: [Ballot] = []
        for r in reports { if case .success(let b) = BallotCodec.openAdvertisement(r.data, keyring: keyring), b.answer.fits(options: 4) { ballots.append(b) } }
        for policy in ChangePolicy.allCases {
            let results = run(reports.reversed(), policy: policy)
            for q in UInt8(1)...2 {
                var best: [UInt32: Ballot] = [:]
                for b in ballots where b.question == q {
                    if let cur = best[b.voterID] {
                        if (policy == .latestWins) == (b.sequence > cur.sequence) { best[b.voterID] = b }
                    } else { best[b.voterID] = b }
                }
                var model: [Answer: Int] = [:]
                for b in best.values { model[b.answer, default: 0] += 1 }
                let got = results[Int(q) - 1]?.countTable.filter { $0.value > 0 }
                XCTAssertEqual(got, model, "\(policy) q\(q)")
            }
        }
    }

    /// The same with verified ballots: honest voters' ballots heard in advertisements and, for some,
    /// read over GATT signed by the voter's key, plus classmates' unverified copies of their voter IDs
    /// (any sequence and answer). Any order and any repeats give the same results.
    func testReorderingAndDuplicationWithVerifiedBallotsDoNotChangeResults() {
        for seed in UInt64(1)...12 {
            var rng = SplitMix64(seed: seed)
            var stream: [(Ballot, BallotProof)] = []
            for voter in UInt32(1)...UInt32(30) {
                let pk = VoterPublicKey((0..<32).map { UInt8(truncatingIfNeeded: voter &* 31 &+ UInt32($0)) })!
                var seq: UInt16 = 0
                for q in UInt8(1)...2 {
                    for _ in 0..<Int.random(in: 1...3, using: &rng) {
                        seq += 1
                        let b = Ballot(voteID: poll.code.voteID, question: q, voterID: voter, sequence: seq,
                                       answer: .choice(UInt8.random(in: 0..<4, using: &rng)))
                        stream.append((b, .advertised))
                        if Int.random(in: 0..<3, using: &rng) > 0 { stream.append((b, .signed(pk))) }
                    }
                }
                if voter % 3 == 0 {
                    // A classmate's copy of this voter ID, unverified (a sequence the voter never uses: a
                    // same-sequence conflict between two unverified ballots is decided by arrival).
                    stream.append((Ballot(voteID: poll.code.voteID, question: UInt8.random(in: 1...2, using: &rng),
                                          voterID: voter, sequence: [0x8000, 0xFFFF].randomElement(using: &rng) ?? 0xFFFF,
                                          answer: .choice(UInt8.random(in: 0..<4, using: &rng))), .advertised))
                }
            }
            for policy in ChangePolicy.allCases {
                func run(_ s: [(Ballot, BallotProof)]) -> [QuestionResults?] {
                    var t = Tally(voteID: poll.code.voteID, policy: policy)
                    t.open(.choice(1))
                    t.open(.choice(2))
                    for (b, proof) in s { _ = t.record(b, from: DeviceAddress(rawValue: 1), at: .zero, proof: proof) }
                    return [t.results(question: 1), t.results(question: 2)].map { r in
                        r.map { var c = $0; c.changedVoters = 0; return c }
                    }
                }
                let reference = run(stream)
                XCTAssertEqual(reference[0]?.voters, 30)
                XCTAssertGreaterThan(reference[0]?.verifiedVoters ?? 0, 0)
                for _ in 0..<6 {
                    var shuffled = stream.shuffled(using: &rng)
                    for _ in 0..<Int.random(in: 0...100, using: &rng) {
                        if let x = stream.randomElement(using: &rng) {
                            shuffled.insert(x, at: Int.random(in: 0...shuffled.count, using: &rng))
                        }
                    }
                    XCTAssertEqual(run(shuffled), reference, "seed \(seed) \(policy)")
                }
            }
        }
    }
}
