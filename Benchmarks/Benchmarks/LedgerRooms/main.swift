// A campus writing to one PostgreSQL: ROOMS rooms of VOTERS voters, each room its own receiver
// (`LedgerReceiver`: its own pipeline, local journal, writer thread and connection, as
// `clicker-tally receiver` runs it) on a private server on this machine with the server's durable
// defaults, against one room counted into ClickerStore's SQLite as the instructor's tally commits it
// today (each counted ballot its own `synchronous=full` transaction, in the turn that counted it), in
// the same run. Three phases, each on questions of its own:
//   lecture     questions of LECTURE seconds, votes spread over their first two thirds, a fifth of
//               the voters changing once, every voter's ballot heard again once a second; the rooms'
//               questions start at random moments within 10 s of each other; two questions a room
//   burst       every room opens a question at once and all its voters are heard within 1.5 s
//               (how long the air takes to carry 300 voters casting together, PERFORMANCE.md)
//   saturation  each room hands its writer rounds of every voter changing, a new round as soon as one
//               of its three rounds in flight is committed, for SATURATION seconds: the ledger's capacity
// Latency: from a radio batch handed to the receiver (counted and passed to its writer) to the end of
// the writer's pass that committed it (the receiver's `sync()`); for SQLite, to the ballot's commit.
// Run: swift run -c release --package-path Benchmarks LedgerRooms [--rooms 40] [--voters 300]
//      [--lecture 30] [--saturation 15] [--seed 1]
import ClickerLedger
import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import PostgresTestSupport
import Receivers
import Synchronization

struct Options {
    var rooms = 40, voters = 300, seed: UInt64 = 1
    var lecture = 30.0, saturation = 15.0

    init(_ args: [String]) throws {
        var it = args.makeIterator()
        while let a = it.next() {
            guard let v = it.next() else { throw Usage("\(a) needs a value") }
            switch a {
            case "--rooms": rooms = try Self.number(a, v, 1...90)
            case "--voters": voters = try Self.number(a, v, 1...5000)
            case "--seed": seed = UInt64(try Self.number(a, v, 0...Int.max))
            case "--lecture": lecture = Double(try Self.number(a, v, 5...600))
            case "--saturation": saturation = Double(try Self.number(a, v, 3...600))
            default: throw Usage("unknown option \(a)")
            }
        }
    }

    static func number(_ name: String, _ text: String, _ range: ClosedRange<Int>) throws -> Int {
        guard let n = Int(text), range.contains(n) else { throw Usage("\(name) takes a whole number in \(range)") }
        return n
    }
}

struct Usage: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

let options: Options
do { options = try Options(Array(CommandLine.arguments.dropFirst())) } catch {
    FileHandle.standardError.write(Data("LedgerRooms: \(error)\n".utf8))
    exit(2)
}

let clock = ContinuousClock()
let runStart = clock.now
func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
func seconds(since start: ContinuousClock.Instant = runStart) -> Double { seconds(clock.now - start) }
func loadAverage() -> String {
    (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
}
/// CPU seconds (user + system) of this process so far.
func processCPU() -> Double {
    var u = rusage()
    getrusage(RUSAGE_SELF.rawValue, &u)
    return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6
}
func ms(_ s: Double) -> String { String(format: "%.1f ms", s * 1000) }

/// Runs `body` on a thread of its own (SQLite's commits block), off Swift's cooperative pool.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { c in
        let t = Thread { c.resume(with: Result { try body() }) }
        t.start()
    }
}

// MARK: setup

let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clicker-rooms-\(UUID().uuidString)").path
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }
let server = try PostgresTestServer(durable: true)
defer { server.stop() }
let url = try server.makeDatabase("campus")
let admin = try BallotLedger(url: url)
let questions: [QuestionSpec] = (1...4).map { .choice($0) }
var rng = SplitMix64(seed: options.seed)

print("LedgerRooms: \(options.rooms) rooms × \(options.voters) voters into one PostgreSQL (private server, fsync and "
      + "synchronous_commit=on), one room into SQLite (synchronous=full); load average \(loadAverage()) at start")
var rooms: [Room] = []
var receivers: [LedgerReceiver] = []
for r in 0..<options.rooms {
    let secret = PollSecret(deriving: JoinCode.random(using: &rng))
    let poll = Int64(r + 1)
    try admin.register(poll: poll, voteID: secret.voteID, policy: .latestWins, specs: questions)
    let token = try admin.issueReceiverToken(poll: poll, validUntil: Int64(Date().timeIntervalSince1970) + 86_400)
    receivers.append(try await LedgerReceiver.join(url: token.url(replacingCredentialsOf: url), secret: secret,
                                                   journalPath: "\(directory)/journal-\(r).sqlite", radioEpoch: 0))
    rooms.append(Room(secret: secret, voters: options.voters, rng: &rng))
}
// The SQLite room: its own poll secret and voters, the store as the tally opens it.
let sqliteSecret = PollSecret(deriving: JoinCode.random(using: &rng))
let sqliteRoom = Room(secret: sqliteSecret, voters: options.voters, rng: &rng)
let store = try ClickerStore(path: directory + "/tally.sqlite", durability: .full)
let sqlitePoll = try store.createPoll(voteID: Data([0, 0, UInt8(sqliteSecret.voteID >> 8), UInt8(sqliteSecret.voteID & 0xFF)]),
                                      joinCode: nil, mode: .anonymous)
for q in 1...4 { try store.openQuestion(poll: sqlitePoll.id, number: q) }
/// The SQLite room's pipeline, on whichever thread runs its phase (one at a time).
let sqlitePipeline = Mutex(IngestPipeline(secret: sqliteSecret))
sqlitePipeline.withLock { p in for q in questions { p.tally.open(q) } }
let readyAt = seconds()
print("set up in \(String(format: "%.1f", readyAt)) s")

// MARK: the rooms at work

/// A room's receiver fed what it hears, in radio batches every 50 ms; the batches' latencies to `samples`.
func feed(_ receiver: LedgerReceiver, _ heard: [Heard], start: ContinuousClock.Instant, radioOffset: Double,
          samples: SampleLog) async {
    await withTaskGroup(of: Void.self) { group in
        var i = 0, tick = start
        while i < heard.count {
            tick = tick.advanced(by: .milliseconds(50))
            try? await Task.sleep(until: tick, clock: .continuous)
            let now = seconds(since: start)
            var batch: [AdvertisementReport] = []
            while i < heard.count, heard[i].at <= now {
                batch.append(Room.report(voter: heard[i].voter, data: heard[i].data, at: radioOffset + heard[i].at))
                i += 1
            }
            guard !batch.isEmpty else { continue }
            let (n, handed) = await hand(batch, to: receiver)
            guard n > 0 else { continue }
            group.addTask { await awaitCommit(of: n, handed: handed, by: receiver, samples: samples) }
        }
    }
}

/// Hands a radio batch to the receiver; returns how many ballots it passed on to its writer, and when
/// the batch was handed.
func hand(_ batch: [AdvertisementReport], to receiver: LedgerReceiver) async -> (ballots: Int, handed: ContinuousClock.Instant) {
    let before = await receiver.ballotsCounted
    let handed = clock.now
    await receiver.take(batch)
    return (await receiver.ballotsCounted - before, handed)
}

/// Waits for the end of the writer's pass that commits what was handed, and records its latency.
func awaitCommit(of ballots: Int, handed: ContinuousClock.Instant, by receiver: LedgerReceiver, samples: SampleLog) async {
    _ = await receiver.sync()
    let latency = seconds(since: handed)
    samples.add(latency: latency, ballots: ballots, committedAt: seconds())
}

/// The SQLite room fed the same way, each ballot the pipeline counts committed in its own transaction.
func feedSQLite(_ heard: [Heard], start: ContinuousClock.Instant, radioOffset: Double, samples: SampleLog) throws {
    var i = 0, tick = start
    while i < heard.count {
        tick = tick.advanced(by: .milliseconds(50))
        let wait = tick - clock.now
        if wait > .zero { Thread.sleep(forTimeInterval: seconds(wait)) }
        let handed = clock.now
        while i < heard.count, heard[i].at <= seconds(since: start) {
            let report = Room.report(voter: heard[i].voter, data: heard[i].data, at: radioOffset + heard[i].at)
            i += 1
            try commitIfCounted(report, handed: handed, samples: samples)
        }
    }
}

/// The voter's key as ClickerStore keeps it (mode byte, voter ID big-endian), as `PollController` writes it.
func storeBytes(_ b: Ballot) -> Data {
    Data([b.mode.rawValue] + (0..<4).map { UInt8(truncatingIfNeeded: b.voterID >> (24 - 8 * UInt32($0))) })
}

/// What `PollController` does with a report: count it, and commit a new or changed ballot at once.
func commitIfCounted(_ report: AdvertisementReport, handed: ContinuousClock.Instant, samples: SampleLog) throws {
    let result = sqlitePipeline.withLock { $0.ingest(report) }
    guard let b = result.ballot else { return }
    switch result.outcome {
    case .new, .changed: break
    default: return
    }
    let now = Date()
    try store.record(BallotRecord(poll: sqlitePoll.id, question: Int(b.question),
                                  voter: storeBytes(b), answer: b.answer,
                                  sequence: UInt32(b.sequence), address: "", firstHeard: now, lastHeard: now, gattVerified: false))
    let latency = seconds(since: handed)
    samples.add(latency: latency, ballots: 1, committedAt: seconds())
}

struct PhaseResult {
    let ledger: Samples, sqlite: Samples
    let start: Double, end: Double, cpu: Double, load: (String, String)
}

/// Runs the PostgreSQL rooms and the SQLite room on the same pattern at once.
func phase(_ receivers: [LedgerReceiver], ledgerHeard: [[Heard]], sqliteHeard: [Heard]) async throws -> PhaseResult {
    let ledger = SampleLog(), sqlite = SampleLog()
    let load0 = loadAverage(), cpu0 = processCPU()
    let start = clock.now.advanced(by: .milliseconds(200))
    let begin = seconds() + 0.2
    async let local: Void = onThread { try feedSQLite(sqliteHeard, start: start, radioOffset: begin, samples: sqlite) }
    await withTaskGroup(of: Void.self) { group in
        for (r, heard) in ledgerHeard.enumerated() {
            let receiver = receivers[r]
            group.addTask { await feed(receiver, heard, start: start, radioOffset: begin, samples: ledger) }
        }
    }
    try await local
    return PhaseResult(ledger: ledger.samples, sqlite: sqlite.samples, start: begin, end: seconds(),
                       cpu: processCPU() - cpu0, load: (load0, loadAverage()))
}

func describe(_ name: String, _ s: Samples, window: (Double, Double)) -> String {
    let rate = s.rate(from: window.0, to: window.1)
    return "\(name): \(s.count) ballots, \(String(format: "%.0f", rate)) ballots/s committed over the window, "
        + "latency p50 \(ms(s.percentile(0.5))), p99 \(ms(s.percentile(0.99))), max \(ms(s.percentile(1)))"
}

// Lecture: two questions a room, rooms starting within 10 s of each other.
var lectureLedger: [[Heard]] = []
for room in rooms {
    let offset = Double.random(in: 0..<10, using: &rng)
    lectureLedger.append(room.lecture(questions: [1, 2], length: options.lecture, rng: &rng).map { $0.later(by: offset) })
}
let lecture = try await phase(receivers, ledgerHeard: lectureLedger,
                              sqliteHeard: sqliteRoom.lecture(questions: [1, 2], length: options.lecture, rng: &rng))
// The window where every room is in its questions: from the last room's start to the first room's end.
let window = (lecture.start + 10, lecture.start + 2 * options.lecture)
print("\nlecture (\(Int(options.lecture)) s questions, two a room), load \(lecture.load.0) → \(lecture.load.1), "
      + "this process \(String(format: "%.2f", lecture.cpu / (lecture.end - lecture.start))) cores")
print("  " + describe("ledger, \(options.rooms) rooms", lecture.ledger, window: window))
print("  " + describe("SQLite, 1 room", lecture.sqlite, window: window))

// Burst: every room at once.
let burst = try await phase(receivers, ledgerHeard: rooms.map { $0.burst(question: 3, within: 1.5, length: 4, rng: &rng) },
                            sqliteHeard: sqliteRoom.burst(question: 3, within: 1.5, length: 4, rng: &rng))
print("\nburst (every room's voters heard within 1.5 s of one moment), load \(burst.load.0) → \(burst.load.1)")
for (name, s) in [("ledger, \(options.rooms) rooms", burst.ledger), ("SQLite, 1 room", burst.sqlite)] {
    let span = s.lastCommit - burst.start
    print("  \(name): \(s.count) ballots, the last committed \(String(format: "%.2f", span)) s after the first was heard "
          + "(\(String(format: "%.0f", Double(s.count) / span)) ballots/s), latency p50 \(ms(s.percentile(0.5))), "
          + "p99 \(ms(s.percentile(0.99))), max \(ms(s.percentile(1)))")
}

// Saturation: rounds of changes as fast as each writer commits them.
let saturation = SampleLog(), sqliteSaturation = SampleLog()
let satLoad0 = loadAverage()
let satStart = seconds()
let satEnd = clock.now.advanced(by: .milliseconds(Int64(options.saturation * 1000)))
async let sqliteRounds: Void = onThread {
    var round = 0
    while clock.now < satEnd {
        round += 1
        let sealed = sqliteRoom.round(question: 4, round)
        let handed = clock.now
        for (v, data) in sealed.enumerated() {
            try commitIfCounted(Room.report(voter: v, data: data, at: satStart + Double(round) * 0.2), handed: handed,
                                samples: sqliteSaturation)
        }
    }
}
await withTaskGroup(of: Void.self) { group in
    for (r, room) in rooms.enumerated() {
        let receiver = receivers[r]
        group.addTask {
            await withTaskGroup(of: Void.self) { inFlight in
                var round = 0, flying = 0
                while clock.now < satEnd {
                    round += 1
                    // Radio time 0.2 s a round: each voter sends well within the flood control's rate.
                    let reports = room.round(question: 4, round).enumerated().map {
                        Room.report(voter: $0.offset, data: $0.element, at: satStart + Double(round) * 0.2)
                    }
                    if flying == 3 { await inFlight.next(); flying -= 1 }
                    let (n, handed) = await hand(reports, to: receiver)
                    flying += 1
                    inFlight.addTask { await awaitCommit(of: n, handed: handed, by: receiver, samples: saturation) }
                }
            }
        }
    }
}
try await sqliteRounds
let satWindow = (satStart + 2, satStart + options.saturation)
print("\nsaturation (\(Int(options.saturation)) s of every voter changing, as fast as it commits; rate over its last "
      + "\(Int(options.saturation - 2)) s), load \(satLoad0) → \(loadAverage())")
print("  " + describe("ledger, \(options.rooms) rooms", saturation.samples, window: satWindow))
print("  " + describe("SQLite, 1 room", sqliteSaturation.samples, window: satWindow))

// MARK: check: every receiver shipped everything, and the ledger counted every voter once.

var problems: [String] = []
for (r, receiver) in receivers.enumerated() {
    let status = await receiver.finish()
    if status.journaled != 0 || status.databaseError != nil {
        problems.append("room \(r + 1): \(status.journaled) left in the journal, \(status.databaseError ?? "no database error")")
    }
    let counts = try admin.counts(poll: Int64(r + 1))
    for q: UInt8 in 1...4 {
        let voters = counts[q]?.values.reduce(0, +) ?? 0
        if voters != options.voters { problems.append("room \(r + 1) question \(q): \(voters) voters counted, not \(options.voters)") }
    }
}
let ratio = { (a: Double, b: Double) in String(format: "%.2f×", a / b) }
print("\nratios ledger (\(options.rooms) rooms) / SQLite (1 room): p99 latency, lecture "
      + ratio(lecture.ledger.percentile(0.99), lecture.sqlite.percentile(0.99)) + ", burst "
      + ratio(burst.ledger.percentile(0.99), burst.sqlite.percentile(0.99)) + "; saturation throughput "
      + ratio(saturation.samples.rate(from: satWindow.0, to: satWindow.1), sqliteSaturation.samples.rate(from: satWindow.0, to: satWindow.1)))
print(problems.isEmpty ? "check: every room's four questions counted \(options.voters) voters in the ledger; every journal empty"
                       : "CHECK FAILED:\n  " + problems.prefix(20).joined(separator: "\n  "))
print("load average \(loadAverage()) at the end")
if !problems.isEmpty {
    server.stop()   // exit skips the defers above
    try? FileManager.default.removeItem(atPath: directory)
    exit(1)
}
