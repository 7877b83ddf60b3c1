import ClickerSim
import ClickerTestSupport
@testable import ClickerStore
import ClickerTransport
import ClickerWire
import Foundation
import Glibc
import GRDB
import Logging
import Synchronization
@testable import TallyDaemon
import Voter
import XCTest

/// A database that cannot grow under a real `PollController` and its beacon, with real voters
/// (`BeaconFollowService`) following it on the simulated air: SQLite's `max_page_count` (a write
/// that needs another page fails with SQLITE_FULL, "database or disk is full"), and a real full
/// disk (a tmpfs filled to ENOSPC). Nothing the store does not hold is shown, exported or
/// acknowledged; the voters keep sending; once the database grows again their answers count.
final class FullDiskTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // test constant
    let letters = ["A", "B", "C", "D"]

    func testAFullDatabaseStopsCountingAndAcknowledgingAndLosesNothing() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("full-disk-\(UUID())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await countWhileTheDiskFills(in: dir, exports: dir + "/exports", fill: { store in
            let pages = try await store.pool.writeWithoutTransaction { db in
                let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
                try db.execute(sql: "PRAGMA max_page_count = \(pages)")
                return pages
            }
            XCTAssertGreaterThan(pages, 0)
        }, free: { store in
            try await store.pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA max_page_count = 1073741823") }
        })
    }

    /// The database on a real full disk, as issue 37 found it: a 2 MiB tmpfs, filled to ENOSPC by
    /// another file once the first answers are counted; space returns when that file is removed.
    func testADatabaseOnARealFullDiskStopsCountingAndAcknowledgingAndLosesNothing() async throws {
        let mountPoint = try mountSmallDisk()
        defer { unmountSmallDisk(mountPoint) }
        // Exports go elsewhere: this disk is full when the test exports.
        let exports = mountPoint + "-exports"
        defer { try? FileManager.default.removeItem(atPath: exports) }
        let filler = mountPoint + "/filler"
        try await countWhileTheDiskFills(in: mountPoint, exports: exports, fill: { _ in
            fillToTheLastBlock(filler)
        }, free: { _ in
            XCTAssertEqual(unlink(filler), 0)
        })
    }

    /// The built `clicker-tally` with its database on a real full disk exits with status 1 and says
    /// why, even though space returned before the end: issue 37's daemon exited 0 after commits had
    /// failed. A simulated room of 20 changes answers (about 20 votes/s) on the simulated air; once
    /// question 1 is open the disk fills; once the log says counting stopped, space returns and the
    /// run is ended with SIGTERM.
    func testTheTallyOnARealFullDiskExitsWithAnErrorSayingWhy() throws {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("clicker-tally").path
        guard FileManager.default.isExecutableFile(atPath: bin) else {
            throw XCTSkip("\(bin) not built (swift build --build-tests builds it)")
        }
        let mountPoint = try mountSmallDisk()
        defer { unmountSmallDisk(mountPoint) }
        let work = mountPoint + "-work"   // the air's socket and stderr, not on the full disk
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let filler = mountPoint + "/filler"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: bin)
        // No beacon: the end of the run then does not broadcast "closed" for 3 s.
        p.arguments = ["--radio", "sim", "--air", work + "/air.sock", "--simulate", "20", "--simulate-speed", "20",
                       "--simulate-churn", "20", "--no-gatt-confirm", "--no-beacon", "--duration", "300",
                       "--db", mountPoint + "/clicker.sqlite"]
        p.environment = ["XDG_RUNTIME_DIR": work, "PATH": "/usr/bin:/bin"]
        let out = Pipe()
        p.standardOutput = out
        XCTAssertTrue(FileManager.default.createFile(atPath: work + "/stderr", contents: nil))
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: work + "/stderr"))
        p.standardError = errors
        p.standardInput = FileHandle.nullDevice
        try p.run()
        try errors.close()
        // The plain log on stdout says when question 1 is open (the poll is stored) and when counting stopped.
        var stdout = "", filled = false, stopped = false
        while true {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            stdout += String(decoding: chunk, as: UTF8.self)
            if !filled, stdout.contains("question 1 opened\n") {
                fillToTheLastBlock(filler)
                filled = true
            }
            if filled, !stopped, stdout.contains("COUNTING STOPPED") {
                XCTAssertEqual(unlink(filler), 0)
                stopped = true
                // Ended as an instructor ends it (--duration is only a bound): a loaded machine may take
                // seconds to fill and notice, so the run's length is not what decides the test.
                p.terminate()
            }
        }
        p.waitUntilExit()
        let stderr = (try? String(contentsOfFile: work + "/stderr", encoding: .utf8)) ?? ""
        XCTAssertTrue(filled, "question 1 never opened: \(stdout) \(stderr)")
        XCTAssertTrue(stopped, "no commit failed during the run: \(stdout) \(stderr)")
        XCTAssertEqual(p.terminationReason, .exit)
        XCTAssertEqual(p.terminationStatus, 1, "the run's exit status does not say it failed: \(stderr)")
        XCTAssertTrue(stderr.contains("Error: the database could not be written during this run (SQLite error 13: "
                                      + "database or disk is full"), stderr)
    }

    /// A 2 MiB tmpfs at a fresh temporary path (``SmallDisk``); skipped, saying why, without root.
    func mountSmallDisk() throws -> String {
        switch SmallDisk.mount(size: "2m") {
        case .success(let mountPoint): return mountPoint
        case .failure(let e): throw XCTSkip(e.description)
        }
    }

    func unmountSmallDisk(_ mountPoint: String) { SmallDisk.unmount(mountPoint) }

    /// Writes `path` until the disk is full: the next write fails with ENOSPC.
    func fillToTheLastBlock(_ path: String) {
        let (filled, failure) = SmallDisk.fill(path, limit: 4 << 20)
        XCTAssertEqual(failure, ENOSPC, "the disk is full after \(filled) bytes: \(String(cString: strerror(failure)))")
    }

    /// Ten voters answer A; `fill` stops the database from growing; they change their answers until
    /// commits fail, twice more; `free` lets it grow; every voter's latest answer is then counted.
    func countWhileTheDiskFills(in dir: String, exports: String, fill: (ClickerStore) async throws -> Void,
                                free: (ClickerStore) async throws -> Void) async throws {
        let n = 10
        let secret = pollSecret(code)
        let air = SimulatedAir(AirConfiguration(seed: 37, clock: .virtual))
        let store = try ClickerStore(path: dir + "/clicker.db", durability: .normal)
        // The controller's clock is the air's: its retries of the store follow virtual time.
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: store,
                                            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
                                            clock: PollClock(air.clock, origin: Date(timeIntervalSinceReferenceDate: 0)))
        let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let shown = Mutex<[Int: [String]]>([:])
        // The voters keep the air's time too: `drive` lets each act at every instant of the air.
        let inputs = (0..<n).map { _ in AirVoter(air) }
        var voters: [Task<Void, any Error>] = []
        var stores: [Data] = []   // each voter as the store keys it
        for (i, input) in inputs.enumerated() {
            let identity = DeviceKey.generate()
            let id = await VoterSession(secret: secret, question: 1, identity: identity, transport: air.addPeripheral(),
                                        state: nil).voterID
            stores.append(Data([0, UInt8(id >> 24), UInt8((id >> 16) & 0xFF), UInt8((id >> 8) & 0xFF), UInt8(id & 0xFF)]))
            let service = BeaconFollowService(secret: secret, identity: identity, roster: false,
                                              transport: input.radio, state: nil, lines: input.lines,
                                              report: { s in shown.withLock { $0[i, default: []].append(s.line) } },
                                              logger: quiet, clock: air.clock, start: StaggeredStart(seed: UInt64(i + 1)),
                                              turns: input.turns)
            voters.append(Task { try await service.run() })
        }
        let run = await air.start(controller)
        func lines(_ i: Int) -> [String] { shown.withLock { $0[i] ?? [] } }
        func drive(for d: Duration) async {
            let end = air.now.nanoseconds + UInt64(d.components.seconds) * 1_000_000_000
                + UInt64(d.components.attoseconds / 1_000_000_000)
            while air.now.nanoseconds < end {
                await air.drive(controller, until: RadioInstant(nanoseconds: air.now.nanoseconds + 100_000_000), voters: inputs)
            }
        }
        func drive(_ what: String, for limit: Duration, until done: (Int) -> Bool) async {
            let end = air.now.nanoseconds + UInt64(limit.components.seconds) * 1_000_000_000
            while air.now.nanoseconds < end {
                if (0..<n).allSatisfy(done) { return }
                await air.drive(controller, until: RadioInstant(nanoseconds: air.now.nanoseconds + 100_000_000), voters: inputs)
            }
            XCTFail("\(what): not every voter after \(limit): \((0..<n).filter { !done($0) }.map { "\($0): \(lines($0).suffix(3))" })")
        }
        /// Each voter's answer that it shows counted now: its latest status is "counted". A "counted"
        /// line followed by "sending" is not: that answer was replaced, and a later one, the same as
        /// it four rounds on, may not be saved.
        func shownCounted() -> [Int: String] {
            var d: [Int: String] = [:]
            for i in 0..<n {
                if let s = lines(i).last(where: { $0.hasPrefix("counted ") || $0.hasPrefix("sending ") }),
                   s.hasPrefix("counted ") { d[i] = String(s.dropFirst(8)) }
            }
            return d
        }
        /// Each voter's answer as the store counts it: its highest sequence (latest wins).
        func storedAnswers() throws -> [Data: String] {
            var latest: [Data: BallotRecord] = [:]
            for b in try store.ballots(poll: 1, question: 1) where b.sequence >= latest[b.voter]?.sequence ?? 0 {
                latest[b.voter] = b
            }
            return latest.mapValues { $0.answer.description }
        }
        /// The answers the store counts.
        func stored() throws -> [String: Int] {
            try storedAnswers().values.reduce(into: [:]) { $0[$1, default: 0] += 1 }
        }
        func histogram(_ d: [Int: String]) -> [String: Int] { d.values.reduce(into: [:]) { $0[$1, default: 0] += 1 } }
        /// What the controller counts (results, the export's source), without answers at zero.
        func counted() async -> [String: Int] { await controller.results().counts.filter { $0.value > 0 } }

        await drive("question 1 shown", for: .seconds(20)) { lines($0).contains("question 1 single 4") }
        for input in inputs { input.type("A") }
        await drive("counted A", for: .seconds(60)) { lines($0).contains("counted A") }
        XCTAssertEqual(try stored(), ["A": n])

        // The disk fills: the database can no longer grow.
        try await fill(store)
        // The voters change their answers until a commit fails (the last page fills), then twice more.
        var round = 0
        var answer: [Int: String] = [:]
        var roundsStopped = 0
        while roundsStopped < 2 {
            round += 1
            XCTAssertLessThan(round, 40, "the database never filled")
            if round >= 40 { break }
            for (i, input) in inputs.enumerated() {
                answer[i] = letters[(round + i) % 4]
                input.type(answer[i] ?? "A")
            }
            await drive(for: .seconds(4))
            if await controller.storageError != nil { roundsStopped += 1 }
            // A voter that shows its answer counted has it saved; the tally counts what the store counts.
            let saved = try storedAnswers()
            for i in 0..<n {
                guard let last = lines(i).last, last.hasPrefix("counted ") else { continue }
                XCTAssertEqual(saved[stores[i]], String(last.dropFirst(8)), "round \(round): voter \(i) shows counted what is not saved")
            }
            let storedNow = try stored()
            let countedNow = await counted()
            XCTAssertEqual(countedNow, storedNow, "round \(round): the tally counts what is not saved")
        }
        let notSaved = await controller.notSaved
        XCTAssertGreaterThan(notSaved, 0)
        // Counting has stopped, plainly: the live view says so and why.
        let alert = await controller.viewModel().alert ?? ""
        XCTAssertTrue(alert.hasPrefix("COUNTING STOPPED"), alert)
        XCTAssertTrue(alert.contains("database or disk is full"), alert)
        // Some voter's latest answer is not counted, and that voter does not say it is.
        let waiting = (0..<n).filter { shownCounted()[$0] != answer[$0] }
        XCTAssertFalse(waiting.isEmpty, "no answer was left unsaved")
        // The voters keep sending their ballots (never acknowledged): the tally hears them and, at
        // each retry of the store, fails to save them again.
        let ballotsBefore = await controller.ingestStatistics.reports
        await drive(for: .seconds(10))
        let ballotsAfter = await controller.ingestStatistics.reports
        let notSavedAfter = await controller.notSaved
        XCTAssertGreaterThan(ballotsAfter, ballotsBefore + waiting.count, "the voters that were not acknowledged stopped sending")
        XCTAssertGreaterThan(notSavedAfter, notSaved, "no retry of the store in 10 s")
        let exported = try await controller.export(to: exports)
        XCTAssertFalse(exported.isEmpty)
        // A commit with nothing to write (an empty transaction succeeds on a full disk) does not say
        // that counting resumed.
        await controller.flush()
        let stillStopped = await controller.storageError
        XCTAssertNotNil(stillStopped, "an empty commit resumed counting while the disk is full")

        // Space returns: counting resumes, and every voter's latest answer counts with nothing lost.
        try await free(store)
        await drive("latest answer counted", for: .seconds(60)) { shownCounted()[$0] == answer[$0] }
        let final = histogram(answer)
        XCTAssertEqual(try stored(), final)
        let countedAfter = await counted()
        XCTAssertEqual(countedAfter, final)
        let storageError = await controller.storageError
        XCTAssertNil(storageError)
        let failure = await controller.storageFailure
        XCTAssertNotNil(failure, "the run keeps its storage failure for the exit status")
        let resumedAlert = await controller.viewModel().alert
        XCTAssertNil(resumedAlert)

        for v in voters { v.cancel() }
        for v in voters { _ = try? await v.value }
        run.cancel()
        _ = try? await run.value
        air.finishAdvertisementStreams()
    }
}
