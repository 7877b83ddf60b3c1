import struct ClickerTransport.SplitMix64
import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

/// The pipeline's caches and per-address tables follow the room, not the length of the run.
final class BoundedCacheTests: XCTestCase {
    let poll = TestPoll()

    /// Closing a question drops its cached ballots; a straggler still advertising it costs one
    /// verification, is rejected as `otherQuestion` as before, and its repeats are cache hits again.
    func testClosedQuestionsLeaveTheCacheOfGoodBallots() {
        var p = IngestPipeline(secret: poll.secret)
        p.tally.open(.choice(1))
        for v in 0..<50 as Range<UInt32> {
            for seq in 1...4 as ClosedRange<UInt16> {
                _ = p.ingest(poll.report(voter: v, sequence: seq, answer: .choice(UInt8(seq % 4)), at: UInt64(seq) * 1000))
            }
        }
        XCTAssertEqual(p.footprint.goodCache, 200)
        p.tally.close(question: 1)
        p.tally.open(.choice(2))
        p.forgetClosedQuestions()
        XCTAssertEqual(p.footprint.goodCache, 0, "the closed question's ballots left the cache")
        let straggler = poll.report(voter: 7, sequence: 4, answer: .choice(0), at: 10_000)
        let before = p.stats.verifications
        XCTAssertEqual(p.ingest(straggler).outcome, .rejected(.otherQuestion))
        XCTAssertEqual(p.ingest(straggler).outcome, .rejected(.otherQuestion))
        XCTAssertEqual(p.stats.verifications, before + 1, "one verification, then a cache hit")
        XCTAssertEqual(p.tally.rejections[.otherQuestion], 2)
        let vote = poll.report(voter: 7, question: 2, sequence: 1, answer: .choice(2), at: 10_100)
        XCTAssertEqual(p.ingest(vote).outcome, .new)
    }

    /// An hour of addresses coming and going (40,000 of them, each heard once, 10 per 100 ms):
    /// the table of rate-limit states holds the addresses of the last seconds, never all of them.
    /// Before, it grew to 65,536 entries before being emptied.
    func testRateLimitStatesOfIdleAddressesAreForgotten() {
        var p = IngestPipeline(secret: poll.secret)
        p.tally.open(.choice(1))
        var rng = SplitMix64(seed: 5)
        var largest = 0
        for i in 0..<40_000 as Range<UInt64> {
            var r = poll.report(voter: UInt32(i), answer: .choice(0), at: i * 10, address: 1 << 40 + i)
            for k in 14..<22 { r.data[k] = UInt8.random(in: 0...255, using: &rng) }  // a guessed tag
            XCTAssertEqual(p.ingest(r).outcome, .rejected(.badTag))
            largest = max(largest, p.footprint.rateLimitedAddresses)
        }
        XCTAssertLessThanOrEqual(largest, 2048, "rate-limit states grew with the addresses ever heard")
        XCTAssertEqual(p.tally.rejections[.badTag], 40_000, "every forgery still counted")
    }

    /// A state forgotten while idle is the same as a new one: an address that floods is limited
    /// exactly as before, trimming or not.
    func testForgettingIdleStatesKeepsTheLimitOfABusyAddress() {
        var policy = FloodPolicy()
        policy.perAddressBurst = 16
        policy.perAddressPerSecond = 8
        var p = IngestPipeline(secret: poll.secret, policy: policy)
        p.tally.open(.choice(1))
        var rng = SplitMix64(seed: 9)
        var admitted = 0
        // One busy address sending 100 forgeries a second for 10 s while 3,000 others pass by once.
        for ms in stride(from: UInt64(0), to: 10_000, by: 10) {
            var r = poll.report(voter: UInt32(ms), answer: .choice(0), at: ms, address: 42)
            for k in 14..<22 { r.data[k] = UInt8.random(in: 0...255, using: &rng) }
            if p.ingest(r).outcome == .rejected(.badTag) { admitted += 1 }
            for j in 0..<3 as Range<UInt64> {
                var o = poll.report(voter: UInt32(ms + j), answer: .choice(0), at: ms, address: 1 << 40 + ms * 3 + j)
                for k in 14..<22 { o.data[k] = UInt8.random(in: 0...255, using: &rng) }
                _ = p.ingest(o)
            }
        }
        // Burst 16 + 8/s over 10 s: about 95.
        XCTAssertTrue((94...96).contains(admitted), "busy address verified \(admitted) times")
    }
}
