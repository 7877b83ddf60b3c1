import ClickerStore
import ClickerWire
import DBusTestSupport
import Foundation
import XCTest

/// A poll that was never exported can be found and read back without a daemon: `polls`, and
/// `results`/`export` by vote ID with `--db`; a new run says what it did with a poll left open, a
/// run that ends unexported says so, and the exit summary shows every question.
final class PollRecoveryTests: XCTestCase {

    /// A poll of two questions left open in the database (a crash): question 1 closed with three
    /// voters, question 2 open with two.
    func leftOpen(_ db: String) throws -> JoinCode {
        let code = try JoinCode(parsing: "4821-ABCDE-FGHJK")
        let store = try ClickerStore(path: db)
        let poll = try store.createPoll(voteID: Data([UInt8(code.voteID >> 8), UInt8(code.voteID & 0xFF)]),
                                        joinCode: code.description, mode: .anonymous)
        let now = Date()
        func ballot(_ q: Int, _ voter: UInt8, _ answer: Answer) -> BallotRecord {
            BallotRecord(poll: poll.id, question: q, voter: Data([0, 0, 0, 0, voter]), answer: answer, sequence: 1,
                         address: "00:AA:01:00:00:0\(voter)", firstHeard: now, lastHeard: now, gattVerified: false)
        }
        try store.openQuestion(poll: poll.id, number: 1,
                               definition: QuestionDefinition(kinds: [.choice], options: 4, title: "Capital of France?"), at: now)
        try store.record([ballot(1, 1, .choice(1)), ballot(1, 2, .choice(1)), ballot(1, 3, .choice(2))])
        try store.closeQuestion(poll: poll.id, number: 1, at: now)
        try store.openQuestion(poll: poll.id, number: 2, definition: .choice(options: 4), at: now)
        try store.record([ballot(2, 1, .choice(0)), ballot(2, 2, .choice(3))])
        return code
    }

    func testAPollLeftOpenIsListedReadExportedAndNamedByTheNextRun() throws {
        let dir = NSTemporaryDirectory() + "clicker-recovery-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let db = dir + "/clicker.sqlite"
        let code = try leftOpen(db)
        let id = String(code.voteID)

        let polls = try clickerTally(["polls", "--db", db], runtime: dir)
        XCTAssertEqual(polls.status, 0, polls.stderr)
        XCTAssertTrue(polls.stdout.hasPrefix("vote \(id)  started "), polls.stdout)
        XCTAssertTrue(polls.stdout.contains("open (clicker-tally --resume continues it)  anonymous  2 questions, voters 3/2"),
                      polls.stdout)

        let results = try clickerTally(["results", "--db", db, "--poll", id], runtime: dir)
        XCTAssertEqual(results.status, 0, results.stderr)
        XCTAssertTrue(results.stdout.contains("question 1 (Capital of France?): 3 voters"), results.stdout)
        XCTAssertTrue(results.stdout.contains("question 2: 2 voters"), results.stdout)
        // --json: the export's document, of the question asked.
        let json = try clickerTally(["results", "--db", db, "--poll", id, "--question", "2", "--json"], runtime: dir)
        XCTAssertEqual(json.status, 0, json.stderr)
        let doc = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], json.stdout)
        let questions = try XCTUnwrap(doc["questions"] as? [[String: Any]], json.stdout)
        XCTAssertEqual(questions.map { $0["number"] as? Int }, [2], json.stdout)
        XCTAssertEqual(questions.first?["voters"] as? Int, 2, json.stdout)
        XCTAssertEqual((questions.first?["counts"] as? [String: Int])?["D"], 1, json.stdout)
        let pollDoc = try XCTUnwrap(doc["poll"] as? [String: Any], json.stdout)
        XCTAssertNotNil(pollDoc["createdAt"], json.stdout)
        XCTAssertNil(pollDoc["closedAt"], "the poll is still open: \(json.stdout)")
        let unknown = try clickerTally(["results", "--db", db, "--poll", "17"], runtime: dir)
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("no poll with vote ID 17"), unknown.stderr)

        let out = dir + "/exports"
        let export = try clickerTally(["export", "--db", db, "--poll", id, out], runtime: dir)
        XCTAssertEqual(export.status, 0, export.stderr)
        let summary = try XCTUnwrap(export.stdout.split(separator: "\n").first { $0.hasSuffix("-summary.csv") }, export.stdout)
        let csv = try String(contentsOfFile: String(summary), encoding: .utf8)
        XCTAssertEqual(csv.split(separator: "\r\n").count, 3, "a header and a row per question: \(csv)")

        // The next run, resumed: every question in the exit summary, and the warning that it was not exported.
        let base = ["--radio", "sim", "--no-gatt-confirm", "--duration", "0.2", "--db", db]
        let resumed = try clickerTally(base + ["--resume"], runtime: dir)
        XCTAssertEqual(resumed.status, 0, resumed.stderr)
        XCTAssertTrue(resumed.stdout.contains("vote \(id) question 1: 3 voters"), resumed.stdout)
        XCTAssertTrue(resumed.stdout.contains("vote \(id) question 2: 2 voters"), resumed.stdout)
        XCTAssertTrue(resumed.stderr.contains("not exported: vote \(id) was never exported in this run"), resumed.stderr)
        XCTAssertTrue(resumed.stderr.contains("clicker-tally export --db \(db) --poll \(id)"), resumed.stderr)

        // A new poll: the one left open is closed, and the run says so and how to read it.
        let fresh = try clickerTally(base + ["--json"], runtime: dir)
        XCTAssertEqual(fresh.status, 0, fresh.stderr)
        XCTAssertTrue(fresh.stderr.contains("the previous poll (vote \(id), started "),
                      fresh.stderr)
        XCTAssertTrue(fresh.stderr.contains("Z) was still open: closed now, votes kept"), fresh.stderr)
        XCTAssertTrue(fresh.stderr.contains("clicker-tally results --db \(db) --poll \(id)"), fresh.stderr)
        let listed = try clickerTally(["polls", "--db", db], runtime: dir)
        XCTAssertEqual(listed.stdout.split(separator: "\n").count, 2, listed.stdout)
    }

    /// Runs the built daemon on `db` with `extra` arguments until it serves its bus name, stops it, and
    /// returns its journal; skips when the tally is not built.
    func daemonJournal(db: String, runtime dir: String, _ extra: [String] = []) throws -> String {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("clicker-tally").path
        guard FileManager.default.isExecutableFile(atPath: bin) else { throw XCTSkip("\(bin) not built") }
        let bus = try PrivateBus()
        defer { bus.stop() }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: bin)
        p.arguments = ["daemon", "--bus", bus.address, "--db", db, "--radio", "sim", "--no-gatt-confirm"] + extra
        p.environment = ["XDG_RUNTIME_DIR": dir, "PATH": "/usr/bin:/bin"]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        let serving = expectation(description: "the daemon serves its bus name")
        let log = JournalLines(until: "serving org.clicker.Tally1", then: serving)
        err.fileHandleForReading.readabilityHandler = { log.append($0.availableData) }
        try p.run()
        wait(for: [serving], timeout: 120)
        p.terminate()
        p.waitUntilExit()
        err.fileHandleForReading.readabilityHandler = nil
        return log.text
    }

    func scratch() throws -> String {
        let dir = NSTemporaryDirectory() + "clicker-recovery-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return dir
    }

    /// The daemon closes a poll left open as a run does, and its journal says which and how to read it.
    func testTheDaemonSaysWhichOpenPollItClosed() throws {
        let dir = try scratch()
        let db = dir + "/clicker.sqlite"
        let id = String(try leftOpen(db).voteID)
        let text = try daemonJournal(db: db, runtime: dir)
        XCTAssertTrue(text.contains("the previous poll (vote \(id), started "), text)
        XCTAssertTrue(text.contains("was still open: closed now, votes kept"), text)
        XCTAssertTrue(text.contains("clicker-tally results --db \(db) --poll \(id)"), text)
        let polls = try ClickerStore(path: db).polls().sorted { $0.createdAt < $1.createdAt }
        XCTAssertEqual(polls.count, 2, "the daemon's own poll beside the one it closed")
        XCTAssertNotNil(polls.first?.closedAt, "the poll left open is closed")
    }

    /// `--resume-open` (the unit's start): a restart continues the open poll, its join code and votes;
    /// a poll too old to resume is closed and a new one starts, as without it; with no poll left
    /// open, a new one starts.
    func testTheDaemonStartedAgainContinuesTheOpenPoll() throws {
        let dir = try scratch()
        let db = dir + "/clicker.sqlite"
        let code = try leftOpen(db)
        var text = try daemonJournal(db: db, runtime: dir, ["--resume-open"])
        XCTAssertTrue(text.contains("continued the open poll \(IDText.vote(code.voteID)) at question 2"), text)
        XCTAssertFalse(text.contains("was still open"), text)
        var polls = try ClickerStore(path: db).polls()
        XCTAssertEqual(polls.count, 1, "no new poll")
        XCTAssertNil(polls.first?.closedAt, "the daemon stopped by SIGTERM leaves its poll open for the next start")
        XCTAssertEqual(try ClickerStore(path: db).resume()?.ballots.filter { $0.question == 2 }.count, 2, "its votes kept")

        // Too old for --resume-limit: closed, and a new poll starts.
        Thread.sleep(forTimeInterval: 1.1)  // the limit below is 0.36 s: the poll is older whatever the load
        text = try daemonJournal(db: db, runtime: dir, ["--resume-open", "--resume-limit", "0.0001"])
        XCTAssertTrue(text.contains("the open poll cannot be continued ("), text)
        XCTAssertTrue(text.contains("was still open: closed now, votes kept"), text)
        polls = try ClickerStore(path: db).polls().sorted { $0.createdAt < $1.createdAt }
        XCTAssertEqual(polls.count, 2)
        XCTAssertNotNil(polls.first?.closedAt)

        // The new poll was left open by SIGTERM; close it by hand: with nothing open, a new poll starts.
        let store = try ClickerStore(path: db)
        if let open = try store.resume() { try store.closePoll(open.poll.id, at: Date()) }
        text = try daemonJournal(db: db, runtime: dir, ["--resume-open"])
        XCTAssertFalse(text.contains("continued the open poll"), text)
        XCTAssertEqual(try ClickerStore(path: db).polls().count, 3)
    }
}

/// A child's stderr as it comes, and an expectation fulfilled once it holds a text.
private final class JournalLines: @unchecked Sendable {
    // @unchecked Sendable: `data` and `fired` are only touched under `lock`; the rest is immutable.
    private let lock = NSLock()
    private var data = Data()
    private var fired = false
    private let needle: String
    private let expectation: XCTestExpectation

    init(until needle: String, then expectation: XCTestExpectation) {
        self.needle = needle
        self.expectation = expectation
    }

    func append(_ chunk: Data) {
        let fire: Bool = lock.withLock {
            data.append(chunk)
            guard !fired, String(decoding: data, as: UTF8.self).contains(needle) || chunk.isEmpty else { return false }
            fired = true
            return true
        }
        if fire { expectation.fulfill() }
    }

    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }
}
