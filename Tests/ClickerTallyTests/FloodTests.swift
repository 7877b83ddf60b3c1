import struct ClickerTransport.SplitMix64
import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

/// Thousands of forged voter IDs per second: each is rejected and counted, verification work is
/// bounded, the alert goes up, and honest voters are still counted.
final class FloodTests: XCTestCase {
    let poll = TestPoll()

    func forged(_ rng: inout SplitMix64, at ms: UInt64, address: UInt64) -> AdvertisementReport {
        var r = poll.report(voter: UInt32.random(in: 0...UInt32.max, using: &rng), answer: .choice(0), at: ms, address: address)
        for i in 14..<22 { r.data[i] = UInt8.random(in: 0...255, using: &rng) }  // guessed tag
        return r
    }

    func testForgeriesFromRandomAddressesAreRejectedAndHonestVotesCounted() {
        var policy = FloodPolicy()
        policy.untrustedPerSecond = 2_000
        policy.untrustedBurst = 2_000
        var p = IngestPipeline(secret: pollSecret(poll.code), policy: policy)
        p.tally.open(.choice(1))
        var rng = SplitMix64(seed: 31)
        var forgedCount = 0, forgedRejected = 0, honestTurnedAway = 0
        // 10 seconds; each millisecond: 10 forgeries from fresh random addresses (10,000/s),
        // and 50 honest voters each advertising every 100 ms.
        for ms in UInt64(0)..<10_000 {
            for _ in 0..<10 {
                if case .rejected = p.ingest(forged(&rng, at: ms, address: UInt64.random(in: 1 << 40..<1 << 47, using: &rng))).outcome {
                    forgedRejected += 1
                }
                forgedCount += 1
            }
            if ms % 2 == 0 {
                let voter = UInt32((ms / 2) % 50)
                // Before its first report is admitted, an honest voter is untrusted and may be turned away.
                if case .rejected = p.ingest(poll.report(voter: 100 + voter, answer: .choice(UInt8(voter % 4)), at: ms,
                                                         address: UInt64(100 + voter))).outcome {
                    honestTurnedAway += 1
                }
            }
        }
        let r = p.tally.results(question: 1)
        XCTAssertEqual(r?.voters, 50, "every honest voter counted")
        XCTAssertEqual(r?.countTable.values.reduce(0, +), 50)
        let rej = p.tally.rejections
        XCTAssertEqual(forgedRejected, forgedCount, "every forgery rejected")
        XCTAssertEqual((rej[.badTag] ?? 0) + (rej[.rateLimited] ?? 0), forgedCount + honestTurnedAway, "and counted by reason")
        // Verification work bounded by the untrusted budget (2,000/s over 10 s, plus the burst) + honest.
        XCTAssertLessThanOrEqual(p.stats.verifications, 2_000 * 11 + 50)
        XCTAssertGreaterThan(rej[.rateLimited] ?? 0, 0)
        XCTAssertTrue(p.flood.alert)
        XCTAssertEqual(p.flood.suspiciousTotal, forgedCount + honestTurnedAway)
    }

    func testOneAddressFloodingIsRateLimitedPerAddress() {
        var p = IngestPipeline(secret: pollSecret(poll.code))
        p.tally.open(.choice(1))
        var rng = SplitMix64(seed: 32)
        for ms in UInt64(0)..<1000 {
            for _ in 0..<5 { _ = p.ingest(forged(&rng, at: ms, address: 42)) }
        }
        // Burst 16 plus 8/s for 1 s.
        XCTAssertLessThanOrEqual(p.stats.verifications, 16 + 8 + 1)
        XCTAssertEqual(p.tally.rejections[.rateLimited, default: 0] + p.tally.rejections[.badTag, default: 0], 5000)
        // Other addresses are unaffected.
        XCTAssertEqual(p.ingest(poll.report(voter: 1, answer: .choice(0), at: 999, address: 43)).outcome, .new)
    }

    func testAlertRisesAndFallsWithTheReportClock() {
        var p = IngestPipeline(secret: pollSecret(poll.code))
        p.tally.open(.choice(1))
        var rng = SplitMix64(seed: 33)
        XCTAssertFalse(p.flood.alert)
        for i in 0..<49 { _ = p.ingest(forged(&rng, at: 100, address: UInt64(i))) }
        XCTAssertFalse(p.flood.alert, "below threshold")
        _ = p.ingest(forged(&rng, at: 100, address: 49))
        XCTAssertTrue(p.flood.alert)
        XCTAssertEqual(p.flood.lastAlert, .ms(100))
        _ = p.ingest(poll.report(voter: 1, answer: .choice(0), at: 5_000))
        XCTAssertTrue(p.flood.alert, "held for 10 s")
        _ = p.ingest(poll.report(voter: 1, answer: .choice(0), at: 10_200))
        XCTAssertFalse(p.flood.alert, "cleared after the hold")
        // Ordinary neighbours (other vote IDs) never raise it.
        let other = TestPoll("1234-K7QXM-3PF9A")
        for i in 0..<500 { _ = p.ingest(other.report(voter: UInt32(i), answer: .choice(0), at: 20_000)) }
        XCTAssertFalse(p.flood.alert)
    }

    /// A ballot recorded while question 1 was open, replayed after it closed from an address the tally
    /// never heard: closing the question dropped it from the cache, so it is verified again and is
    /// authentic, then rejected as `otherQuestion`. The address must stay untrusted: its forgeries
    /// still draw on the shared budget (4 tokens here, all at one instant so none refill).
    func testAReplayedBallotOfAClosedQuestionLeavesItsAddressUntrusted() {
        var policy = FloodPolicy()
        policy.untrustedPerSecond = 1_000  // 100 per 100 ms window: no admission draws below that
        policy.untrustedBurst = 4
        var p = IngestPipeline(secret: pollSecret(poll.code), policy: policy)
        p.tally.open(.choice(1))
        let recorded = poll.report(voter: 7, answer: .choice(2), at: 0, address: 7)
        XCTAssertEqual(p.ingest(recorded).outcome, .new)
        XCTAssertEqual(p.footprint.trustedAddresses, 1, "the voter's own address is trusted")
        p.tally.close(question: 1)
        p.forgetClosedQuestions()
        p.tally.open(.choice(2))

        let replayer = DeviceAddress(rawValue: 0x66_0000)
        var replay = recorded
        replay.address = replayer
        replay.timestamp = .ms(10)
        let verifiedBefore = p.stats.verifications
        let r = p.ingest(replay)
        XCTAssertEqual(r.outcome, .rejected(.otherQuestion))
        XCTAssertNotNil(r.ballot, "the replay was verified as authentic (the premise of the attack)")
        XCTAssertEqual(p.stats.verifications, verifiedBefore + 1)
        XCTAssertEqual(p.footprint.trustedAddresses, 1, "the replaying address is not trusted")

        // Its forgeries: 3 shared tokens are left, so 3 are verified (badTag) and 5 turned away, although
        // its own per-address burst (16) would allow all 8. A trusted address would get 8 verifications.
        var rng = SplitMix64(seed: 35)
        var outcomes: [Rejection: Int] = [:]
        for _ in 0..<8 {
            if case .rejected(let why) = p.ingest(forged(&rng, at: 10, address: replayer.rawValue)).outcome { outcomes[why, default: 0] += 1 }
        }
        XCTAssertEqual(outcomes, [.badTag: 3, .rateLimited: 5])
        XCTAssertEqual(p.footprint.trustedAddresses, 1)
    }

    /// Honest voters who start 1 s into a 100,000/s flood, with the shared budget binding (20,000/s):
    /// admission is a draw with probability p = budget / offered rate ≈ 20,000 / 100,500 ≥ 0.19 for
    /// every report, whenever it arrives, so a voter advertising every 100 ms is still uncounted after
    /// m reports with probability (1 − p)^m. For all 50 voters to be counted with probability at least
    /// 1 − 10⁻⁶: 50 · 0.81^m ≤ 10⁻⁶, m ≥ ln(5·10⁷) / −ln 0.81 = 84.1, so 85 reports, 8.5 s after they
    /// start. Each millisecond's forgeries are reported before the honest ones (one controller batch).
    func testHonestVotersStartingMidFloodAreCountedWithinTheDerivedBound() {
        var policy = FloodPolicy()
        policy.untrustedPerSecond = 20_000
        policy.untrustedBurst = 20_000
        policy.admissionSeed = 7
        var p = IngestPipeline(secret: pollSecret(poll.code), policy: policy)
        p.tally.open(.choice(1))
        var rng = SplitMix64(seed: 34)
        let template = poll.report(voter: 0xDEAD_BEEF, answer: .choice(0))
        let honest = (0..<50).map { v in poll.report(voter: 1_000 + UInt32(v), answer: .choice(UInt8(v % 4)), address: UInt64(1_000 + v)) }
        let start: UInt64 = 1_000, end: UInt64 = start + 8_500
        var countedAt = [UInt64?](repeating: nil, count: 50)
        var forgedCount = 0, honestTurnedAway = 0
        for ms in UInt64(0)..<end {
            for _ in 0..<100 {
                var f = template
                f.address = DeviceAddress(rawValue: UInt64.random(in: 1 << 40..<1 << 47, using: &rng))
                f.timestamp = .ms(ms)
                for i in 14..<22 { f.data[i] = UInt8.random(in: 0...255, using: &rng) }
                _ = p.ingest(f)
                forgedCount += 1
            }
            guard ms >= start else { continue }
            for v in 0..<50 where ms % 100 == UInt64(v * 2) {
                var r = honest[v]
                r.timestamp = .ms(ms)
                switch p.ingest(r).outcome {
                case .new: countedAt[v] = ms - start
                case .rejected: honestTurnedAway += 1
                default: break
                }
            }
        }
        let uncounted = (0..<50).filter { countedAt[$0] == nil }
        XCTAssertEqual(uncounted, [], "honest voters never counted within 8.5 s of starting mid-flood")
        XCTAssertEqual(p.tally.results(question: 1)?.voters, uncounted.isEmpty ? 50 : 50 - uncounted.count)
        // The budget really binds: most forgeries are turned away, and verification work stays
        // within the budget (20,000/s over 9.5 s, plus the burst) and the honest voters.
        XCTAssertGreaterThan(p.tally.rejections[.rateLimited] ?? 0, forgedCount * 3 / 4)
        XCTAssertLessThanOrEqual(p.stats.verifications, 20_000 * 10 + 20_000 + 50)
        XCTAssertEqual((p.tally.rejections[.badTag] ?? 0) + (p.tally.rejections[.rateLimited] ?? 0),
                       forgedCount + honestTurnedAway, "every forgery and every turned-away report is counted by reason")
        let delays = countedAt.compactMap { $0 }.sorted()
        if !delays.isEmpty { print("mid-flood voters counted after (ms): median \(delays[delays.count / 2]), max \(delays.last ?? 0)") }
        // The median voter: admitted with probability ≥ 0.19 per report, half the voters are counted
        // within 4 reports (1 − 0.81^4 = 0.57), which is at most 0.4 s after their first at ≤ 98 ms.
        XCTAssertLessThanOrEqual(delays.isEmpty ? .max : delays[delays.count / 2], 500, "\(delays)")
    }
}
