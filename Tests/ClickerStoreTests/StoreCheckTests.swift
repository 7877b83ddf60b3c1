@testable import ClickerStore
import ClickerWire
import Foundation
import GRDB
import XCTest

/// A damaged database is refused at open (SQLite's quick check), with a message that names --db,
/// and nothing is written into it; the check finds damage in pages a start never reads.
final class StoreCheckTests: XCTestCase {
    /// A lecture's store: `voters` ballots on each of `questions` questions of one roster poll.
    func lecture(at path: String, voters: Int, questions: Int) throws {
        let store = try ClickerStore(path: path, durability: .normal)
        let poll = try store.createPoll(voteID: Data([0, 1]), joinCode: "4821-K7QXM-3PF9A", mode: .roster)
        for q in 1...questions {
            try store.openQuestion(poll: poll.id, number: q)
            var ballots: [BallotRecord] = []
            let now = Date()
            for v in 0..<voters {
                let answer = Answer.choice(UInt8(v % 4))
                let sequence = UInt32(v % 7 + 1)
                ballots.append(BallotRecord(poll: poll.id, question: q, voter: voterID(UInt64(v)), answer: answer,
                                            sequence: sequence, address: "C0:00:00:00:00:01", firstHeard: now,
                                            lastHeard: now, gattVerified: false))
            }
            try store.record(ballots)
        }
        try store.checkpoint()
    }

    func testADamagedPageIsRefusedAtOpenAndTheFileIsLeftAsItWas() throws {
        let path = try makeTempDir(self) + "/clicker.sqlite"
        try lecture(at: path, voters: 300, questions: 3)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let size = Int(bytes[16]) << 8 | Int(bytes[17])
        let pageSize = size == 1 ? 65536 : size
        XCTAssertGreaterThan(bytes.count / pageSize, 4)
        // The next to last page (ballots of the last question, never read by a start) becomes garbage.
        let victim = (bytes.count / pageSize - 2) * pageSize
        bytes.replaceSubrange(victim..<(victim + pageSize), with: [UInt8](repeating: 0xA5, count: pageSize))
        try bytes.write(to: URL(fileURLWithPath: path))
        for exclusive in [true, false] {
            XCTAssertThrowsError(try ClickerStore(path: path, exclusive: exclusive)) { error in
                guard case .damaged(let p, let problems)? = error as? StoreError else { return XCTFail("\(error)") }
                XCTAssertEqual(p, path)
                XCTAssertFalse(problems.isEmpty)
                XCTAssertTrue("\(error)".contains("--db"), "\(error)")
                XCTAssertTrue("\(error)".contains("nothing was written"), "\(error)")
            }
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), bytes, "the damaged file was written into")
        XCTAssertFalse(FileManager.default.fileExists(atPath: path + "-wal") &&
                       ((try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0) > 0)
    }

    func testAFileThatIsNotADatabaseIsRefusedUnwritten() throws {
        let path = try makeTempDir(self) + "/clicker.sqlite"
        let junk = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try junk.write(to: URL(fileURLWithPath: path))
        XCTAssertThrowsError(try ClickerStore(path: path)) { error in
            guard case .damaged? = error as? StoreError else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), junk)
    }

    /// A sound lecture's store (and a new, empty file) opens as before.
    func testASoundStoreOpens() throws {
        let dir = try makeTempDir(self)
        try lecture(at: dir + "/clicker.sqlite", voters: 30, questions: 3)
        XCTAssertEqual(try ClickerStore(path: dir + "/clicker.sqlite").ballots(poll: 1).count, 90)
        _ = FileManager.default.createFile(atPath: dir + "/empty.sqlite", contents: Data())
        XCTAssertNoThrow(try ClickerStore(path: dir + "/empty.sqlite"))
    }
}
