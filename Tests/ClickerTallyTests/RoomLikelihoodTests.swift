import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import XCTest

import struct ClickerTransport.SplitMix64

/// The voters not yet counted, read from the arrivals (``RoomLikelihood``; ``TallyBeacon`` with
/// extended acknowledgements; docs/DESIGN.md, "The STATE interval this tally announces"). The rooms here follow the model the tally
/// assumes, with seeded Poisson arrivals; TimeToCollect `--beacon` runs it on the simulated air.
final class RoomLikelihoodTests: XCTestCase {
    let poll = TestPoll()
    var key: BeaconKey { BeaconKey(poll.secret) }
    let q = BeaconQuestionInfo(number: 1, kind: .single, options: 4)
    let a = 0.000360  // BeaconAirModel.ballotAirTime

    /// A Poisson draw of mean `mean`.
    static func poisson(_ mean: Double, _ rng: inout SplitMix64) -> Int {
        let limit = exp(-mean)
        var k = 0, p = 1.0
        repeat {
            k += 1
            p *= Double(rng.next() >> 11) * 0x1p-53
        } while p > limit
        return k - 1
    }

    /// A room of `room` voters that cast at t = 0, at the STATE period `period` (s), each quiet once
    /// counted: 100 ms windows of arrivals drawn from the model for `seconds`.
    func observed(room: Int, period: Double, seconds: Double, seed: UInt64) -> (likelihood: RoomLikelihood, counted: Int, at: UInt64) {
        var rng = SplitMix64(seed: seed)
        var l = RoomLikelihood()
        var counted = 0
        var ns: UInt64 = 0
        for _ in 0..<Int(seconds * 10) {
            let u = Double(room - counted)
            let n = min(room - counted, Self.poisson(u / period * exp(-2 * a * u / period) * 0.1, &rng))
            counted += n
            ns += 100_000_000
            l.observe(.init(end: ns, seconds: 0.1, arrivals: n, period: period, counted: counted, loudCounted: 0,
                            quiet: 0, listening: 1))
        }
        return (l, counted, ns)
    }

    /// In the first half second a room of 300 is counted at about the rate of one of 2,500 (the two
    /// roots), and the likelihood has a peak at each. The estimate takes the larger room: reading a
    /// large room as small would choke it.
    func testEarlyOnTheEstimateTakesTheLargerOfTheRoomsThatExplainTheArrivals() throws {
        for seed in UInt64(1)...5 {
            for seconds in [0.2, 0.5] {
                let o = observed(room: 300, period: 0.725, seconds: seconds, seed: seed)
                let u = try XCTUnwrap(o.likelihood.uncounted(counted: o.counted, at: o.at))
                XCTAssertGreaterThan(u, 1000, "seed \(seed), \(seconds) s: \(o.counted) counted, estimate \(u) not yet counted")
            }
        }
    }

    /// Once the tally's counting has lowered a room's rate for a second, the estimate is the room's: the
    /// voters counted plus the estimate are within a tenth of the room (10 voters for a room of 100),
    /// for small and large rooms alike. The spread is the arrivals' own noise: the estimate is the most
    /// likely room, with no margin added.
    func testAFallingRateGivesTheVotersNotYetCounted() throws {
        for room in [100, 300, 600] {
            for seed in UInt64(1)...5 {
                let o = observed(room: room, period: 0.725, seconds: 1.5, seed: seed)
                let truth = room - o.counted
                let u = try XCTUnwrap(o.likelihood.uncounted(counted: o.counted, at: o.at))
                XCTAssertEqual(Double(u), Double(truth), accuracy: max(10, 0.1 * Double(room)),
                               "room \(room), seed \(seed): \(truth) not yet counted, estimate \(u)")
            }
        }
    }

    /// An overloaded room (3,000 voters at 725 ms, a load of 3) is counted at a low, steady rate, as a
    /// nearly finished small room would be. It is never read as small: at every window the estimate is
    /// at least 1,000 voters not yet counted.
    func testAnOverloadedRoomIsNeverReadAsASmallOne() {
        for seed in UInt64(1)...5 {
            var rng = SplitMix64(seed: seed)
            var l = RoomLikelihood()
            var counted = 0
            for w in 1...40 {
                let u = Double(3000 - counted)
                let n = Self.poisson(u / 0.725 * exp(-2 * a * u / 0.725) * 0.1, &rng)
                counted += n
                l.observe(.init(end: UInt64(w) * 100_000_000, seconds: 0.1, arrivals: n, period: 0.725, counted: counted,
                                loudCounted: 0, quiet: 0, listening: 1))
                if let u = l.uncounted(counted: counted, at: UInt64(w) * 100_000_000) {
                    XCTAssertGreaterThanOrEqual(u, 1000, "seed \(seed), window \(w): \(counted) counted, estimate \(u)")
                }
            }
        }
    }

    /// Fewer than 10 arrivals say nothing; windows fade with the half-life.
    func testThinEvidenceSaysNothingAndOldWindowsFade() {
        var l = RoomLikelihood()
        l.observe(.init(end: 100_000_000, seconds: 0.1, arrivals: 9, period: 0.1, counted: 9, loudCounted: 0, quiet: 0, listening: 1))
        XCTAssertNil(l.uncounted(counted: 9, at: 100_000_000))
        l.observe(.init(end: 200_000_000, seconds: 0.1, arrivals: 9, period: 0.1, counted: 18, loudCounted: 0, quiet: 0, listening: 1))
        XCTAssertNotNil(l.uncounted(counted: 18, at: 200_000_000))
        let now = l.logLikelihood(room: 40, at: 200_000_000) - l.logLikelihood(room: 30, at: 200_000_000)
        let later = l.logLikelihood(room: 40, at: 1_200_000_000) - l.logLikelihood(room: 30, at: 1_200_000_000)
        XCTAssertEqual(later, now / 2, accuracy: 1e-9 * abs(now), "one half-life later the evidence weighs half")
    }

    struct Run {
        var intervals: [Int] = []
        /// When 99 % of the voters were counted (s), and each voter's delay from casting to counted.
        var t99: Double?
        var delays: [Double] = []
    }

    /// A tally with the given capabilities and `casts.count` voters (voter i casts at `casts[i]` s) that
    /// follow its STATE interval at once, starting at a random moment of it (as `StaggeredStart`), one
    /// event every interval plus 0–10 ms, each heard with the model's probability (10 ms steps, a
    /// payload every 100 ms). A voter hears each payload that acknowledges it with probability 0.6 (its
    /// frames collide too) and goes quiet 200 ms after it first does, unless it is one of the first `deaf`
    /// voters, which never hear it. Returns the STATE interval announced at each
    /// 100 ms from 0.5 s on, when 99 % were counted, and each voter's delay from casting to counted.
    func run(_ capabilities: BroadcastCapabilities, casts: [Double], deaf: Int = 0, seconds: Double, seed: UInt64) -> Run {
        var rng = SplitMix64(seed: seed)
        var t = TallyBeacon(key: key, mode: .anonymous, capabilities: capabilities)
        var result = Run()
        var announced = 720
        var countedAt = [Double?](repeating: nil, count: casts.count)
        var acknowledgedAt = [Double?](repeating: nil, count: casts.count)
        var counted = 0
        var next = [Double?](repeating: nil, count: casts.count)  // each voter's next event
        var following = announced
        for step in 0..<Int(seconds * 100) {
            let now = Double(step) / 100, ns = UInt64(step) * 10_000_000
            if step % 10 == 0 {
                let p = t.payload(.open(q), tick: UInt32(step) + 1, at: ns)
                if let ms = BeaconCodec.state(in: p, key: key)?.interval.milliseconds {
                    announced = ms
                }
                for i in casts.indices where countedAt[i] != nil && acknowledgedAt[i] == nil
                    && Double(rng.next() >> 11) * 0x1p-53 < 0.6 { acknowledgedAt[i] = now }
                if step >= 50 { result.intervals.append(announced) }
            }
            let period = Double(announced) / 1000
            func draw() -> Double { Double(rng.next() >> 11) * 0x1p-53 }
            if announced != following {
                following = announced
                for i in casts.indices where next[i] != nil { next[i] = now + period * draw() }
            }
            let loud = casts.indices.filter { i in
                casts[i] <= now && (i < deaf || acknowledgedAt[i].map { now < $0 + 0.2 } ?? true)
            }
            let clear = exp(-2 * a * Double(loud.count) / (period + 0.005))
            for i in loud {
                guard let at = next[i] else { next[i] = now + period * draw(); continue }
                guard at <= now else { continue }
                next[i] = at + period + 0.01 * draw()
                guard draw() < clear else { continue }
                t.counted(VoterKey(mode: .anonymous, voterID: UInt32(i)), question: 1, sequence: 1, at: ns)
                if countedAt[i] == nil {
                    countedAt[i] = now
                    counted += 1
                    result.delays.append(now - casts[i])
                }
            }
            if result.t99 == nil, counted >= casts.count * 99 / 100 { result.t99 = now }
        }
        return result
    }

    /// With extended acknowledgements a room of 300 is read as 300 once its rate falls, and the tally
    /// shortens the interval as it empties: 99 % counted within 1.6 s (it fails when the tally ignores
    /// the likelihood and keeps the opening's 720 ms). A room of 3,000 keeps the longest interval the room allows (720 ms for 1,000) throughout: neither
    /// the likelihood nor the repeats take it for a small one.
    func testWithExtendedAcknowledgementsASmallRoomGetsAShortIntervalAndALargeOneKeepsALongOne() throws {
        for seed in UInt64(1)...5 {
            let burst = [Double](repeating: 0, count: 300)
            let small = run(.extended, casts: burst, seconds: 3, seed: seed)
            XCTAssertLessThan(try XCTUnwrap(small.t99), 1.6, "seed \(seed): intervals \(small.intervals)")
            let large = run(.extended, casts: [Double](repeating: 0, count: 3000), seconds: 3, seed: seed)
            XCTAssertEqual(large.intervals.min(), 720, "seed \(seed): intervals \(large.intervals)")
        }
    }

    /// New voters at a low, steady rate (30 a second for 4 s at the opening's 720 ms), as from a class
    /// casting over time or from an overloaded room: the likelihood prefers the overloaded room. When the
    /// tally hears each counted voter again at its next event (a light load), the repeats rule that room
    /// out and the interval shortens; when it hears none again, it stays long. The first half fails when
    /// the repeats are not asked.
    func testRepeatsThatShowALightLoadRuleOutAnOverloadedRoom() {
        func announced(heardAgain: Bool) -> Int {
            var t = TallyBeacon(key: key, mode: .anonymous, capabilities: .extended)
            var interval = 720, next: UInt32 = 0
            var again: [(at: UInt64, voter: VoterKey)] = []
            for step in 1...40 {
                let now = UInt64(step) * 100_000_000
                for k in 0..<3 {
                    let at = now - 100_000_000 + UInt64(k) * 33_000_000
                    let v = VoterKey(mode: .anonymous, voterID: next)
                    t.counted(v, question: 1, sequence: 1, at: at)
                    if heardAgain { again.append((at + UInt64(interval + 5) * 1_000_000, v)) }
                    next += 1
                }
                for r in again where r.at <= now { t.counted(r.voter, question: 1, sequence: 1, at: r.at) }
                again.removeAll { $0.at <= now }
                let p = t.payload(.open(q), tick: UInt32(step * 10), at: now)
                if let ms = BeaconCodec.state(in: p, key: key)?.interval.milliseconds {
                    interval = ms
                }
            }
            return interval
        }
        XCTAssertLessThan(announced(heardAgain: true), 300)
        XCTAssertGreaterThanOrEqual(announced(heardAgain: false), 700)
    }

    /// A room of 300 of which 100 never hear their acknowledgement: they stay loud, and the tally,
    /// hearing them again after their acknowledgement went out, counts them as loud: after 2 s it never
    /// announces an interval under 50 ms, at which they alone would load the channel 1.4 times its best.
    /// A test that fails when acknowledged voters are taken to be quiet whatever the tally hears.
    func testVotersThatMissedTheirAcknowledgementAreCountedAsLoud() {
        for seed in UInt64(1)...3 {
            let r = run(.extended, casts: [Double](repeating: 0, count: 300), deaf: 100, seconds: 4, seed: seed)
            XCTAssertGreaterThanOrEqual(r.intervals.suffix(20).min() ?? 0, 50, "seed \(seed): intervals \(r.intervals)")
        }
    }
}
