// Ballots committed per second by ClickerStore: one ballot per transaction and 100 per transaction,
// with durability FULL (fsync per commit, the default) and NORMAL. Throughput is reported in
// transactions per second: multiply the batched figures by 100 for ballots per second.
import Benchmark
import ClickerStore
import Foundation

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.throughput, .wallClock, .cpuTotal], maxDuration: .seconds(5),
                                           maxIterations: 1_000_000)

    for (label, durability) in [("full", ClickerStore.Durability.full), ("normal", .normal)] {
        for batch in [1, 100] {
            Benchmark("record \(batch) ballot(s) per transaction, synchronous=\(label)") { benchmark in
                let dir = FileManager.default.temporaryDirectory.appendingPathComponent("clicker-bench-\(UUID().uuidString)").path
                defer { try? FileManager.default.removeItem(atPath: dir) }
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
                let store = try ClickerStore(path: dir + "/bench.sqlite", durability: durability)
                let poll = try store.createPoll(voteID: Data([1, 2, 3, 4]), joinCode: "123456", mode: .roster)
                try store.openQuestion(poll: poll.id, number: 1)
                var n: UInt64 = 0
                func next() -> BallotRecord {
                    n += 1
                    let voter = Data((0..<8).map { UInt8(truncatingIfNeeded: n >> (56 - 8 * UInt64($0))) })
                    let now = Date()
                    return BallotRecord(poll: poll.id, question: 1, voter: voter, answer: .choice(UInt8(n % 4)), sequence: UInt32(n % 7),
                                        address: "00:AA:01:00:00:01", firstHeard: now, lastHeard: now, gattVerified: n % 2 == 0)
                }
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    if batch == 1 {
                        try store.record(next())
                    } else {
                        try store.record((0..<batch).map { _ in next() })
                    }
                }
                benchmark.stopMeasurement()
            }
        }
    }
}
