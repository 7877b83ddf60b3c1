@testable import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import GRDB
import TallyDaemon
import XCTest

/// One row of the open poll that cannot be read (an answer no version writes): resuming that poll,
/// or starting a new one (which closes it), is refused with a message that names the way out.
final class UndecodableRowTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func testAnUnreadableRowOfTheOpenPollIsRefusedNamingTheWayOut() async throws {
        let dir = NSTemporaryDirectory() + "clicker-undecodable-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let db = try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
        let first = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: db)
        for v in 1...3 as ClosedRange<UInt32> { await first.ingest(sealedReport(code, voter: v, answer: .choice(1))) }
        XCTAssertEqual(try db.ballots(poll: 1).count, 3)
        try await db.pool.write { try $0.execute(sql: "UPDATE ballot SET answer = -7 WHERE voter = (SELECT MIN(voter) FROM ballot)") }
        XCTAssertThrowsError(try db.ballots(poll: 1), "the row is unreadable")

        XCTAssertThrowsError(try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: db,
                                                start: .resume(maxAge: .seconds(3600), stated: ResumeFlags()))) { error in
            XCTAssertTrue("\(error)".contains("--db"), "\(error)")
            XCTAssertTrue("\(error)".contains("leave out --resume"), "\(error)")
        }
        // A new poll closes the open one, whose closing reads its rows: refused, naming the way out.
        let next = try PollController.unusedJoinCode(store: db)
        let before = try await rows(db)
        XCTAssertThrowsError(try PollController(options: PollOptions(joinCode: next, confirmByGATT: false), store: db)) { error in
            XCTAssertTrue("\(error)".contains("the open poll 1 cannot be closed"), "\(error)")
            XCTAssertTrue("\(error)".contains("--db NEW-FILE"), "\(error)")
        }
        // Nothing was written: the poll is still open, alone, and its rows (the damaged one too) are as they were.
        XCTAssertEqual(try db.polls().map(\.id), [1])
        XCTAssertEqual(try db.openPollID(), 1)
        let after = try await rows(db)
        XCTAssertEqual(after, before)
    }

    /// Closing a roster poll reads none of its ballots (they are kept, not sealed into totals): with
    /// an unreadable row in it, resuming it is refused naming `--db`, but a new poll starts, and the
    /// damaged row and the others are kept as they were, for recovery.
    func testAnUnreadableRowOfAnOpenRosterPollDoesNotHoldUpANewPollAndIsKept() async throws {
        let dir = NSTemporaryDirectory() + "clicker-undecodable-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let db = try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
        let keys = (0..<3).map { _ in DeviceKey.generate() }
        let roster = try Roster(entries: keys.enumerated().map {
            RosterEntry(name: "Student \($0.offset)", studentID: "s\($0.offset)", enrollment: $0.element.enrollmentCode)
        })
        func vote(_ c: PollController, _ secret: PollSecret, _ student: Int) async {
            let sealer = BallotSealer(secret: secret, deviceKey: keys[student], mode: .roster)
            await c.ingest(AdvertisementReport(address: DeviceAddress(rawValue: 0xD000 + UInt64(student)), rssi: nil,
                                               companyID: BallotFormat.companyID,
                                               data: sealer.advertisement(question: 1, sequence: 1, answer: .choice(1)),
                                               timestamp: RadioInstant(nanoseconds: UInt64(student + 1) * 1_000_000_000)))
        }
        let first = try PollController(options: PollOptions(joinCode: code, roster: roster, confirmByGATT: false), store: db)
        let secret = pollSecret(code)
        for s in 0..<3 { await vote(first, secret, s) }
        XCTAssertEqual(try db.ballots(poll: 1).count, 3)
        try await db.pool.write { try $0.execute(sql: "UPDATE ballot SET answer = -7 WHERE voter = (SELECT MIN(voter) FROM ballot)") }
        XCTAssertThrowsError(try db.ballots(poll: 1), "the row is unreadable")
        let damaged = try await rows(db)

        XCTAssertThrowsError(try PollController(options: PollOptions(joinCode: code, roster: roster, confirmByGATT: false), store: db,
                                                start: .resume(maxAge: .seconds(3600), stated: ResumeFlags()))) { error in
            XCTAssertTrue("\(error)".contains("--db"), "\(error)")
        }
        let next = try PollController.unusedJoinCode(store: db)
        let second = try PollController(options: PollOptions(joinCode: next, roster: roster, confirmByGATT: false), store: db)
        XCTAssertEqual(try db.polls().map(\.id), [1, 2])
        XCTAssertEqual(try db.openPollID(), 2)
        let kept = try await rows(db)
        XCTAssertEqual(kept, damaged, "the damaged poll's rows are kept as they were")
        await vote(second, pollSecret(next), 0)
        XCTAssertEqual(try db.ballots(poll: 2).count, 1, "the new poll counts")
        let stillKept = try await rows(db)
        XCTAssertEqual(stillKept, damaged)
    }

    /// Poll 1's ballot rows as stored, undecoded.
    func rows(_ db: ClickerStore) async throws -> [Row] {
        try await db.pool.read { try Row.fetchAll($0, sql: "SELECT * FROM ballot WHERE poll_id = 1 ORDER BY voter, question, sequence") }
    }
}
