// CPU per live-view frame at 300 voters: render the view model into a grid and diff it against the
// previous frame into ANSI bytes (what the daemon does at most 10 times per second).
// Budget: <= 2 % of a core at 10 frames/s, i.e. <= 2 ms per frame including everything.
import Benchmark
import TerminalView

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.cpuTotal, .wallClock, .mallocCountTotal, .throughput],
                                           maxDuration: .seconds(5), maxIterations: 100_000)

    for (w, h) in [(80, 24), (200, 60)] {
        Benchmark("render + diff one frame, 300 voters, \(w)x\(h)") { benchmark in
            var model = TallyViewModel(title: "Physics 101", joinCode: "4821-K7QXM-3PF9A", anonymous: true,
                                       question: .init(number: 1, isOpen: true, elapsed: .seconds(0)),
                                       voters: 0, votesPerSecond: 0,
                                       radio: .init(adapter: "hci0", scanning: true, sinceDiscoveryRestart: .seconds(3)))
            let encoder = ANSIEncoder(color: true)
            var previous: Grid? = FrameRenderer.render(model, state: ViewState(), width: w, height: h)
            var rng = SystemRandomNumberGenerator()
            var bytes = 0
            benchmark.startMeasurement()
            for i in benchmark.scaledIterations {
                // Each frame: a few of the 300 voters vote or change, the clock ticks.
                for _ in 0..<5 {
                    let a = Int.random(in: 0..<4, using: &rng)
                    if model.voters < 300 { model.voters += 1 } else {
                        let from = Int.random(in: 0..<4, using: &rng)
                        if model.answers[from].count > 0 { model.answers[from].count -= 1; model.changes += 1 } else { continue }
                    }
                    model.answers[a].count += 1
                }
                model.votesPerSecond = Double(i % 50)
                model.question?.elapsed = .milliseconds(100 * i)
                let grid = FrameRenderer.render(model, state: ViewState(), width: w, height: h)
                let out = encoder.encode(from: previous, to: grid)
                bytes &+= out.count
                previous = grid
            }
            benchmark.stopMeasurement()
            blackHole(bytes)
        }
    }
}
