// Ballots written per second into the PostgreSQL ballot ledger (ClickerLedger) and, in the same run,
// into ClickerStore's SQLite: one ballot per transaction and 100 per transaction, each ballot a new
// voter. Both flush every commit: PostgreSQL with its defaults (fsync, synchronous_commit=on) on a
// private server on loopback TCP, SQLite with synchronous=FULL. Throughput is in transactions per
// second: multiply the batched figures by 100 for ballots per second.
import Benchmark
import ClickerLedger
import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import PostgresTestSupport
import Synchronization

/// The private server and the one database every sample writes to (each sample a poll of its own).
let server = Mutex<(server: PostgresTestServer, url: String)?>(nil)

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.throughput, .wallClock, .cpuTotal], maxDuration: .seconds(5),
                                           maxIterations: 1_000_000)
    Benchmark.setup = {
        try server.withLock {
            let started = try PostgresTestServer(durable: true)
            $0 = (started, try started.makeDatabase("bench"))
        }
    }
    Benchmark.teardown = { server.withLock { $0?.server.stop(); $0 = nil } }

    for batch in [1, 100] {
        Benchmark("ledger (PostgreSQL): \(batch) ballot(s) per transaction") { benchmark in
            guard let url = server.withLock({ $0?.url }) else {
                throw PostgresTestServer.Unavailable("the benchmark's PostgreSQL server did not start")
            }
            let ledger = try BallotLedger(url: url)
            let poll = Int64.random(in: 1...Int64.max)
            try ledger.register(poll: poll, voteID: 1234, policy: .latestWins, questions: [1])
            var n: UInt32 = 0
            func next() -> LedgerBallot {
                n &+= 1
                return LedgerBallot(poll: poll, question: 1, voter: VoterKey(mode: .roster, voterID: n), sequence: UInt16(truncatingIfNeeded: n % 7 + 1),
                                    answer: .choice(UInt8(n % 4)), verified: n % 2 == 0,
                                    heardAt: Int64(Date().timeIntervalSince1970 * 1e6), address: DeviceAddress(rawValue: 0x00AA_0100_0001))
            }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                if batch == 1 {
                    try ledger.write(next())
                } else {
                    try ledger.write(batch: (0..<batch).map { _ in next() })
                }
            }
            benchmark.stopMeasurement()
        }

        Benchmark("store (SQLite, synchronous=full): \(batch) ballot(s) per transaction") { benchmark in
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("clicker-bench-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: dir) }
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let store = try ClickerStore(path: dir + "/bench.sqlite", durability: .full)
            let poll = try store.createPoll(voteID: Data([1, 2, 3, 4]), joinCode: "123456", mode: .roster)
            try store.openQuestion(poll: poll.id, number: 1)
            var n: UInt64 = 0
            func next() -> BallotRecord {
                n += 1
                let voter = Data((0..<8).map { UInt8(truncatingIfNeeded: n >> (56 - 8 * UInt64($0))) })
                let now = Date()
                return BallotRecord(poll: poll.id, question: 1, voter: voter, answer: .choice(UInt8(n % 4)), sequence: UInt32(n % 7 + 1),
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
