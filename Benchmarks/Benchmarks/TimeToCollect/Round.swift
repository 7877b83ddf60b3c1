// One round of TimeToCollect: N voters on the simulated air, one scanning central, the times at which
// each voter is first heard (and, with a poll, counted); what the tally does besides scanning is a TallyScheme.

import ClickerSim
import ClickerTally
import ClickerTransport
import ClickerWire

#if canImport(Glibc)
import Glibc
#endif

/// Decides whether a report counts as a voter heard, and which voter.
protocol HeardDetector {
    /// The voter this report proves heard, or nil when it does not count.
    mutating func voter(in report: AdvertisementReport) -> Int?
}

/// Default: the first four data bytes carry the voter's index, the rest must be intact.
struct PayloadIndexDetector: HeardDetector {
    let voters: Int
    func voter(in report: AdvertisementReport) -> Int? {
        guard report.data.count == 24, report.data[4...].allSatisfy({ $0 == 0xA5 }) else { return nil }
        let i = report.data.prefix(4).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        return i < voters ? i : nil
    }
}

/// Pipeline mode: a report is the voter heard when its data is exactly the voter's sealed ballot.
struct BallotPayloadDetector: HeardDetector {
    let index: [[UInt8]: Int]
    func voter(in report: AdvertisementReport) -> Int? { index[report.data] }
}

/// A poll of real voters: a seeded join code, one seeded device key per voter (distinct voter IDs),
/// each voter's sealed advertisement for question 1.
struct RealPoll {
    let joinCode: JoinCode
    let secret: PollSecret
    let advertisements: [[UInt8]]
    let voterIndex: [UInt32: Int]

    init(voters n: Int, seed: UInt64) {
        var rng = SplitMix64(seed: seed ^ 0x5EA1_ED00)
        joinCode = JoinCode.random(using: &rng)
        secret = PollSecret(deriving: joinCode)
        var ads: [[UInt8]] = []
        var index: [UInt32: Int] = [:]
        while ads.count < n {
            let sealer = BallotSealer(secret: secret, deviceKey: DeviceKey.generate(using: &rng))
            guard index[sealer.voterID] == nil else { continue }  // two voters must not share an ID
            index[sealer.voterID] = ads.count
            ads.append(sealer.advertisement(question: 1, sequence: 1, answer: .choice(UInt8(ads.count % 4))))
        }
        advertisements = ads
        voterIndex = index
    }

    /// A fresh pipeline for this poll with question 1 open.
    func pipeline() -> IngestPipeline {
        var p = IngestPipeline(secret: secret)
        p.tally.open(.choice(1))
        return p
    }
}

/// CPU time of the calling thread, in nanoseconds.
func threadCPUNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func votePayload(_ i: Int, interval: Duration) -> AdvertisingPayload {
    var data = [UInt8](repeating: 0xA5, count: 24)  // 24 bytes + flags + MSD header = 31 bytes of AD
    for k in 0..<4 { data[k] = UInt8(truncatingIfNeeded: i >> (8 * k)) }
    return AdvertisingPayload(companyID: 0xFFFF, data: data, interval: interval)
}

/// When the share `f` of `times` (one per voter, nil: never) was reached; nil when it never was.
func reached(_ f: Double, _ times: [Double?]) -> Double? {
    let sorted = times.compactMap { $0 }.sorted()
    let k = Int((f * Double(times.count)).rounded(.up))
    return k <= sorted.count ? sorted[max(0, k - 1)] : nil
}

struct RoundResult {
    var t50: Double?
    var t99: Double?
    var t100: Double?
    var heardFraction: Double
    var cleanFraction: Double
    /// Pipeline mode: the same, counted by the tally.
    var counted50: Double? = nil
    var counted99: Double? = nil
    var counted100: Double? = nil
    var countedFraction: Double = 0
    /// Voters counted later than first heard (or heard but never counted), and the largest lag (s).
    var lateVoters = 0
    var maxLag = 0.0
    /// Reports ingested, CPU nanoseconds spent in `ingest`, reports rejected.
    var ingested = 0
    var ingestCPU: UInt64 = 0
    var rejected = 0
    /// Each voter's first heard time (s), cast time (s), and (beacon) delay from counted to "counted" shown.
    var firstHeard: [Double?] = []
    var castAt: [Double] = []
    var shown: [Double?] = []
}

/// What the tally does on air during a round besides scanning. One instance per round.
protocol TallyScheme: AnyObject {
    /// Whether the voters wait for the tally's beacon (the scheme starts their advertising); otherwise
    /// each advertises from its cast time at the round's interval.
    var votersFollowBeacon: Bool { get }
    /// Whether the tally's controller broadcasts extended advertising (`BroadcastConfiguration.extended`).
    var extendedBroadcast: Bool { get }
    /// Called once at t = 0; `voters[i]` is voter i's radio, `castAt[i]` when it casts (seconds).
    func start(air: SimulatedAir, central: any BroadcasterTransport, voters: [SimulatedPeripheral], castAt: [Double]) async throws
    /// Called after each step with every report of a voter the tally heard in it (index, radio time ns).
    func step(reports: [(voter: Int, at: UInt64)], now: UInt64, air: SimulatedAir, central: any BroadcasterTransport) async throws
    /// Whether the scheme has nothing left to wait for (every voter shown "counted").
    var isFinished: Bool { get }
    func finish()
}

/// Today's scheme: the tally only scans.
final class ScanOnly: TallyScheme {
    var votersFollowBeacon: Bool { false }
    var extendedBroadcast: Bool { false }
    var isFinished: Bool { true }
    func start(air: SimulatedAir, central: any BroadcasterTransport, voters: [SimulatedPeripheral], castAt: [Double]) async throws {}
    func step(reports: [(voter: Int, at: UInt64)], now: UInt64, air: SimulatedAir, central: any BroadcasterTransport) async throws {}
    func finish() {}
}

/// One round: returns the first-heard times (virtual seconds) of the voters, as the central's stream shows them.
/// With `poll`, the voters advertise its ballots and every report also goes through its pipeline.
/// With `hall`, the voters take its seats and its receivers are the tally's radios (HallTable.swift).
func runRound(voters n: Int, interval: Duration, seed: UInt64, horizon: Double, options: Options,
              detector: some HeardDetector, poll: RealPoll? = nil,
              scheme: any TallyScheme = ScanOnly(), castAt: [Double]? = nil, hall: LectureHall? = nil) async throws -> RoundResult {
    var detector = detector
    var pipeline = poll?.pipeline()
    var firstCounted = [Double?](repeating: nil, count: n)
    var counted = 0
    var batch: [AdvertisementReport] = []
    var stream: [AdvertisementReport] = []  // pipeline mode: every report of the round, in order
    // Voters that follow the beacon start when its STATE opens the question, all on the same frame; their
    // radios start at once, as a controller does, and the voter itself starts at a random moment
    // (StaggeredStart). Otherwise each voter's first event comes at a random phase, as buttons pressed at
    // unrelated moments, unless --synchronized.
    let phase: FirstEventPhase = scheme.votersFollowBeacon || options.synchronized ? .immediate : .randomWithinInterval
    let broadcast = BroadcastConfiguration(extended: scheme.extendedBroadcast, frameDwell: options.frameDwell)
    let air = SimulatedAir(hall.map { .hall($0, seed: seed, firstEventPhase: phase, broadcast: broadcast) }
                           ?? AirConfiguration(seed: seed, firstEventPhase: phase, broadcast: broadcast))
    let central: any BroadcasterTransport = hall == nil ? air.central() : EveryReceiver(air.centrals())
    // In a hall the receivers' reports come through the tally's merged central (HallTable.swift).
    let merged = hall.map { _ in MergedReports(air.receivingCentral(), companyID: 0xFFFF) }
    if merged != nil { await MergedReports.untilScanning(air.centrals()) }
    var reports = hall == nil ? air.central().advertisements(companyID: 0xFFFF).makeAsyncIterator() : nil
    var addresses: [DeviceAddress] = []
    var radios: [SimulatedPeripheral] = []
    let casts = castAt ?? [Double](repeating: 0, count: n)
    for i in 0..<n {
        let p = air.addPeripheral()
        if scheme.votersFollowBeacon {
            // It advertises when the beacon tells it to (the scheme does it).
        } else if casts[i] > 0 {
            let a = p.address, payload = votePayload(i, interval: interval)
            air.schedule(at: RadioInstant(nanoseconds: UInt64(casts[i] * 1e9))) { ctx in try? ctx.advertise(a, payload) }
        } else if let poll {
            try await p.advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: poll.advertisements[i],
                                                     interval: interval))
        } else {
            try await p.advertise(votePayload(i, interval: interval))
        }
        addresses.append(p.address)
        radios.append(p)
    }
    try await scheme.start(air: air, central: central, voters: radios, castAt: casts)
    var firstHeard = [Double?](repeating: nil, count: n)
    var heard = 0
    var delivered = 0
    // A beacon's voters react to what they hear at the end of each step: 10 ms steps keep that delay short.
    let step = scheme.votersFollowBeacon ? 0.01 : 0.05
    var t = 0.0
    while (heard < n || (pipeline != nil && counted < n) || !scheme.isFinished) && t < horizon {
        t = min(horizon, t + step)
        air.run(until: RadioInstant(nanoseconds: UInt64(t * 1e9)))
        // Drain exactly what this step delivered: never blocks, and the order is the air's.
        let now = air.statistics.reportsDelivered
        batch.removeAll(keepingCapacity: true)
        if let merged {
            batch = await merged.take(total: now)
        } else {
            for _ in delivered..<now {
                guard let r = try await reports?.next() else { break }
                batch.append(r)
            }
        }
        if let poll, var pl = pipeline.take() {
            // Taken out of the optional so that ingest mutates in place (a second reference would make
            // every step copy the pipeline's tables).
            for r in batch {
                let o = pl.ingest(r)
                guard o.outcome == .new, let b = o.ballot, let v = poll.voterIndex[b.voterID], firstCounted[v] == nil
                else { continue }
                firstCounted[v] = r.timestamp.seconds
                counted += 1
            }
            pipeline = pl
            stream.append(contentsOf: batch)
        }
        var voterReports: [(voter: Int, at: UInt64)] = []
        for r in batch {
            guard let v = detector.voter(in: r) else { continue }
            voterReports.append((v, r.timestamp.nanoseconds))
            guard firstHeard[v] == nil else { continue }
            firstHeard[v] = r.timestamp.seconds
            heard += 1
            if options.quietWhenHeard {
                let a = addresses[v]
                air.perform { ctx in ctx.stopAdvertising(a) }
            }
        }
        try await scheme.step(reports: voterReports, now: UInt64(t * 1e9), air: air, central: central)
        delivered = now
    }
    scheme.finish()
    air.finishAdvertisementStreams()
    let s = air.statistics
    var result = RoundResult(t50: reached(0.5, firstHeard), t99: reached(0.99, firstHeard), t100: reached(1.0, firstHeard),
                             heardFraction: Double(heard) / Double(n),
                             cleanFraction: s.pdusListened > 0 ? Double(s.pdusReceived) / Double(s.pdusListened) : 0)
    result.firstHeard = firstHeard
    result.castAt = casts
    if let b = scheme as? BeaconScheme { result.shown = b.shownDelays(counted: firstHeard) }
    if let pl = pipeline {
        result.counted50 = reached(0.5, firstCounted)
        result.counted99 = reached(0.99, firstCounted)
        result.counted100 = reached(1.0, firstCounted)
        result.countedFraction = Double(counted) / Double(n)
        for (h, c) in zip(firstHeard, firstCounted) {
            guard let h else { continue }
            guard let c else { result.lateVoters += 1; result.maxLag = .infinity; continue }
            if c > h { result.lateVoters += 1; result.maxLag = max(result.maxLag, c - h) }
        }
        // CPU: the round's reports, in the same order, through a fresh pipeline in one timed loop (timing each
        // 50 ms step instead would mostly measure the clock: most steps hold a handful of reports).
        if let poll {
            var fresh = poll.pipeline()
            var newVoters = 0
            let c0 = threadCPUNanoseconds()
            for r in stream where fresh.ingest(r).outcome == .new { newVoters += 1 }
            result.ingestCPU = threadCPUNanoseconds() - c0
            precondition(newVoters == counted && fresh.stats == pl.stats, "the replay must do what the round did")
        }
        result.ingested = pl.stats.reports
        result.rejected = pl.tally.rejectionCount
    }
    return result
}
