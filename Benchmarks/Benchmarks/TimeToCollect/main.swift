// TimeToCollect: how long until a crowd of voters has been heard, in virtual time.
//
// N voters advertise distinct payloads at one interval, all starting at t = 0 (each controller's
// first event at a random phase within its interval); one central scans at 100 % duty. For each
// (N, interval) and each seed, the time until 50 %, 99 % and 100 % of the voters have been heard
// at least once; the table shows medians over the seeds next to the analytic model.
//
// Run: swift run -c release --package-path Benchmarks TimeToCollect [--seeds 20] [--quick]
//      [--synchronized] [--quiet-when-heard] [--pipeline] [--beacon [--rooms 300,1000,2000]] [--hall]
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
// "heard" for the same runs, with the pipeline's CPU cost per report (PipelineTable.swift).
//
// With --hall: 600 voters seated in a lecture hall with path loss per link, the beacon in extended frames,
// one receiver at the front against three (front, middle, back), same seeds (HallTable.swift).
//
// Round.swift runs one round; Format.swift holds the medians and table cells.

import ClickerSim
import ClickerTally
import ClickerTransport
import ClickerWire

#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var seeds = 20
    var quick = false
    var synchronized = false
    var quietWhenHeard = false
    var pipeline = false
    /// --beacon: today's scheme and the beacon side by side (300 and 1,000 voters, and a 10 s spread).
    var beacon = false
    /// --rooms: the voters of --beacon's first table (default 300 and 1,000; --quick: 300).
    var rooms: [Int]? = nil
    /// --frame-dwell MS: the tally's radio holds each frame this long, as bluetoothd's beacon does
    /// (`BroadcastConfiguration.frameDwell`); the tally is told so through its capabilities.
    var frameDwell: Duration? = nil
    /// --short: --beacon's first table and the question-2 rows only.
    var short = false
    /// --hall: one receiver against three in a 600-seat hall.
    var hall = false
}

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
        case "--frame-dwell": if let v = args.popFirst().flatMap({ Int($0) }), v > 0 { o.frameDwell = .milliseconds(v) }
        case "--short": o.short = true
        case "--hall": o.hall = true
        case "--rooms":
            let rooms = args.popFirst().map { $0.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 } } ?? []
            if !rooms.isEmpty { o.rooms = rooms }
        default:
            print("usage: TimeToCollect [--seeds N] [--quick] [--synchronized] [--quiet-when-heard] [--pipeline] [--beacon [--rooms N,N...] [--frame-dwell MS] [--short]] [--hall]")
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
if options.hall {
    try await hallTable(options)
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
        results.append(try await runRound(voters: c.n, interval: interval, seed: UInt64(c.n * 100_000 + c.ms * 100 + s),
                                          horizon: horizon, options: options, detector: PayloadIndexDetector(voters: c.n)))
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
