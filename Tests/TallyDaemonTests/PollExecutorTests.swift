import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import Synchronization
@testable import TallyDaemon
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// The name of the thread the caller runs on.
func currentThreadName() -> String {
    let text = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
    return text.trimmingCharacters(in: .newlines)
}

extension PollController {
    /// Ingests `report` and says, from inside the same actor turn, which thread ran it and how many
    /// ballots the database holds when the turn ends.
    func ingestObservingThread(_ report: AdvertisementReport) -> (thread: String, onExecutor: Bool, stored: Int) {
        ingest(report)
        let stored = (try? store?.ballots(poll: pollID ?? 0).count) ?? -1
        return (currentThreadName(), executor.isCurrent, stored)
    }
}

/// The controller's turns, and so its synchronous database commits, run on its own thread, never on
/// the cooperative pool; a ballot is on disk before anything shows it.
final class PollExecutorTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func testCommitsRunOnTheControllersOwnThread() async throws {
        let path = NSTemporaryDirectory() + "clicker-executor-\(UUID().uuidString)/db.sqlite"
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        let store = try ClickerStore(path: path, durability: .normal)
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: store)
        let outside = currentThreadName()
        for voter in UInt32(1)...5 {
            let seen = await controller.ingestObservingThread(sealedReport(code, voter: voter, answer: .choice(1)))
            XCTAssertEqual(seen.thread, "clicker-poll", "the commit ran on \(seen.thread)")
            XCTAssertTrue(seen.onExecutor)
            XCTAssertEqual(seen.stored, Int(voter), "committed inside the turn that counted it")
        }
        XCTAssertNotEqual(outside, "clicker-poll")
        XCTAssertFalse(controller.executor.isCurrent, "the test itself is not on the controller's thread")
    }

    /// Readers on other tasks never see a ballot that is not yet on disk: each reader takes the shown
    /// voter count, then counts the stored ballots through a second connection.
    func testEveryBallotShownIsAlreadyStored() async throws {
        let path = NSTemporaryDirectory() + "clicker-executor-\(UUID().uuidString)/db.sqlite"
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        let store = try ClickerStore(path: path, durability: .normal)
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: store)
        let reader = try ClickerStore(path: path, durability: .normal)
        let voters = 200
        let violations = LineSink()
        let reads = Counter()
        let code = self.code
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for v in 1...voters { await controller.ingest(sealedReport(code, voter: UInt32(v), answer: .choice(0))) }
            }
            for _ in 0..<3 {
                group.addTask {
                    var shown = 0
                    while shown < voters {
                        shown = await controller.results(ballots: false).voters
                        let stored = (try? reader.ballots(poll: 1).count) ?? -1
                        reads.add()
                        if stored < shown { violations.add("shown \(shown), stored \(stored)") }
                    }
                }
            }
        }
        XCTAssertEqual(violations.all, [])
        XCTAssertGreaterThanOrEqual(reads.value, 3)
        XCTAssertEqual(try reader.ballots(poll: 1).count, voters)
    }

    /// The executor runs jobs in the order they were enqueued, one at a time, and its thread ends once
    /// its owner is gone.
    func testTheExecutorIsSerialAndItsThreadEnds() async throws {
        actor Serial {
            let executor: ThreadExecutor
            nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
            var order: [Int] = []
            var inside = 0
            var overlap = false
            init(_ e: ThreadExecutor) { executor = e }
            deinit { executor.shutdown() }
            func add(_ i: Int) {
                inside += 1
                if inside > 1 || !executor.isCurrent { overlap = true }
                order.append(i)
                inside -= 1
            }
        }
        /// Runs 2,100 calls through an actor on `executor`; the actor is gone when this returns.
        func exercise(_ executor: ThreadExecutor) async throws -> (order: [Int], overlap: Bool, threads: [String]) {
            let c = Serial(executor)
            for i in 0..<2000 { await c.add(i) }
            await withTaskGroup(of: Void.self) { group in
                for i in 2000..<2100 { group.addTask { await c.add(i) } }
            }
            let threads = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").compactMap {
                try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)
            }
            return (await c.order, await c.overlap, threads)
        }
        let executor = try XCTUnwrap(ThreadExecutor(name: "test-serial"))
        let r = try await exercise(executor)
        let (exited, exit) = AsyncStream<Void>.makeStream()
        Task { await executor.finished(); exit.yield() }
        XCTAssertEqual(Array(r.order.prefix(2000)), Array(0..<2000), "sequential calls run in order")
        XCTAssertEqual(Set(r.order.suffix(100)), Set(2000..<2100))
        XCTAssertFalse(r.overlap, "one job at a time, all on the executor's thread")
        XCTAssertTrue(r.threads.contains("test-serial\n"), "\(r.threads)")
        let ended = await first(of: exited, within: .seconds(60))
        XCTAssertTrue(ended, "the thread ends once its owner is gone")
    }
}
