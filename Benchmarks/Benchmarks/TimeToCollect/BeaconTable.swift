// --beacon: today's scheme (voters at 100 ms, the tally only scans) and the beacon scheme (the tally
// acknowledges and announces the interval, voters follow it) side by side, same seeds, same physics.

import ClickerSim
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation

func beaconTable(_ options: Options) async throws {
    // Test constant: a valid join code.
    let secret = PollSecret(deriving: try JoinCode(parsing: "4821-K7QXM-3PF9A"))
    // The voters' PDU: the benchmark's 24-byte payload with Flags (376 µs), a little longer than a ballot's.
    let a = LegacyAdvertising.airTime(of: votePayload(0, interval: .milliseconds(100)))
    let best = BeaconAirModel.bestThroughput(airTime: a)
    let bestWithBeacon = BeaconAirModel.bestThroughput(broadcast: .init(interval: .milliseconds(20)), airTime: a)
    let horizon = 30.0
    let changesWithin = 3.0
    // --synchronized: the voters start the moment they hear the STATE, without clicker-vote's StaggeredStart.
    let staggered = !options.synchronized
    /// `options.seeds` rounds of `n` voters casting at t = 0, each with a new scheme from `make`, and
    /// what following the beacon cost their voters.
    func atOnce(_ n: Int, _ make: () -> any TallyScheme) async throws -> (results: [RoundResult], cost: VoterCost, changes: [Int]) {
        var results: [RoundResult] = [], cost = VoterCost(), changes: [Int] = []
        for s in 0..<options.seeds {
            let scheme = make()
            results.append(try await runRound(voters: n, interval: .milliseconds(100), seed: UInt64(n * 1000 + s),
                                              horizon: horizon, options: options,
                                              detector: PayloadIndexDetector(voters: n), scheme: scheme))
            if let b = scheme as? BeaconScheme {
                cost = cost + b.cost
                changes.append(b.intervalChanges(within: changesWithin))
            }
        }
        return (results, cost, changes)
    }
    /// The interval changes of some rounds within their first 3 s, as a cell: median and most.
    func changesCell(_ changes: [Int]) -> String {
        guard !changes.isEmpty else { return "-" }
        let sorted = changes.sorted()
        return "\(sorted[sorted.count / 2])/\(sorted[sorted.count - 1])"
    }
    /// The t99 %, t100 % and counted cells of some rounds (medians over the seeds).
    func countedCells(_ results: [RoundResult]) -> [String] {
        [pad(fmt(median(results.map(\.t99)), horizon: horizon), 7), pad(fmt(median(results.map(\.t100)), horizon: horizon), 7),
         pad(format1(100 * results.map(\.heardFraction).sorted()[results.count / 2]) + " %", 8)]
    }
    func schemeName(extended: Bool) -> String { extended ? Variant.beaconExtended.rawValue : Variant.beacon.rawValue }
    print("TimeToCollect --beacon: virtual seconds until 50 / 99 / 100 % of N voters are counted (first heard by the")
    print("tally), everyone casting at t = 0; today: voters at 100 ms until the end; beacon: the tally broadcasts")
    print("(TallyBeacon: STATE, ACKS, legacy 24-byte frames every 20 ms when busy), voters run clicker-vote's")
    print("BeaconFollower: wait for STATE, advertise at its interval, slow to the 10.24 s keep-alive once their ballot's")
    print("fingerprint is heard, each (re)start at a random moment of the interval (StaggeredStart; \(staggered ? "on" : "off: --synchronized"));")
    print("their radios start at once, as controllers do; beacon+ext: the same in extended advertising (ADV_EXT_IND on 37/38/39, the frame of up")
    print("to 244 bytes in an AUX_ADV_IND on a secondary channel, LE 1M; voters listen all the time, one channel")
    print("at a time, moving every 11.25 ms). One scanner at 100 % duty; capture and loss off; \(options.seeds) seeds,")
    print("medians. bound: the channel at its best throughput, 1/(2a·e) = \(Int(best)) voters/s for a = \(a)"
          + " (\(Int(bestWithBeacon))/s with a 20 ms beacon): 0.99·N and N voters need at least this long.")
    print("shown ≤ 1 s: voters (all seeds) whose \"counted\" showed within 1.0 s of being counted; p99: 99th percentile of that delay.")
    print("'>\(Int(horizon))': not reached within \(Int(horizon)) s. beacon+ext: signed frames (version 4, 42 fingerprints);"
          + " ext-unsig: the same unsigned (version 3, 58 fingerprints).")
    print("changes: times the announced interval changed in the first \(Int(changesWithin)) s (each restarts the voters"
          + " advertising at it), median/most over the seeds."
          + (options.frameDwell.map { " The tally's radio holds each frame \($0) (--frame-dwell), as bluetoothd's beacon does." } ?? ""))
    print("")
    print([pad("N", 5), pad("scheme", 10), pad("t50 %", 7), pad("t99 %", 7), pad("t100 %", 7), pad("bound99", 8),
           pad("bound100", 9), pad("counted", 8), pad("shown≤1s", 9), pad("p99 shown", 10), pad("changes", 8)].joined(separator: " "))
    var costs: [(n: Int, variant: Variant, cost: VoterCost)] = []
    for n in options.rooms ?? (options.quick ? [300] : [300, 1000]) {
        for variant in Variant.allCases {
            let beacon = variant != .today
            let (results, cost, changes) = try await atOnce(n) { variant.scheme(secret, staggered: staggered) }
            var row = [pad(String(n), 5), pad(variant.rawValue, 10)]
            for xs in [results.map(\.t50), results.map(\.t99), results.map(\.t100)] {
                row.append(pad(fmt(median(xs), horizon: horizon), 7))
            }
            row += [pad(format1(0.99 * Double(n) / best), 8), pad(format1(Double(n) / best), 9),
                    pad(format1(100 * results.map(\.heardFraction).sorted()[results.count / 2]) + " %", 8)]
            if beacon {
                let shown = Shown(results)
                row += [pad(shown.withinOneSecond, 9), pad(shown.p99.flatMap { $0.isFinite ? format1($0) : nil } ?? "never", 10),
                        pad(changesCell(changes), 8)]
            } else {
                row += [pad("-", 9), pad("-", 10), pad("-", 8)]
            }
            print(row.joined(separator: " "))
            if beacon { costs.append((n, variant, cost)) }
        }
    }
    // What following costs a voter: receiver always on while it follows (BeaconFollower.listening);
    // transmitter: its PDUs' airtime; CPU: the follower's work on each frame heard.
    print("")
    print("voter's cost while the room is counted (all seeds): receiver 100 % (BeaconFollower.listening);"
          + " transmitter: its PDUs' airtime share; CPU: BeaconFollower per frame heard, and as a share of one core")
    print([pad("N", 5), pad("scheme", 10), pad("tx duty", 8), pad("frames/s", 9), pad("µs/frame", 9), pad("CPU", 8)].joined(separator: " "))
    for (n, variant, c) in costs {
        let voterSeconds = Double(n) * c.seconds
        let tx = Double(c.voterPDUs) * (Double(a.components.attoseconds) * 1e-18) / voterSeconds
        let perFrame = c.framesHeard > 0 ? Double(c.followerCPU) / Double(c.framesHeard) / 1000 : 0
        let rate = Double(c.framesHeard) / voterSeconds
        print([pad(String(n), 5), pad(variant.rawValue, 10), pad(format1(100 * tx) + " %", 8), pad(format1(rate), 9),
               pad(format1(perFrame), 9), pad(String(format: "%.3f %%", 100 * rate * perFrame / 1e6), 8)].joined(separator: " "))
    }
    // A room that grows: question 1 counted 30 voters, question 2 opens to 300 (latecomers).
    print("")
    print("300 voters on question 2 after a question of 30 (the tally's room is 30 when it opens), everyone casting at t = 0.")
    print([pad("scheme", 10), pad("t99 %", 7), pad("t100 %", 7), pad("counted", 8), pad("changes", 8)].joined(separator: " "))
    for extended in [false, true] {
        let r = try await atOnce(300) { BeaconScheme(secret: secret, extended: extended, priorRoom: 30, staggered: staggered) }
        print(([pad(schemeName(extended: extended), 10)] + countedCells(r.results) + [pad(changesCell(r.changes), 8)]).joined(separator: " "))
    }
    if options.short { return }
    // A roster poll: its room is its roster, not 1,000 voters (TallyBeacon.roomLimit). The rows with
    // fewer students than devices: the devices beyond the roster follow the beacon, but the tally
    // rejects their ballots, so they are never counted nor acknowledged and stay loud (BeaconScheme).
    print("")
    print("A roster poll (its room is the roster and the devices heard that it cannot count), everyone casting at t = 0.")
    print("N devices, the first `roster` of them on the roster; the others follow the beacon but their ballots are")
    print("rejected (never counted, never acknowledged: they keep advertising). Times and shares are of the roster's students.")
    print([pad("N", 5), pad("roster", 7), pad("scheme", 10), pad("t99 %", 7), pad("t100 %", 7), pad("counted", 8),
           pad("shown≤1s", 9)].joined(separator: " "))
    for (n, roster) in [(300, 300), (300, 150), (1000, 800), (1000, 300)] {
        for extended in [false, true] {
            let results = try await atOnce(n) { BeaconScheme(secret: secret, extended: extended, roster: roster, staggered: staggered) }
                .results.map { $0.ofFirst(roster) }
            print(([pad(String(n), 5), pad(String(roster), 7), pad(schemeName(extended: extended), 10)] + countedCells(results)
                   + [pad(Shown(results).withinOneSecond, 9)]).joined(separator: " "))
        }
    }
    // Casting spread over 10 s, as in a real class: each voter casts at a uniform random time.
    print("")
    print("300 voters casting over 10 s (uniform): median over voters of (counted − cast), median over seeds;"
          + " 99 %: the 99th percentile.")
    print([pad("scheme", 10), pad("median", 7), pad("99 %", 7), pad("counted", 8)].joined(separator: " "))
    for variant in Variant.allCases {
        var medians: [Double?] = [], p99s: [Double?] = [], fractions: [Double] = []
        for s in 0..<options.seeds {
            var rng = SplitMix64(seed: UInt64(77_000 + s))
            let casts = (0..<300).map { _ in 0.001 + 10 * Double(rng.next() >> 11) * 0x1p-53 }
            let scheme = variant.scheme(secret, staggered: staggered)
            let r = try await runRound(voters: 300, interval: .milliseconds(100), seed: UInt64(300_000 + s), horizon: horizon,
                                       options: options, detector: PayloadIndexDetector(voters: 300), scheme: scheme,
                                       castAt: casts)
            let lags = zip(r.firstHeard, r.castAt).map { h, c in h.map { max(0, $0 - c) } }
            medians.append(median(lags))
            let sorted = lags.map { $0 ?? .infinity }.sorted()
            p99s.append(sorted[Int(0.99 * Double(sorted.count)) - 1].isFinite ? sorted[Int(0.99 * Double(sorted.count)) - 1] : nil)
            fractions.append(r.heardFraction)
        }
        print([pad(variant.rawValue, 10), pad(fmt(median(medians), horizon: horizon), 7),
               pad(fmt(median(p99s), horizon: horizon), 7),
               pad(format1(100 * fractions.sorted()[fractions.count / 2]) + " %", 8)].joined(separator: " "))
    }
}

extension RoundResult {
    /// The round as the first `k` voters saw it: their counted times and shares, and their "counted".
    func ofFirst(_ k: Int) -> RoundResult {
        let heard = Array(firstHeard.prefix(k))
        var r = RoundResult(t50: reached(0.5, heard), t99: reached(0.99, heard), t100: reached(1.0, heard),
                            heardFraction: Double(heard.compactMap { $0 }.count) / Double(max(1, heard.count)),
                            cleanFraction: cleanFraction)
        r.firstHeard = heard
        r.castAt = Array(castAt.prefix(k))
        r.shown = Array(shown.prefix(k))
        return r
    }
}

/// "Counted" shown by the voters of some rounds: the delays after the tally counted them (nil: never).
struct Shown {
    let delays: [Double?]
    let counted: Int

    init(_ results: [RoundResult]) {
        // Of the voters counted only (a voter never heard is left out, not taken as never shown).
        delays = results.flatMap { r in zip(r.firstHeard, r.shown).compactMap { h, s -> Double?? in h == nil ? .none : .some(s) } }
        counted = results.flatMap(\.firstHeard).compactMap { $0 }.count
    }

    /// The share of counted voters that showed it within 1.0 s, as a table cell.
    var withinOneSecond: String {
        guard counted > 0 else { return "-" }
        return format1(100 * Double(delays.compactMap { $0 }.filter { $0 <= 1.0 }.count) / Double(counted)) + " %"
    }

    /// The 99th percentile of the delay (infinity: more than 1 % never showed it).
    var p99: Double? {
        let sorted = delays.map { $0 ?? .infinity }.sorted()
        return sorted.isEmpty ? nil : sorted[min(sorted.count - 1, Int((0.99 * Double(sorted.count)).rounded(.up)) - 1)]
    }
}

/// The schemes of the table, side by side on the same seeds.
enum Variant: String, CaseIterable {
    /// Voters at 100 ms until the end; the tally only scans.
    case today
    /// The beacon in legacy frames (3 fingerprints each).
    case beacon
    /// The beacon in extended advertising, signed (42 fingerprints a frame, collision-free secondary channel).
    case beaconExtended = "beacon+ext"
    /// The same, unsigned (version 3's tagged frames, 58 fingerprints a frame).
    case beaconExtendedUnsigned = "ext-unsig"

    func scheme(_ secret: PollSecret, staggered: Bool) -> any TallyScheme {
        switch self {
        case .today: ScanOnly()
        case .beacon: BeaconScheme(secret: secret, staggered: staggered)
        case .beaconExtended: BeaconScheme(secret: secret, extended: true, staggered: staggered)
        case .beaconExtendedUnsigned: BeaconScheme(secret: secret, extended: true, staggered: staggered, signed: false)
        }
    }
}
