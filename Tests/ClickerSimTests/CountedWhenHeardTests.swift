import ClickerSim
import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

/// The software must never be slower than the air: each voter is counted by the real ingest pipeline
/// at the very report that first delivered its ballot.
final class CountedWhenHeardTests: XCTestCase {
    /// First-heard and first-counted virtual times of every voter in one seeded round.
    struct Round {
        var heard: [RadioInstant?]
        var counted: [RadioInstant?]
        var reports: Int
    }

    /// 300 voters advertising real sealed ballots at `interval`; every report goes through `pipeline`.
    func round(seed: UInt64, voters n: Int = 300, interval: Duration = .milliseconds(100), until end: Double = 15,
               policy: FloodPolicy = FloodPolicy()) async throws -> Round {
        var rng = SplitMix64(seed: seed)
        let code = JoinCode.random(using: &rng)
        var ads: [[UInt8]] = []
        var byID: [UInt32: Int] = [:]
        while ads.count < n {
            let sealer = BallotSealer(secret: pollSecret(code), deviceKey: DeviceKey.generate(using: &rng))
            guard byID[sealer.voterID] == nil else { continue }
            byID[sealer.voterID] = ads.count
            ads.append(sealer.advertisement(question: 1, sequence: 1, answer: .choice(UInt8(ads.count % 4))))
        }
        let byPayload = Dictionary(uniqueKeysWithValues: ads.enumerated().map { ($1, $0) })
        var pipeline = IngestPipeline(secret: pollSecret(code), policy: policy)
        pipeline.tally.open(.choice(1))

        let air = SimulatedAir(AirConfiguration(seed: seed))
        let stream = air.central().advertisements(companyID: BallotFormat.companyID)
        for ad in ads {
            try await air.addPeripheral().advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: ad,
                                                                       interval: interval))
        }
        air.run(until: at(end))
        let reports = try await drain(air, stream)

        var heard = [RadioInstant?](repeating: nil, count: n)
        var counted = [RadioInstant?](repeating: nil, count: n)
        for r in reports {
            if let v = byPayload[r.data], heard[v] == nil { heard[v] = r.timestamp }
            let result = pipeline.ingest(r)
            if result.outcome == .new, let b = result.ballot, let v = byID[b.voterID] {
                XCTAssertNil(counted[v], "voter \(v) counted as new twice")
                counted[v] = r.timestamp
            }
        }
        XCTAssertEqual(pipeline.tally.results(question: 1)?.voters, counted.compactMap { $0 }.count)
        return Round(heard: heard, counted: counted, reports: reports.count)
    }

    func testEveryVoterIsCountedAtTheInstantItIsFirstHeard() async throws {
        let r = try await round(seed: 20_251_121)
        // The air must have delivered every voter within the round, and plenty of repeats, for the
        // comparison to cover the cache and the rate limiter.
        XCTAssertEqual(r.heard.compactMap { $0 }.count, 300)
        XCTAssertGreaterThan(r.reports, 300 * 10)
        for v in 0..<300 {
            XCTAssertNotNil(r.counted[v], "voter \(v) heard but never counted")
            XCTAssertEqual(r.counted[v], r.heard[v], "voter \(v) counted later than first heard")
        }
    }

    /// The comparison above can fail: a pipeline that rate-limits honest voters counts some of them late.
    func testComparisonDetectsAPipelineThatDelaysVoters() async throws {
        var strict = FloodPolicy()
        strict.untrustedPerSecond = 20  // fewer verifications than new voters per second at the start
        strict.untrustedBurst = 20
        let r = try await round(seed: 20_251_121, policy: strict)
        XCTAssertEqual(r.heard.compactMap { $0 }.count, 300)
        let late = (0..<300).filter { r.counted[$0] != r.heard[$0] }
        XCTAssertGreaterThan(late.count, 0, "a rate-limited pipeline should count some voters after first heard")
    }
}
