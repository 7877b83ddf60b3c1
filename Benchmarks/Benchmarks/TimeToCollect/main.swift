// TimeToCollect: how long until a crowd of voters has been heard, in virtual time.
//
// N voters advertise distinct payloads at one interval, all starting at t = 0 (each controller's
// first event at a random phase within its interval); one central scans at 100 % duty. For each
// (N, interval) and each seed, the time until 50 %, 99 % and 100 % of the voters have been heard
// at least once; the table shows medians over the seeds next to the analytic model.
//
// Run: swift run -c release --package-path Benchmarks TimeToCollect [--seeds 20] [--quick]
//      [--synchronized] [--quiet-when-heard]
//
// "Heard" is pluggable (`HeardDetector`): the default takes a report as a vote when its data is the
// voter's payload; integration can substitute decode + verify + tally.

import ClickerSim
import ClickerTransport

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
}

struct Options {
    var seeds = 20
    var quick = false
    var synchronized = false
    var quietWhenHeard = false
}

/// One round: returns the first-heard times (virtual seconds) of the voters, as the central's stream shows them.
func runRound(voters n: Int, interval: Duration, seed: UInt64, horizon: Double, options: Options,
              detector: some HeardDetector) async throws -> RoundResult {
    var detector = detector
    let air = SimulatedAir(AirConfiguration(seed: seed, firstEventPhase: options.synchronized ? .immediate : .randomWithinInterval))
    let central = air.central()
    var reports = central.advertisements(companyID: 0xFFFF).makeAsyncIterator()
    var addresses: [DeviceAddress] = []
    for i in 0..<n {
        let p = air.addPeripheral()
        try await p.advertise(votePayload(i, interval: interval))
        addresses.append(p.address)
    }
    var firstHeard = [Double?](repeating: nil, count: n)
    var heard = 0
    var delivered = 0
    let step = 0.05
    var t = 0.0
    while heard < n && t < horizon {
        t = min(horizon, t + step)
        air.run(until: RadioInstant(nanoseconds: UInt64(t * 1e9)))
        // Drain exactly what this step delivered: never blocks, and the order is the air's.
        let now = air.statistics.reportsDelivered
        for _ in delivered..<now {
            guard let r = try await reports.next() else { break }
            guard let v = detector.voter(in: r), firstHeard[v] == nil else { continue }
            firstHeard[v] = r.timestamp.seconds
            heard += 1
            if options.quietWhenHeard {
                let a = addresses[v]
                air.perform { ctx in ctx.stopAdvertising(a) }
            }
        }
        delivered = now
    }
    air.finishAdvertisementStreams()
    let times = firstHeard.compactMap { $0 }.sorted()
    func at(_ f: Double) -> Double? {
        let k = Int((f * Double(n)).rounded(.up))
        return k <= times.count ? times[max(0, k - 1)] : nil
    }
    let s = air.statistics
    return RoundResult(t50: at(0.5), t99: at(0.99), t100: at(1.0), heardFraction: Double(times.count) / Double(n),
                       cleanFraction: s.pdusListened > 0 ? Double(s.pdusReceived) / Double(s.pdusListened) : 0)
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
        default:
            print("usage: TimeToCollect [--seeds N] [--quick] [--synchronized] [--quiet-when-heard]")
            exit(2)
        }
    }
    return o
}

let options = parseOptions()
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
var header = [pad("N", 5), pad("interval", 9), pad("p model", 8), pad("p sim", 8)]
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
    var results: [RoundResult] = []
    for s in 0..<options.seeds {
        let r = try await runRound(voters: c.n, interval: interval, seed: UInt64(c.n * 100_000 + c.ms * 100 + s),
                                   horizon: horizon, options: options, detector: PayloadIndexDetector(voters: c.n))
        results.append(r)
    }
    func within(_ d: Duration?) -> Double? { d.map { secondsOf($0) }.flatMap { $0 <= horizon ? $0 : nil } }
    var row = [pad(String(c.n), 5), pad(c.ms >= 1000 ? format1(Double(c.ms) / 1000) + " s" : "\(c.ms) ms", 9),
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
