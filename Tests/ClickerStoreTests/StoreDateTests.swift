@testable import ClickerStore
import Foundation
import GRDB
import XCTest

/// Dates are stored as seconds since 1970 in REAL columns, whichever way a row is written: raw SQL
/// (polls, ballots) or GRDB's record encoding (questions).
final class StoreDateTests: XCTestCase {
    let t0 = Date(timeIntervalSince1970: 1_790_000_000.125)

    /// `typeof` and value of `column` in the rows of `table`.
    func stored(_ path: String, _ table: String, _ column: String) throws -> [String] {
        try DatabaseQueue(path: path).read { db in
            try String.fetchAll(db, sql: "SELECT typeof(\(column)) || ' ' || \(column) FROM \(table) WHERE \(column) IS NOT NULL")
        }
    }

    func testEveryDateIsStoredAsSecondsSince1970() throws {
        let path = try makeTempDir(self) + "/db.sqlite"
        let store = try ClickerStore(path: path)
        let poll = try store.createPoll(voteID: Data([1, 2]), joinCode: "1", mode: .roster, title: nil, at: t0)   // roster: a closed question can reopen
        try store.openQuestion(poll: poll.id, number: 1, at: t0)
        try store.openQuestion(poll: poll.id, number: 2, at: t0)
        try store.record(BallotRecord(poll: poll.id, question: 2, voter: voterID(1), answer: .choice(1), sequence: 1,
                                      address: "", firstHeard: t0, lastHeard: t0, gattVerified: false))
        try store.closeQuestion(poll: poll.id, number: 1, at: t0)
        try store.openQuestion(poll: poll.id, number: 1, at: t0.addingTimeInterval(5))   // reopened: an update
        try store.closeQuestion(poll: poll.id, number: 1, at: t0)
        let seconds = "real \(t0.timeIntervalSince1970)"
        for (table, column) in [("poll", "created_at"), ("question", "opened_at"), ("question", "closed_at"),
                                ("ballot", "first_heard"), ("ballot", "last_heard")] {
            let values = try stored(path, table, column)
            XCTAssertFalse(values.isEmpty, "\(table).\(column)")
            XCTAssertEqual(Set(values), [seconds], "\(table).\(column)")
        }
        XCTAssertEqual(try store.questions(poll: poll.id).first { $0.number == 1 }?.openedAt, t0, "a reopened question keeps its first opening")
    }

    /// A database in which GRDB stored question dates as text ("yyyy-MM-dd HH:mm:ss.SSS", UTC), as it
    /// did before the records declared their date strategies: the migration turns them into seconds.
    func testTextDatesBecomeSeconds() throws {
        let path = try makeTempDir(self) + "/db.sqlite"
        do {
            let queue = try DatabaseQueue(path: path)
            try ClickerStore.migrator.migrate(queue, upTo: "sealed-answers")
            try queue.write { db in
                try db.execute(sql: "INSERT INTO poll (id, vote_id, join_code, mode, created_at) VALUES (1, x'0102', 'a', 'anonymous', 1795831700.5)")
                try db.execute(sql: "INSERT INTO question (poll_id, number, state, opened_at, closed_at) VALUES (1, 1, 'closed', '2026-11-28 02:09:11.221', '2026-11-28 02:10:00.000'), (1, 2, 'open', '2026-11-28 02:10:01.500', NULL)")
            }
        }
        let store = try ClickerStore(path: path)
        let opened = try stored(path, "question", "opened_at")
        XCTAssertEqual(opened.map { $0.split(separator: " ")[0] }, ["real", "real"])
        let questions = try store.questions(poll: 1)
        let q1 = try XCTUnwrap(questions.first { $0.number == 1 })
        XCTAssertEqual(q1.openedAt.timeIntervalSince1970, 1_795_831_751.221, accuracy: 0.0005)
        XCTAssertEqual(try XCTUnwrap(q1.closedAt).timeIntervalSince1970, 1_795_831_800, accuracy: 0.0005)
        XCTAssertEqual(try XCTUnwrap(questions.first { $0.number == 2 }).openedAt.timeIntervalSince1970, 1_795_831_801.5, accuracy: 0.0005)
        XCTAssertEqual(try stored(path, "poll", "created_at"), ["real 1795831700.5"], "seconds stay as they are")
    }
}
