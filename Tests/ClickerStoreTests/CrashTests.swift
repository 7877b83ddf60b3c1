import struct ClickerTransport.SplitMix64
import ClickerStore
import Foundation
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A child process writes ballots and prints `COMMITTED <first> <last>` after each commit; the parent kills
/// it with SIGKILL at seeded random points, reopens the database and checks that every reported ballot is
/// there, that every transaction is all-or-nothing, and that `PRAGMA integrity_check` passes.
final class CrashTests: XCTestCase {
    static let childEnv = "CLICKER_STORE_CRASH_CHILD_DB"

    /// Batch sizes of the child's transactions (1 = single `record`), derived from the seed so the
    /// parent can recompute transaction boundaries.
    static func batchSizes(seed: UInt64) -> AnyIterator<Int> {
        var rng = SplitMix64(seed: seed)
        return AnyIterator {
            switch rng.next() % 4 {
            case 0, 1: 1
            case 2: Int(rng.next() % 20) + 2
            default: Int(rng.next() % 300) + 2
            }
        }
    }

    /// Ballot number `n` of the test: voter n, question 1, answer n % 4.
    static func ballot(poll: Int64, _ n: UInt64) -> BallotRecord {
        BallotRecord(poll: poll, question: 1, voter: voterID(n), answer: .choice(UInt8(n % 4)), sequence: UInt32(n % 1000),
                     address: "00:AA:00:00:00:01", firstHeard: Date(timeIntervalSince1970: Double(n)),
                     lastHeard: Date(timeIntervalSince1970: Double(n) + 1), gattVerified: n % 3 == 0)
    }

    /// The child's work. Does nothing unless started by `testKilledWriterLosesNothingCommitted`.
    func testCrashChildEntryPoint() throws {
        let env = ProcessInfo.processInfo.environment
        guard let path = env[Self.childEnv], let seed = env["CLICKER_STORE_CRASH_SEED"].flatMap(UInt64.init),
              let start = env["CLICKER_STORE_CRASH_START"].flatMap(UInt64.init) else { return }
        let store = try ClickerStore(path: path)
        let poll: Int64
        if let state = try store.resume() {
            poll = state.poll.id
        } else {
            poll = try store.createPoll(voteID: Data([7]), joinCode: "1", mode: .roster).id
            try store.openQuestion(poll: poll, number: 1)
        }
        let out = FileHandle.standardOutput
        out.write(Data("READY \(poll)\n".utf8))
        var n = start
        for size in Self.batchSizes(seed: seed) {
            let first = n
            if size == 1 {
                try store.record(Self.ballot(poll: poll, n))
            } else {
                try store.record((n..<n + UInt64(size)).map { Self.ballot(poll: poll, $0) },
                                 rejections: [RejectionCount(poll: poll, question: 1, reason: "replay", count: size)])
            }
            n += UInt64(size)
            out.write(Data("COMMITTED \(first) \(n - 1)\n".utf8))
        }
    }

    func testKilledWriterLosesNothingCommitted() throws {
        let dir = try makeTempDir(self)
        let path = dir + "/crash.sqlite"
        let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        var rng = SplitMix64(seed: 0xC11C_4E55)
        var reported: [(UInt64, UInt64)] = []
        var rounds: [(seed: UInt64, start: UInt64)] = []
        for round in 0..<8 as Range<UInt64> {
            let seed = rng.next()
            let start = round * 1_000_000
            rounds.append((seed, start))
            let killAfter = Int(rng.next() % 40) + 1          // commits to see before the kill
            let extraDelay = useconds_t(rng.next() % 3000)   // then kill at a random point mid-write

            let child = Process()
            child.executableURL = URL(fileURLWithPath: exe)
            child.arguments = ["ClickerStoreTests.CrashTests/testCrashChildEntryPoint"]
            var env = ProcessInfo.processInfo.environment
            env[Self.childEnv] = path
            env["CLICKER_STORE_CRASH_SEED"] = String(seed)
            env["CLICKER_STORE_CRASH_START"] = String(start)
            child.environment = env
            let pipe = Pipe()
            child.standardOutput = pipe
            child.standardError = FileHandle.nullDevice
            try child.run()

            var buffer = Data()
            var seen = 0
            var ended = false
            while seen < killAfter {
                let chunk = pipe.fileHandleForReading.availableData
                if chunk.isEmpty { ended = true; break }
                buffer.append(chunk)
                seen = String(decoding: buffer, as: UTF8.self).components(separatedBy: "\n").filter { $0.hasPrefix("COMMITTED ") }.count
            }
            XCTAssertFalse(ended, "child exited before it was killed (round \(round))")
            usleep(extraDelay)
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            XCTAssertEqual(child.terminationReason, .uncaughtSignal)
            buffer.append(pipe.fileHandleForReading.readDataToEndOfFile())
            for line in String(decoding: buffer, as: UTF8.self).split(separator: "\n") where line.hasPrefix("COMMITTED ") {
                let parts = line.split(separator: " ")
                // A line cut by the kill is incomplete; it is simply not counted as reported.
                if parts.count == 3, let a = UInt64(parts[1]), let b = UInt64(parts[2]), line.count > 0 {
                    reported.append((a, b))
                }
            }
        }
        XCTAssertGreaterThan(reported.count, 8)

        let store = try ClickerStore(path: path)
        XCTAssertEqual(try store.integrityCheck(), ["ok"])
        let state = try XCTUnwrap(store.resume())
        let stored = Dictionary(state.ballots.map { (($0.voter.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }), $0) },
                                uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(stored.count, state.ballots.count)
        for (a, b) in reported {
            for n in a...b {
                XCTAssertEqual(stored[n], Self.ballot(poll: state.poll.id, n), "reported ballot \(n) missing or altered")
            }
        }
        // Every transaction is atomic: each batch of each round is entirely present or entirely absent,
        // and the present batches form a prefix of the round's sequence.
        var batchesPresent = 0
        for (seed, start) in rounds {
            var n = start
            var absentSeen = false
            for size in Self.batchSizes(seed: seed) {
                let present = (n..<n + UInt64(size)).filter { stored[$0] != nil }.count
                XCTAssert(present == 0 || present == size, "batch at \(n) of size \(size) partially stored (\(present))")
                if present == 0 { absentSeen = true } else {
                    XCTAssertFalse(absentSeen, "batch at \(n) stored after a missing one")
                    batchesPresent += 1
                }
                n += UInt64(size)
                if absentSeen && n > start + 100_000 { break }
                if absentSeen && (n..<n + 400).allSatisfy({ stored[$0] == nil }) { break }
            }
        }
        XCTAssertGreaterThanOrEqual(batchesPresent, reported.count)
        let total = state.ballots.count
        let rejected = state.rejections.reduce(0) { $0 + $1.count }
        XCTAssertLessThanOrEqual(rejected, total, "rejection increments commit with their batches")
    }
}
