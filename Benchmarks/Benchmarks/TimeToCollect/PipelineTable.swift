// --pipeline: heard and counted through the real IngestPipeline, for the same runs.

import ClickerSim
import ClickerTally
import ClickerTransport
import ClickerWire

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
