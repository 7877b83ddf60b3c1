@testable import ClickerStore
import ClickerWire
import Foundation
import GRDB
import XCTest

/// Anonymous polls keep per-voter rows only while a question is open, and never an address; the
/// summary counts by the poll's rule; the v2 migration cleans up databases written before.
final class StoreSealTests: XCTestCase {
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    func ballot(_ poll: Int64, q: Int, voter: UInt32, answer: Int, seq: UInt32) -> BallotRecord {
        BallotRecord(poll: poll, question: q, voter: Data([0, UInt8(voter >> 24), UInt8((voter >> 16) & 0xFF),
                                                           UInt8((voter >> 8) & 0xFF), UInt8(voter & 0xFF)]),
                     answer: .choice(UInt8(answer)), sequence: seq, address: String(format: "AA:BB:CC:%02X:%02X:%02X", voter >> 16 & 0xFF,
                                                                    voter >> 8 & 0xFF, voter & 0xFF),
                     firstHeard: t0, lastHeard: t0, gattVerified: voter % 3 == 0)
    }

    func voters() -> [UInt32] { (UInt32(1)...40).map { 0x7A11_0000 | $0 &* 613 } }

    func fileBytes(_ path: String) throws -> Data {
        var all = Data()
        for p in [path, path + "-wal", path + "-shm"] where FileManager.default.fileExists(atPath: p) {
            all += try Data(contentsOf: URL(fileURLWithPath: p))
        }
        return all
    }

    func testClosingAnAnonymousQuestionKeepsOnlyItsTotals() throws {
        let path = try makeTempDir(self) + "/db.sqlite"
        let store = try ClickerStore(path: path)
        let poll = try store.createPoll(voteID: Data([1, 2]), joinCode: "x", mode: .anonymous, at: t0)
        try store.openQuestion(poll: poll.id, number: 1, at: t0)
        var bs = voters().map { ballot(poll.id, q: 1, voter: $0, answer: Int($0 % 4), seq: 1) }
        bs += voters().prefix(5).map { ballot(poll.id, q: 1, voter: $0, answer: 3, seq: 2) }
        try store.record(bs)
        XCTAssertTrue(try store.ballots(poll: poll.id).allSatisfy { $0.address.isEmpty }, "no address, even while open")
        let before = try store.summary(poll: poll.id)
        try store.closeQuestion(poll: poll.id, number: 1, at: t0.addingTimeInterval(60))

        XCTAssertEqual(try store.ballots(poll: poll.id), [])
        XCTAssertEqual(try store.summary(poll: poll.id).map(\.counts), before.map(\.counts))
        XCTAssertEqual(try store.summary(poll: poll.id).map(\.voters), [40])
        XCTAssertEqual(try store.summary(poll: poll.id).map(\.changes), before.map(\.changes))
        XCTAssertEqual(try store.summary(poll: poll.id).map(\.gattVerified), before.map(\.gattVerified))
        XCTAssertThrowsError(try store.openQuestion(poll: poll.id, number: 1)) {
            XCTAssertEqual($0 as? StoreError, .sealedQuestion(poll: poll.id, number: 1))
        }
        try store.record(ballot(poll.id, q: 1, voter: 99, answer: 0, seq: 9))
        XCTAssertEqual(try store.ballots(poll: poll.id), [], "a sealed question takes no more rows")
        let bytes = try fileBytes(path)
        for v in voters() {
            let id = Data([UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)])
            XCTAssertNil(bytes.range(of: id), String(format: "voter %08x still in the database files", v))
        }
        XCTAssertNil(bytes.range(of: Data("AA:BB:CC".utf8)), "an address is in the database files")
        XCTAssertEqual(try store.integrityCheck(), ["ok"])
    }

    func testRosterPollsKeepTheirRowsAndAddresses() throws {
        let store = try ClickerStore(path: try makeTempDir(self) + "/db.sqlite")
        let poll = try store.createPoll(voteID: Data([1, 2]), joinCode: "x", mode: .roster, at: t0)
        try store.openQuestion(poll: poll.id, number: 1, at: t0)
        let bs = voters().map { ballot(poll.id, q: 1, voter: $0, answer: 1, seq: 1) }
        try store.record(bs)
        try store.closePoll(poll.id)
        XCTAssertEqual(Set(try store.ballots(poll: poll.id)), Set(bs))
    }

    func testClosingAnAnonymousPollSealsItsOpenQuestion() throws {
        let store = try ClickerStore(path: try makeTempDir(self) + "/db.sqlite")
        let poll = try store.createPoll(voteID: Data([1, 2]), joinCode: "x", mode: .anonymous, at: t0)
        try store.openQuestion(poll: poll.id, number: 1, at: t0)
        try store.record(voters().map { ballot(poll.id, q: 1, voter: $0, answer: 2, seq: 1) })
        try store.closePoll(poll.id)
        XCTAssertEqual(try store.ballots(poll: poll.id), [])
        XCTAssertEqual(try store.summary(poll: poll.id).first?.counts, [0, 0, 40, 0])
    }

    /// First response only: a voter's lowest sequence counts (the exported summary used to count the highest).
    func testSummaryCountsByThePollsRule() throws {
        let store = try ClickerStore(path: try makeTempDir(self) + "/db.sqlite")
        for rule in CountingRule.allCases {
            let poll = try store.createPoll(voteID: Data([1]), joinCode: rule.rawValue, mode: .roster, rule: rule, at: t0)
            try store.openQuestion(poll: poll.id, number: 1, at: t0)
            try store.record([ballot(poll.id, q: 1, voter: 1, answer: 2, seq: 4), ballot(poll.id, q: 1, voter: 1, answer: 0, seq: 3),
                              ballot(poll.id, q: 1, voter: 2, answer: 1, seq: 1)])
            let s = try XCTUnwrap(store.summary(poll: poll.id).first)
            XCTAssertEqual(s.counts, rule == .latestWins ? [0, 1, 1, 0] : [1, 1, 0, 0], "\(rule)")
            // Under latest-wins the voter went from A (3) to C (4); under first-response-only the
            // first response (3) stands and the later one is no change.
            XCTAssertEqual(s.changes, rule == .latestWins ? 1 : 0, "\(rule)")
            XCTAssertEqual(try store.poll(poll.id)?.rule, rule)
        }
    }

    /// A database written by the previous version: the unused join_secret column goes, anonymous
    /// polls lose their addresses and the per-voter rows of closed questions, keeping their totals.
    func testMigrationFromVersion1() throws {
        let path = try makeTempDir(self) + "/db.sqlite"
        do {
            let queue = try DatabaseQueue(path: path)
            try ClickerStore.migrator.migrate(queue, upTo: "v1")
            try queue.write { db in
                try db.execute(sql: "INSERT INTO poll (id, vote_id, join_code, join_secret, mode, created_at) VALUES (1, x'0102', 'a', x'4243', 'anonymous', 0), (2, x'0103', 'b', NULL, 'roster', 0)")
                try db.execute(sql: "INSERT INTO question VALUES (1, 1, 'closed', 0, 1), (1, 2, 'open', 2, NULL), (2, 1, 'closed', 0, 1)")
                for (i, v) in voters().enumerated() {
                    for (poll, q) in [(1, 1), (1, 2), (2, 1)] {
                        try db.execute(sql: "INSERT INTO ballot VALUES (?, ?, ?, 1, ?, ?, 0, 0, 0)",
                                       arguments: [poll, q, Data([0]) + withUnsafeBytes(of: v.bigEndian) { Data($0) },
                                                   i % 4, "AA:BB:CC:00:00:\(i)"])
                    }
                }
            }
        }
        let store = try ClickerStore(path: path)
        let columns = try DatabaseQueue(path: path).read { db in try db.columns(in: "poll").map(\.name) }
        XCTAssertFalse(columns.contains("join_secret"))
        XCTAssertEqual(try store.ballots(poll: 1, question: 1), [], "closed anonymous question sealed")
        XCTAssertEqual(try store.summary(poll: 1).first?.counts, [10, 10, 10, 10])
        let open = try store.ballots(poll: 1, question: 2)
        XCTAssertEqual(open.count, 40, "the open question keeps its rows until it closes")
        XCTAssertTrue(open.allSatisfy { $0.address.isEmpty })
        XCTAssertEqual(try store.ballots(poll: 2).count, 40)
        XCTAssertTrue(try store.ballots(poll: 2).allSatisfy { $0.address.hasPrefix("AA:BB:CC") }, "roster rows untouched")
        // Version 1 stored a single choice as its bare option index; it reads back as that choice.
        XCTAssertEqual(Set(try store.ballots(poll: 2).map(\.answer)), [.choice(0), .choice(1), .choice(2), .choice(3)])
        XCTAssertEqual(try store.poll(1)?.rule, .latestWins)
        // Questions from before definitions were kept read back without one; a new question keeps its own.
        XCTAssertEqual(try store.questions(poll: 1).map(\.definition), [nil, nil])
        XCTAssertEqual(try store.openQuestion(poll: 1, number: 3, definition: .choice(options: 6)).definition, .choice(options: 6))
        XCTAssertEqual(try store.questions(poll: 1).map(\.definition), [nil, nil, .choice(options: 6)])
        try store.closePoll(2)
        XCTAssertEqual(try store.resume()?.questions.last?.definition, .choice(options: 6))
    }

    /// Every part of a definition comes back as stored, correct answers in the ballots' encoding.
    func testAFullDefinitionRoundTrips() throws {
        let store = try ClickerStore(path: try makeTempDir(self) + "/db.sqlite")
        let poll = try store.createPoll(voteID: Data([1, 2]), joinCode: "a", mode: .roster, title: nil)
        let numeric = QuestionDefinition(kinds: [.numeric], options: 1, title: "g in m/s²",
                                         numeric: .init(decimals: 2, lowest: -500, highest: 2000),
                                         correct: [.numeric(981)], points: 2.5)
        let multi = QuestionDefinition(kinds: [.multiSelect], options: 3, optionTexts: ["He", "Fe", "Ne"],
                                       title: "Noble gases", correct: [.multiSelect(0b101)], points: 1)
        try store.openQuestion(poll: poll.id, number: 1, definition: numeric)
        try store.openQuestion(poll: poll.id, number: 2, definition: multi)
        try store.openQuestion(poll: poll.id, number: 3, definition: .choice(options: 4))
        XCTAssertEqual(try store.questions(poll: poll.id).map(\.definition), [numeric, multi, .choice(options: 4)])
        let stored = try DatabaseQueue(path: store.path).read { db in
            try String.fetchOne(db, sql: "SELECT correct_answers FROM question WHERE number = 2")
        }
        XCTAssertEqual(stored, "[\((0x03 << 16) | 0b101)]", "the answer as a ballot stores it")
    }
}
