import ClickerTransport
import ClickerWire
import Synchronization

/// What one room's voters send during a phase: sealed ballots at given times from the phase's start,
/// with the repeats a scanner hears of each voter's current ballot.
struct Heard {
    var at: Double
    var voter: Int
    var data: [UInt8]

    func later(by seconds: Double) -> Heard { Heard(at: at + seconds, voter: voter, data: data) }
}

/// The voters of one room (their keys, hence their voter IDs) and the patterns they vote in.
struct Room {
    let sealers: [BallotSealer]

    init(secret: PollSecret, voters: Int, rng: inout SplitMix64) {
        sealers = (0..<voters).map { _ in BallotSealer(secret: secret, deviceKey: DeviceKey.generate(using: &rng)) }
    }

    /// `questions` one after another, `length` seconds each, as ``lecture(question:length:castWindow:rng:)``
    /// has them, votes spread over the first two thirds of each.
    func lecture(questions: [UInt8], length: Double, rng: inout SplitMix64) -> [Heard] {
        questions.enumerated().flatMap { i, q in
            lecture(question: q, length: length, castWindow: length * 2 / 3, rng: &rng).map { $0.later(by: Double(i) * length) }
        }
    }

    /// A question as a lecture has it: each voter casts at a moment spread over the first
    /// `castWindow` seconds, a fifth change their answer once before `length`, and every voter's
    /// current ballot is heard again once a second until the question's end.
    func lecture(question: UInt8, length: Double, castWindow: Double, rng: inout SplitMix64) -> [Heard] {
        var out: [Heard] = []
        for (v, s) in sealers.enumerated() {
            let cast = Double.random(in: 1...castWindow, using: &rng)
            let first = s.advertisement(question: question, sequence: 1, answer: .choice(UInt8.random(in: 0..<4, using: &rng)))
            var change: (at: Double, data: [UInt8])?
            if Double.random(in: 0..<1, using: &rng) < 0.2 {
                let at = Double.random(in: (cast + 2)...max(cast + 2.5, length - 1), using: &rng)
                change = (at, s.advertisement(question: question, sequence: 2, answer: .choice(UInt8.random(in: 0..<4, using: &rng))))
            }
            var t = cast
            while t < length {
                let data = change.map { t >= $0.at ? $0.data : first } ?? first
                out.append(Heard(at: t, voter: v, data: data))
                t += 1
            }
            if let change { out.append(Heard(at: change.at, voter: v, data: change.data)) }
        }
        return out.sorted { $0.at < $1.at }
    }

    /// Everyone casting at once: each voter heard first at a moment within `within` seconds (as the
    /// air delivers a room casting together), then again every 0.5 s until `length`.
    func burst(question: UInt8, within: Double, length: Double, rng: inout SplitMix64) -> [Heard] {
        var out: [Heard] = []
        for (v, s) in sealers.enumerated() {
            let data = s.advertisement(question: question, sequence: 1, answer: .choice(UInt8.random(in: 0..<4, using: &rng)))
            var t = Double.random(in: 0...within, using: &rng)
            while t < length {
                out.append(Heard(at: t, voter: v, data: data))
                t += 0.5
            }
        }
        return out.sorted { $0.at < $1.at }
    }

    /// Round `round` of the saturation phase: every voter changes its answer (a new sequence).
    func round(question: UInt8, _ round: Int) -> [[UInt8]] {
        sealers.map { $0.advertisement(question: question, sequence: UInt16(round), answer: .choice(UInt8(round % 4))) }
    }

    /// A voter's report, as the radio delivers it.
    static func report(voter: Int, data: [UInt8], at seconds: Double) -> AdvertisementReport {
        AdvertisementReport(address: DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(voter + 1)), rssi: -60,
                            companyID: BallotFormat.companyID, data: data,
                            timestamp: RadioInstant(nanoseconds: UInt64(seconds * 1e9)))
    }
}

/// Latencies (seconds), one entry per ballot, and when each commit happened.
struct Samples: Sendable {
    var latencies: [Double] = []
    var commits: [(at: Double, ballots: Int)] = []

    mutating func add(latency: Double, ballots: Int, committedAt: Double) {
        latencies += repeatElement(latency, count: ballots)
        commits.append((committedAt, ballots))
    }

    var count: Int { latencies.count }

    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return .nan }
        let sorted = latencies.sorted()
        return sorted[min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))]
    }

    /// Ballots committed between `from` and `to` (seconds on the run's clock), per second.
    func rate(from: Double, to: Double) -> Double {
        Double(commits.filter { $0.at >= from && $0.at < to }.reduce(0) { $0 + $1.ballots }) / (to - from)
    }

    var lastCommit: Double { commits.map(\.at).max() ?? .nan }
}

/// Samples recorded from many tasks and threads.
final class SampleLog: Sendable {
    private let state = Mutex(Samples())

    func add(latency: Double, ballots: Int, committedAt: Double) {
        state.withLock { $0.add(latency: latency, ballots: ballots, committedAt: committedAt) }
    }

    var samples: Samples { state.withLock { $0 } }
}
