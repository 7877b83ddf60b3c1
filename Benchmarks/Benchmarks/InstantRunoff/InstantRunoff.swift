// Instant-runoff count for 1,000 ballots over 8 options, all rounds, after each new ballot.
// Run: swift package --package-path Benchmarks benchmark --target InstantRunoff
// Target: ≤ 50 µs per new ballot (issue 14). The product's figure is the tally's path (the first
// benchmark): ballots counted by `Tally.record`, the rounds read from `Tally.results`.
import Benchmark
import ClickerTally
import ClickerTransport
import ClickerWire

/// Deterministic random partial rankings over `options` options (1…options ranked each): nearly every
/// ballot distinct, the worst case for grouping identical ballots.
private func rankings(_ count: Int, options: Int, seed: UInt64) -> [Ranking] {
    var state = seed
    func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    return (0..<count).compactMap { _ in
        var pool = (0..<UInt8(options)).map { $0 }
        for i in stride(from: pool.count - 1, to: 0, by: -1) { pool.swapAt(i, Int(next() % UInt64(i + 1))) }
        let k = 1 + Int(next() % UInt64(options))
        return Ranking(order: Array(pool.prefix(k)))
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .throughput, .mallocCountTotal],
                                           maxDuration: .seconds(5), maxIterations: 100_000)

    // The tally's own path, as the live view, `--json` and the export take it: 1,000 voters' ballots
    // counted by `Tally.record` on a ranked question of 8 options; then each sample is a thousand
    // new ballots (a voter's answer changes: the old ranking leaves the kept count, the new one joins),
    // each followed by the question's results by kind (`results(question:)?.byKind`, every round in
    // letters). The figure is per ballot.
    Benchmark("IRV tally path: 1,000 ballots × 8 options, record one ballot, then results by kind",
              configuration: .init(scalingFactor: .kilo)) { benchmark in
        let cast = rankings(1_000, options: 8, seed: 14)
        let extra = rankings(1_009, options: 8, seed: 15)
        let address = DeviceAddress(rawValue: 1)
        var tally = Tally(voteID: 4821)
        tally.open(QuestionSpec(number: 1, options: 8, kinds: [.ranking]))
        func ballot(_ voter: Int, _ sequence: UInt16, _ r: Ranking) -> Ballot {
            Ballot(mode: .anonymous, voteID: 4821, question: 1, voterID: UInt32(voter), sequence: sequence,
                   answer: .ranking(r))
        }
        for (v, r) in cast.enumerated() { _ = tally.record(ballot(v, 1, r), from: address, at: .zero) }
        var i = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            // Voter i % 1,000 sends their next ballot (sequences grow, so each one counts).
            let sequence = UInt16(truncatingIfNeeded: 2 + i / 1_000)
            blackHole(tally.record(ballot(i % 1_000, sequence, extra[i % extra.count]), from: address, at: .zero))
            blackHole(tally.results(question: 1)?.byKind)
            i += 1
        }
    }

    // The same stream of 1,000 new voters from an empty question, results after each ballot: the
    // whole stream per sample (divide by 1,000 for a ballot).
    Benchmark("IRV tally path: 1,000 new voters × 8 options one by one, results by kind after each (per stream)") { benchmark in
        let cast = rankings(1_000, options: 8, seed: 14)
        let address = DeviceAddress(rawValue: 1)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            var tally = Tally(voteID: 4821)
            tally.open(QuestionSpec(number: 1, options: 8, kinds: [.ranking]))
            for (v, r) in cast.enumerated() {
                let b = Ballot(mode: .anonymous, voteID: 4821, question: 1, voterID: UInt32(v), sequence: 1,
                               answer: .ranking(r))
                blackHole(tally.record(b, from: address, at: .zero))
                blackHole(tally.results(question: 1)?.byKind)
            }
        }
        benchmark.stopMeasurement()
    }

    // Ballots grouped by ranking, the count kept: one more ballot, all rounds up to date (updated in
    // place, or counted again in full when a round's decision changes), then the ballot leaves again.
    // A sample is a thousand ballots (the figure is per ballot): one at a time, the harness's own cost
    // per sample would hide the count's.
    Benchmark("IRV 1,000 ballots × 8 options: add one ballot, all rounds (kept count)",
              configuration: .init(scalingFactor: .kilo)) { benchmark in
        let cast = rankings(1_000, options: 8, seed: 14)
        let extra = rankings(1_000, options: 8, seed: 15)
        var grouped = InstantRunoff.Grouped(options: 8)
        for r in cast { grouped.add(r) }
        _ = grouped.currentCount()
        var i = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let r = extra[i % extra.count]
            grouped.add(r)
            blackHole(grouped.currentCount())
            grouped.remove(r)
            i += 1
        }
    }

    // The same, every round counted again in full from the grouped ballots.
    Benchmark("IRV 1,000 ballots × 8 options: add one ballot, full recount",
              configuration: .init(scalingFactor: .kilo)) { benchmark in
        let cast = rankings(1_000, options: 8, seed: 14)
        let extra = rankings(1_000, options: 8, seed: 15)
        var grouped = InstantRunoff.Grouped(options: 8)
        for r in cast { grouped.add(r) }
        var i = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            let r = extra[i % extra.count]
            grouped.add(r)
            blackHole(grouped.count())
            grouped.remove(r)
            i += 1
        }
    }

    // 1,000 ballots arriving one by one, all rounds after each: the whole stream, per ballot.
    Benchmark("IRV 1,000 ballots × 8 options arriving one by one, all rounds after each (per ballot)") { benchmark in
        let cast = rankings(1_000, options: 8, seed: 14)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            var grouped = InstantRunoff.Grouped(options: 8)
            _ = grouped.currentCount()
            for r in cast {
                grouped.add(r)
                blackHole(grouped.currentCount())
            }
        }
        benchmark.stopMeasurement()
    }

    // What a results reading does (the view, --json, the export): group the counted answers, then
    // count, then turn the rounds into letters.
    Benchmark("IRV 1,000 ballots × 8 options: results from counted answers") { benchmark in
        var counts: [Answer: Int] = [:]
        for r in rankings(1_000, options: 8, seed: 14) { counts[.ranking(r), default: 0] += 1 }
        let spec = QuestionSpec(number: 1, options: 8, kinds: [.ranking])
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(KindResults(spec: spec, counts: counts))
        }
    }
}
