// TimeToCollect: how long until a crowd of voters has been heard, in virtual time.
//
// N voters advertise distinct payloads at one interval, all starting at t = 0 (each controller's
// first event at a random phase within its interval); one central scans at 100 % duty. For each
// (N, interval) and each seed, the time until 50 %, 99 % and 100 % of the voters have been heard
// at least once; the table shows medians over the seeds next to the analytic model.
//
// Run: swift run -c release --package-path Benchmarks TimeToCollect [--seeds 20] [--quick]
//      [--synchronized] [--quiet-when-heard] [--pipeline] [--beacon]
//
// With --beacon: today's scheme (voters at 100 ms, the tally only scans) and the beacon scheme (the tally's
// real `TallyBeacon` broadcasting, voters following it by the rules of docs/PROTOCOL.md §11.10) side by side
// on the same seeds, for 300 and 1,000 voters and for 300 voters casting over 10 s, with the channel's
// physical bound (BeaconTable.swift, BeaconScheme.swift). The beacon's voters start their radios at once,
// as controllers do, at the moment their `StaggeredStart` draws; with --synchronized they skip the draw.
//
// "Heard" is pluggable (`HeardDetector`): the default takes a report as a vote when its data is the
// voter's payload. With --pipeline every voter advertises a real sealed ballot, every report also goes
// through the real `IngestPipeline`, and the table shows "counted" (the tally's first `.new`) next to
// "heard" for the same runs, with the pipeline's CPU cost per report.

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

struct Options {
    var seeds = 20
    var quick = false
    var synchronized = false
    var quietWhenHeard = false
    var pipeline = false
    /// --beacon: today's scheme and the beacon side by side (300 and 1,000 voters, and a 10 s spread).
    var beacon = false
}

/// What the tally does on air during a round besides scanning. One instance per round.
protocol TallyScheme: AnyObject {
    /// A short label for the table.
    var label: String { get }
    /// Whether the voters wait for the tally's beacon (the scheme starts their advertising); otherwise
    /// each advertises from its cast time at the round's interval.
    var votersFollowBeacon: Bool { get }
    /// Whether the tally's controller broadcasts extended advertising (`BroadcastConfiguration.extended`).
    var extendedBroadcast: Bool { get }
    /// Called once at t = 0; `voters[i]` is voter i's radio, `castAt[i]` when it casts (seconds).
    func start(air: SimulatedAir, central: SimulatedCentral, voters: [SimulatedPeripheral], castAt: [Double]) async throws
    /// Called after each step with every report of a voter the tally heard in it (index, radio time ns).
    func step(reports: [(voter: Int, at: UInt64)], now: UInt64, air: SimulatedAir, central: SimulatedCentral) async throws
    /// Whether the scheme has nothing left to wait for (every voter shown "counted").
    var isFinished: Bool { get }
    func finish()
}

/// Today's scheme: the tally only scans.
final class ScanOnly: TallyScheme {
    var label: String { "today" }
    var votersFollowBeacon: Bool { false }
    var extendedBroadcast: Bool { false }
    var isFinished: Bool { true }
    func start(air: SimulatedAir, central: SimulatedCentral, voters: [SimulatedPeripheral], castAt: [Double]) async throws {}
    func step(reports: [(voter: Int, at: UInt64)], now: UInt64, air: SimulatedAir, central: SimulatedCentral) async throws {}
    func finish() {}
}

/// One round: returns the first-heard times (virtual seconds) of the voters, as the central's stream shows them.
/// With `poll`, the voters advertise its ballots and every report also goes through its pipeline.
func runRound(voters n: Int, interval: Duration, seed: UInt64, horizon: Double, options: Options,
              detector: some HeardDetector, poll: RealPoll? = nil,
              scheme: any TallyScheme = ScanOnly(), castAt: [Double]? = nil) async throws -> RoundResult {
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
    let air = SimulatedAir(AirConfiguration(seed: seed, firstEventPhase: phase,
                                            broadcast: BroadcastConfiguration(extended: scheme.extendedBroadcast)))
    let central = air.central()
    var reports = central.advertisements(companyID: 0xFFFF).makeAsyncIterator()
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
        for _ in delivered..<now {
            guard let r = try await reports.next() else { break }
            batch.append(r)
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
    func at(_ f: Double, _ all: [Double?]) -> Double? {
        let times = all.compactMap { $0 }.sorted()
        let k = Int((f * Double(n)).rounded(.up))
        return k <= times.count ? times[max(0, k - 1)] : nil
    }
    let s = air.statistics
    var result = RoundResult(t50: at(0.5, firstHeard), t99: at(0.99, firstHeard), t100: at(1.0, firstHeard),
                             heardFraction: Double(heard) / Double(n),
                             cleanFraction: s.pdusListened > 0 ? Double(s.pdusReceived) / Double(s.pdusListened) : 0)
    result.firstHeard = firstHeard
    result.castAt = casts
    if let b = scheme as? BeaconScheme { result.shown = b.shownDelays(counted: firstHeard) }
    if let pl = pipeline {
        result.counted50 = at(0.5, firstCounted)
        result.counted99 = at(0.99, firstCounted)
        result.counted100 = at(1.0, firstCounted)
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

func median(_ xs: [Double?]) -> Double? {
    // Unreached (nil) counts as +∞.
    let sorted = xs.map { $0 ?? .infinity }.sorted()
    guard !sorted.isEmpty else { return nil }
    let m = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    return m.isFinite ? m : nil
}

func fmt(_ x: Double?, horizon: Double) -> String {
    guard let x else { return ">" + format1(horizon) }
    return format1(x)
}

func format1(_ x: Double) -> String {
    if x >= 100 { return String(Int(x.rounded())) }
    let r = (x * 100).rounded() / 100
    var s = String(r)
    if let dot = s.firstIndex(of: ".") {
        let decimals = s.distance(from: dot, to: s.endIndex) - 1
        if decimals == 1 { s += "0" }
    }
    return s
}

func pad(_ s: String, _ w: Int) -> String { String(repeating: " ", count: max(0, w - s.count)) + s }

func parseOptions() -> Options {
    var o = Options()
    var args = CommandLine.arguments.dropFirst()
    while let a = args.popFirst() {
        switch a {
        case "--seeds": if let v = args.popFirst().flatMap({ Int($0) }), v > 0 { o.seeds = v }
        case "--quick": o.quick = true
        case "--synchronized": o.synchronized = true
        case "--quiet-when-heard": o.quietWhenHeard = true
        case "--pipeline": o.pipeline = true
        case "--beacon": o.beacon = true
        default:
            print("usage: TimeToCollect [--seeds N] [--quick] [--synchronized] [--quiet-when-heard] [--pipeline] [--beacon]")
            exit(2)
        }
    }
    return o
}

let options = parseOptions()
if options.pipeline {
    try await pipelineTable(options)
    exit(0)
}
if options.beacon {
    try await beaconTable(options)
    exit(0)
}
let airTime = LegacyAdvertising.airTime(of: votePayload(0, interval: .milliseconds(100)))
var configs: [(n: Int, ms: Int)] = []
for ms in [20, 100, 1280] { for n in [30, 100, 300, 1000] { configs.append((n, ms)) } }
configs += [(300, 225), (1000, 750)]
if options.quick { configs = [(30, 100), (300, 100)] }

print("TimeToCollect: virtual seconds until 50 / 99 / 100 % of N voters are heard at least once")
print("one scanner at 100 % duty, legacy ADV_IND with 31 bytes of AD (a = \(airTime)), capture and loss off,")
print("\(options.seeds) seeds per row, medians (100 %: median time until the last voter is heard).")
print("p = e^(-2a(N-1)/I), I = interval + 5 ms.  phased: first events at random phases, heard(t) = 1 - E[(1-p)^K(t)];")
print("simple: heard(t) = 1 - (1-p)^(t/I).  For 100 %: heard(t)^N = 1/2.  '>h': not reached within the horizon h.")
print("start phase: \(options.synchronized ? "synchronized (first events within 0-10 ms of t = 0)" : "random within one interval")"
      + (options.quietWhenHeard ? "; voters go quiet once heard" : ""))
print("")
let groups = ["50 %", "99 %", "100 %"]
print(pad("", 5 + 1 + 9 + 1 + 8 + 1 + 8) + " " + groups.map { pad("── t" + $0 + " ──", 26) }.joined(separator: " ") + " " + pad("heard", 8))
let schemeWidth = 0
var header = (schemeWidth > 0 ? [pad("scheme", schemeWidth)] : []) + [pad("N", 5), pad("interval", 9), pad("p model", 8), pad("p sim", 8)]
for _ in groups { header += [pad("sim", 8), pad("phased", 8), pad("simple", 8)] }
header.append(pad("at end", 8))
print(header.joined(separator: " "))

for c in configs {
    let interval = Duration.milliseconds(c.ms)
    let meanInterval = interval + .milliseconds(5)
    let p = AnalyticModel.cleanProbabilityExponential(advertisers: c.n, airTime: airTime, meanEventInterval: meanInterval)
    let i = Double(c.ms + 5) / 1000
    // Horizon: 60 s, or 400 events when that is shorter (hopeless rows stop early).
    let horizon = min(60, 400 * i)
    do {
    let scheme = ScanOnly()
    var results: [RoundResult] = []
    for s in 0..<options.seeds {
        let r = try await runRound(voters: c.n, interval: interval, seed: UInt64(c.n * 100_000 + c.ms * 100 + s),
                                   horizon: horizon, options: options, detector: PayloadIndexDetector(voters: c.n),
                                   scheme: ScanOnly())
        results.append(r)
    }
    func within(_ d: Duration?) -> Double? { d.map { secondsOf($0) }.flatMap { $0 <= horizon ? $0 : nil } }
    var row = (schemeWidth > 0 ? [pad(scheme.label, schemeWidth)] : []) + [pad(String(c.n), 5), pad(c.ms >= 1000 ? format1(Double(c.ms) / 1000) + " s" : "\(c.ms) ms", 9),
               pad(format4(p), 8), pad(format4(results.map(\.cleanFraction).reduce(0, +) / Double(results.count)), 8)]
    let sims: [[Double?]] = [results.map(\.t50), results.map(\.t99), results.map(\.t100)]
    for (k, f) in [0.5, 0.99, pow(0.5, 1 / Double(c.n))].enumerated() {
        row.append(pad(fmt(median(sims[k]), horizon: horizon), 8))
        row.append(pad(fmt(within(AnalyticModel.timeToHearRandomPhase(fraction: f, cleanProbability: p, meanEventInterval: meanInterval)), horizon: horizon), 8))
        row.append(pad(fmt(within(AnalyticModel.timeToHear(fraction: f, cleanProbability: p, meanEventInterval: meanInterval)), horizon: horizon), 8))
    }
    row.append(pad(format1(100 * (results.map(\.heardFraction).sorted()[results.count / 2])) + " %", 8))
    print(row.joined(separator: " "))
    }
}

func secondsOf(_ d: Duration) -> Double {
    let (s, atto) = d.components
    return Double(s) + Double(atto) * 1e-18
}

func format4(_ x: Double) -> String {
    if x < 0.0001 { return x == 0 ? "0" : "<1e-4" }
    return String((x * 10000).rounded() / 10000)
}

// Wall time of one 300-voter round at 100 ms, 10 s of virtual time.
let clock = ContinuousClock()
var walls: [Double] = []
for s in 0..<5 {
    let start = clock.now
    _ = try await runRound(voters: 300, interval: .milliseconds(100), seed: 9_000 + UInt64(s), horizon: 10,
                           options: Options(seeds: 1, quick: false, synchronized: false, quietWhenHeard: false),
                           detector: PayloadIndexDetector(voters: 300))
    walls.append(secondsOf(clock.now - start))
}
print("")
print("wall time of one 300-voter round (stopped when all heard, ≤ 10 s virtual), median of 5: \(format1(1000 * walls.sorted()[2])) ms")

/// --pipeline: heard and counted (through the real `IngestPipeline`) for the same runs, and the pipeline's CPU.
func pipelineTable(_ options: Options) async throws {
    var configs: [(n: Int, ms: Int)] = [(30, 100), (100, 100), (300, 100), (1000, 100), (300, 225), (1000, 750)]
    if options.quick { configs = [(30, 100), (300, 100)] }
    let a = LegacyAdvertising.airTime(of: AdvertisingPayload(companyID: BallotFormat.companyID,
                                                             data: [UInt8](repeating: 0, count: BallotFormat.advertisementLength),
                                                             interval: .milliseconds(100)))
    print("TimeToCollect --pipeline: virtual seconds until 50 / 99 / 100 % of N voters are heard (their sealed")
    print("ballot delivered intact) and counted (the real IngestPipeline's first .new for them), same runs.")
    print("one scanner at 100 % duty, legacy ADV_IND with a \(BallotFormat.advertisementLength)-byte ballot (a = \(a)),"
          + " capture and loss off, \(options.seeds) seeds per row, medians.")
    print("ratio: median counted / median heard.  late: voters (all seeds) counted after first heard, or never.")
    print("CPU: thread CPU time inside ingest() only, each round's reports replayed in order through a fresh pipeline.")
    print("")
    let groups = ["t50 %", "t99 %", "t100 %"]
    print(pad("", 15) + " " + groups.map { pad("─ " + $0 + " ─", 17) }.joined(separator: " ")
          + " " + pad("── counted/heard ──", 20))
    var header = [pad("N", 5), pad("interval", 9)]
    for _ in groups { header += [pad("heard", 8), pad("counted", 8)] }
    header += [pad("50 %", 6), pad("99 %", 6), pad("100 %", 6), pad("late", 5), pad("counted", 8), pad("reports", 9),
               pad("ns/rep", 7), pad("rep/s CPU", 10)]
    print(header.joined(separator: " "))
    var allReports = 0
    var allCPU: UInt64 = 0
    for c in configs {
        let interval = Duration.milliseconds(c.ms)
        let horizon = min(60, 400 * Double(c.ms + 5) / 1000)
        var results: [RoundResult] = []
        for s in 0..<options.seeds {
            let seed = UInt64(c.n * 100_000 + c.ms * 100 + s)
            let poll = RealPoll(voters: c.n, seed: seed)
            let detector = BallotPayloadDetector(index: Dictionary(uniqueKeysWithValues: poll.advertisements.enumerated().map { ($1, $0) }))
            results.append(try await runRound(voters: c.n, interval: interval, seed: seed, horizon: horizon,
                                              options: options, detector: detector, poll: poll))
        }
        var row = [pad(String(c.n), 5), pad("\(c.ms) ms", 9)]
        let pairs: [(heard: Double?, counted: Double?)] = [
            (median(results.map(\.t50)), median(results.map(\.counted50))),
            (median(results.map(\.t99)), median(results.map(\.counted99))),
            (median(results.map(\.t100)), median(results.map(\.counted100))),
        ]
        for p in pairs { row += [pad(fmt(p.heard, horizon: horizon), 8), pad(fmt(p.counted, horizon: horizon), 8)] }
        for p in pairs {
            if let h = p.heard, let c = p.counted, h > 0 { row.append(pad(String(format2(c / h)), 6)) } else { row.append(pad("-", 6)) }
        }
        let reports = results.map(\.ingested).reduce(0, +)
        let cpu = results.map(\.ingestCPU).reduce(0, +)
        allReports += reports
        allCPU += cpu
        row += [pad(String(results.map(\.lateVoters).reduce(0, +)), 5),
                pad(format1(100 * results.map(\.countedFraction).sorted()[results.count / 2]) + " %", 8),
                pad(String(reports), 9),
                pad(reports > 0 ? String(Int((Double(cpu) / Double(reports)).rounded())) : "-", 7),
                pad(cpu > 0 ? String(Int((Double(reports) / (Double(cpu) / 1e9)).rounded())) : "-", 10)]
        print(row.joined(separator: " "))
    }
    print("")
    if allCPU > 0 {
        let perSecond = Double(allReports) / (Double(allCPU) / 1e9)
        print("pipeline CPU over all rows: \(allReports) reports in \(format1(Double(allCPU) / 1e6)) ms of thread CPU = "
              + "\(Int(perSecond.rounded())) reports/s, \(format1(perSecond / 3000))× the 3,000 reports/s of 300 voters at 10 ads/s")
    }
}

func format2(_ x: Double) -> String {
    let r = Int((x * 100).rounded())
    let frac = r % 100
    return "\(r / 100)." + (frac < 10 ? "0" : "") + String(frac)
}
