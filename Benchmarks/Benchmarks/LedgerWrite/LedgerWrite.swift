// Ballots written per second into the PostgreSQL ballot ledger (ClickerLedger): one ballot per
// transaction and 100 per transaction, each ballot a new voter, flushing every commit (PostgreSQL's
// defaults: fsync, synchronous_commit=on) on a private server on loopback TCP. SQLite's figures for the
// same workload are StoreCommit's `synchronous=full` rows: run both targets in one invocation
// (`--target LedgerWrite --target StoreCommit`). Throughput is in transactions per second: multiply
// the batched figures by 100 for ballots per second.
import Benchmark
import ClickerLedger
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

    // The last: 100 per transaction into a database without schema 6's per-question close (its two
    // BEFORE triggers dropped), for the triggers' cost in the same run.
    for (batch, closeTriggers) in [(1, true), (100, true), (100, false)] {
        Benchmark("ledger (PostgreSQL): \(batch) ballot(s) per transaction" + (closeTriggers ? "" : ", without the close triggers")) { benchmark in
            guard let url = server.withLock({ $0?.url }) else {
                throw PostgresTestServer.Unavailable("the benchmark's PostgreSQL server did not start")
            }
            let ledger = try BallotLedger(url: closeTriggers ? url : withoutCloseTriggers(url))
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
    }
}

/// A second database of the benchmark's server, made once, without the per-question close triggers.
let openOnly = Mutex<String?>(nil)
func withoutCloseTriggers(_ url: String) throws -> String {
    try openOnly.withLock { made in
        if let made { return made }
        guard let server = server.withLock({ $0?.server }) else { throw PostgresTestServer.Unavailable("no server") }
        let other = try server.makeDatabase("bench_open_only")
        _ = try BallotLedger(url: other)
        try server.psql("DROP TRIGGER ballots_open_question ON ballots; DROP TRIGGER spans_open_question ON ballot_spans",
                        database: "bench_open_only")
        made = other
        return other
    }
}
