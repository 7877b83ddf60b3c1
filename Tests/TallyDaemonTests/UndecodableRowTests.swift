@testable import ClickerStore
import ClickerTally
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
        XCTAssertThrowsError(try PollController(options: PollOptions(joinCode: next, confirmByGATT: false), store: db)) { error in
            XCTAssertTrue("\(error)".contains("the open poll 1 cannot be closed"), "\(error)")
            XCTAssertTrue("\(error)".contains("--db NEW-FILE"), "\(error)")
        }
    }
}
