@testable import ClickerStore
import Foundation
import GRDB
import Synchronization
import XCTest

/// Enrolling n students reads the stored roster once, not once or twice per student (a query per
/// student on an unindexed column made 8,000 rows take 19 s): linear in n. The RosterImport
/// benchmark gives the time of 100,000.
final class RosterEnrollTests: XCTestCase {
    func students(_ range: Range<Int>) -> [EnrolledStudent] {
        range.map { EnrolledStudent(studentId: "s\($0)", name: "Student \($0)", enrollmentKey: Data("CE2-\($0)".utf8)) }
    }

    func testEnrollingReadsTheStoredRosterOnceInOneTransaction() throws {
        let store = try ClickerStore(path: try makeTempDir(self) + "/clicker.sqlite", durability: .normal)
        try store.enroll(students(0..<100))
        let statements = Mutex<[String]>([])
        try store.pool.writeWithoutTransaction { db in
            db.trace(options: .statement) { event in statements.withLock { $0.append(event.description) } }
        }
        try store.enroll(students(50..<2_050))
        let sql = statements.withLock { $0 }
        let selects = sql.filter { $0.uppercased().hasPrefix("SELECT") }
        XCTAssertLessThanOrEqual(selects.count, 2, "reads per student: \(selects.prefix(3))")
        XCTAssertEqual(sql.filter { $0.uppercased().hasPrefix("BEGIN") }.count, 1, "one transaction")
        XCTAssertEqual(try store.roster().count, 2_050)
        // The checks still hold: a code enrolled under another ID, an ID with another code.
        XCTAssertThrowsError(try store.enroll([EnrolledStudent(studentId: "new", name: "N", enrollmentKey: Data("CE2-7".utf8))]))
        XCTAssertThrowsError(try store.enroll([EnrolledStudent(studentId: "s7", name: "N", enrollmentKey: Data("CE2-x".utf8))]))
        XCTAssertNoThrow(try store.enroll([EnrolledStudent(studentId: "s7", name: "Renamed", enrollmentKey: Data("CE2-7".utf8))]))
        XCTAssertEqual(try store.roster().first { $0.studentId == "s7" }?.name, "Renamed")
    }
}
