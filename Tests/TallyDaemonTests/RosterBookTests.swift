import ClickerStore
import ClickerTally
import ClickerWire
import Foundation
import GRDB
import TallyDaemon
import XCTest

/// `clicker-tally roster import/replace/remove/list`: a change is stored whole or not at all, is
/// checked against the stored roster, and a roster a poll cannot use can still be listed and repaired.
final class RosterBookTests: XCTestCase {
    let codes = (0..<4).map { _ in DeviceKey.generate().enrollmentCode }

    func store() throws -> (ClickerStore, String) {
        let dir = NSTemporaryDirectory() + "clicker-roster-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return (try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal), dir + "/clicker.sqlite")
    }

    func roster(_ rows: [(String, String, Int)]) throws -> Roster {
        try Roster(entries: rows.map { RosterEntry(name: $0.0, studentID: $0.1, enrollment: codes[$0.2]) })
    }

    /// The reported bug: the same enrollment code imported under another student ID used to be
    /// stored, after which `roster list` and `--roster` failed for good.
    func testSameCodeUnderAnotherStudentIDIsRefusedAndTheRosterStaysUsable() throws {
        let (db, _) = try store()
        try RosterBook.save(try roster([("Ada", "s1", 0), ("Alan", "s2", 1)]), to: db)
        XCTAssertThrowsError(try RosterBook.save(try roster([("Grace", "s3", 2), ("Ada again", "s9", 0)]), to: db)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("s9") && text.contains("s1"), text)
        }
        let loaded = try XCTUnwrap(try RosterBook.load(from: db))
        XCTAssertEqual(loaded.entries.map(\.studentID), ["s1", "s2"], "nothing of the refused file was stored, not even Grace")
    }

    func testSameStudentIDWithAnotherCodeIsRefusedAndAnIdenticalRowIsKept() throws {
        let (db, _) = try store()
        try RosterBook.save(try roster([("Ada", "s1", 0)]), to: db)
        XCTAssertThrowsError(try RosterBook.save(try roster([("Ada", "s1", 1)]), to: db)) { error in
            XCTAssertEqual(error as? StoreError, .roster(.studentEnrolledWithAnotherCode(studentID: "s1")))
        }
        try RosterBook.save(try roster([("Ada Lovelace", "s1", 0), ("Alan", "s2", 1)]), to: db)
        XCTAssertEqual(try RosterBook.listing(db), ["s1\tAda Lovelace", "s2\tAlan"])
    }

    /// The store checks a change on its own too (a caller that skips `Roster`'s checks).
    func testTheStoreRefusesDuplicatesInsideOneChange() throws {
        let (db, _) = try store()
        let k = Data("code".utf8)
        XCTAssertThrowsError(try db.enroll([EnrolledStudent(studentId: "a", name: "A", enrollmentKey: k),
                                            EnrolledStudent(studentId: "b", name: "B", enrollmentKey: k)])) {
            XCTAssertEqual($0 as? StoreError, .roster(.repeatedCode(studentID: "b", other: "a")))
        }
        XCTAssertThrowsError(try db.enroll([EnrolledStudent(studentId: "a", name: "A", enrollmentKey: k),
                                            EnrolledStudent(studentId: "a", name: "A2", enrollmentKey: nil)])) {
            XCTAssertEqual($0 as? StoreError, .roster(.repeatedStudentID("a")))
        }
        XCTAssertEqual(try db.roster(), [])
    }

    func testDuplicatesInsideTheFileNameTheLine() throws {
        let csv = "name,student_id,enrollment_code\nAda,s1,\(codes[0])\nAlan,s2,\(codes[0])\n"
        XCTAssertThrowsError(try Roster(csv: csv)) { error in
            XCTAssertEqual((error as? RosterError)?.line, 3, "\(error)")
        }
    }

    func testReplaceIsAllOrNothing() throws {
        let (db, _) = try store()
        try RosterBook.save(try roster([("Ada", "s1", 0), ("Alan", "s2", 1)]), to: db)
        // Ada's code moves to a new ID: fine in a replacement, which starts from an empty roster.
        try RosterBook.save(try roster([("Ada", "a-1", 0), ("Grace", "s3", 2)]), to: db, replacing: true)
        XCTAssertEqual(try RosterBook.load(from: db)?.entries.map(\.studentID), ["a-1", "s3"])
        // A replacement that fails in the store leaves the roster as it was.
        XCTAssertThrowsError(try db.enroll([EnrolledStudent(studentId: "x", name: "X", enrollmentKey: Data([1])),
                                            EnrolledStudent(studentId: "x", name: "Y", enrollmentKey: Data([2]))],
                                           replacingAll: true))
        XCTAssertEqual(try RosterBook.load(from: db)?.entries.map(\.studentID), ["a-1", "s3"])
    }

    func testRemoveIsAllOrNothing() throws {
        let (db, _) = try store()
        try RosterBook.save(try roster([("Ada", "s1", 0), ("Alan", "s2", 1), ("Grace", "s3", 2)]), to: db)
        XCTAssertThrowsError(try RosterBook.remove(["s1", "nobody"], from: db)) {
            XCTAssertEqual($0 as? StoreError, .roster(.notEnrolled(["nobody"])))
        }
        XCTAssertEqual(try db.roster().count, 3)
        try RosterBook.remove(["s1", "s3"], from: db)
        XCTAssertEqual(try RosterBook.load(from: db)?.entries.map(\.studentID), ["s2"])
    }

    /// A database broken by an older version (two student IDs with one code): listing still works,
    /// loading names both students and the repair, and `roster remove` repairs it.
    func testABrokenStoredRosterIsListedExplainedAndRepaired() throws {
        let (db, path) = try store()
        try RosterBook.save(try roster([("Ada", "s1", 0)]), to: db)
        let raw = try DatabaseQueue(path: path)
        try raw.write { try $0.execute(sql: "INSERT INTO roster (student_id, name, enrollment_key) VALUES ('s9', 'Eve', ?)",
                                       arguments: [Data(codes[0].description.utf8)]) }
        XCTAssertEqual(try RosterBook.listing(db), ["s1\tAda", "s9\tEve"])
        XCTAssertThrowsError(try RosterBook.load(from: db)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("s1") && text.contains("s9") && text.contains("roster remove"), text)
        }
        try RosterBook.remove(["s9"], from: db)
        XCTAssertEqual(try RosterBook.load(from: db)?.entries.map(\.name), ["Ada"])
    }
}
