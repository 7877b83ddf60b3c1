// --beacon: today's scheme (voters at 100 ms, the tally only scans) and the beacon scheme (the tally
// acknowledges and announces the interval, voters follow it) side by side, same seeds, same physics.

import ClickerSim
import ClickerTally
import ClickerTransport
import ClickerWire

func beaconTable(_ options: Options) async throws {
    // Test constant: a valid join code.
    let secret = PollSecret(deriving: try JoinCode(parsing: "4821-K7QXM-3PF9A"))
    // The voters' PDU: the benchmark's 24-byte payload with Flags (376 µs), a little longer than a ballot's.
    let a = LegacyAdvertising.airTime(of: votePayload(0, interval: .milliseconds(100)))
    let best = BeaconAirModel.bestThroughput(airTime: a)
    let bestWithBeacon = BeaconAirModel.bestThroughput(broadcast: .init(interval: .milliseconds(20)), airTime: a)
    let horizon = 30.0
    print("TimeToCollect --beacon: virtual seconds until 50 / 99 / 100 % of N voters are counted (first heard by the")
    print("tally), everyone casting at t = 0; today: voters at 100 ms until the end; beacon: the tally broadcasts")
    print("(TallyBeacon: STATE, ACKS, legacy 24-byte frames every 20 ms when busy), voters wait for STATE, advertise")
    print("at its interval, and slow to the 10.24 s keep-alive once their ballot's fingerprint is heard (listening 30 ms")
    print("of every 60 ms, one channel at a time). One scanner at 100 % duty; capture and loss off; \(options.seeds) seeds,")
    print("medians. bound: the channel at its best throughput, 1/(2a·e) = \(Int(best)) voters/s for a = \(a)"
          + " (\(Int(bestWithBeacon))/s with a 20 ms beacon): 0.99·N and N voters need at least this long.")
    print("shown ≤ 1 s: voters (all seeds) whose \"counted\" showed within 1.0 s of being counted; p99: 99th percentile of that delay.")
    print("'>\(Int(horizon))': not reached within \(Int(horizon)) s.")
    print("")
    print([pad("N", 5), pad("scheme", 7), pad("t50 %", 7), pad("t99 %", 7), pad("t100 %", 7), pad("bound99", 8),
           pad("bound100", 9), pad("counted", 8), pad("shown≤1s", 9), pad("p99 shown", 10)].joined(separator: " "))
    for n in options.quick ? [300] : [300, 1000] {
        for beacon in [false, true] {
            var results: [RoundResult] = []
            for s in 0..<options.seeds {
                let scheme: any TallyScheme = beacon ? BeaconScheme(secret: secret) : ScanOnly()
                results.append(try await runRound(voters: n, interval: .milliseconds(100), seed: UInt64(n * 1000 + s),
                                                  horizon: horizon, options: options,
                                                  detector: PayloadIndexDetector(voters: n), scheme: scheme))
            }
            var row = [pad(String(n), 5), pad(beacon ? "beacon" : "today", 7)]
            for xs in [results.map(\.t50), results.map(\.t99), results.map(\.t100)] {
                row.append(pad(fmt(median(xs), horizon: horizon), 7))
            }
            row += [pad(format1(0.99 * Double(n) / best), 8), pad(format1(Double(n) / best), 9),
                    pad(format1(100 * results.map(\.heardFraction).sorted()[results.count / 2]) + " %", 8)]
            if beacon {
                let delays = results.flatMap { r in zip(r.firstHeard, r.shown).compactMap { h, s in h == nil ? nil : s } }
                let all = results.flatMap(\.firstHeard).compactMap { $0 }.count
                let within = delays.compactMap { $0 }.filter { $0 <= 1.0 }.count
                let sorted = delays.map { $0 ?? .infinity }.sorted()
                let p99 = sorted.isEmpty ? nil : sorted[min(sorted.count - 1, Int((0.99 * Double(sorted.count)).rounded(.up)) - 1)]
                row += [pad(all > 0 ? format1(100 * Double(within) / Double(all)) + " %" : "-", 9),
                        pad(p99.flatMap { $0.isFinite ? format1($0) : nil } ?? "never", 10)]
            } else {
                row += [pad("-", 9), pad("-", 10)]
            }
            print(row.joined(separator: " "))
        }
    }
    // Casting spread over 10 s, as in a real class: each voter casts at a uniform random time.
    print("")
    print("300 voters casting over 10 s (uniform): median over voters of (counted − cast), median over seeds;"
          + " 99 %: the 99th percentile.")
    print([pad("scheme", 7), pad("median", 7), pad("99 %", 7), pad("counted", 8)].joined(separator: " "))
    for beacon in [false, true] {
        var medians: [Double?] = [], p99s: [Double?] = [], fractions: [Double] = []
        for s in 0..<options.seeds {
            var rng = SplitMix64(seed: UInt64(77_000 + s))
            let casts = (0..<300).map { _ in 0.001 + 10 * Double(rng.next() >> 11) * 0x1p-53 }
            let scheme: any TallyScheme = beacon ? BeaconScheme(secret: secret) : ScanOnly()
            let r = try await runRound(voters: 300, interval: .milliseconds(100), seed: UInt64(300_000 + s), horizon: horizon,
                                       options: options, detector: PayloadIndexDetector(voters: 300), scheme: scheme,
                                       castAt: casts)
            let lags = zip(r.firstHeard, r.castAt).map { h, c in h.map { max(0, $0 - c) } }
            medians.append(median(lags))
            let sorted = lags.map { $0 ?? .infinity }.sorted()
            p99s.append(sorted[Int(0.99 * Double(sorted.count)) - 1].isFinite ? sorted[Int(0.99 * Double(sorted.count)) - 1] : nil)
            fractions.append(r.heardFraction)
        }
        print([pad(beacon ? "beacon" : "today", 7), pad(fmt(median(medians), horizon: horizon), 7),
               pad(fmt(median(p99s), horizon: horizon), 7),
               pad(format1(100 * fractions.sorted()[fractions.count / 2]) + " %", 8)].joined(separator: " "))
    }
}
