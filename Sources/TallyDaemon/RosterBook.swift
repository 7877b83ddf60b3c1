import ClickerStore
import ClickerTally
import ClickerWire
import Foundation
import TerminalView

/// The class list kept in the store, between `clicker-tally roster import` and a `--roster` poll.
/// Enrollment codes hold the students' roster keys: the store file is 0600 and they are never logged or exported.
public enum RosterBook {
    /// Enrolls every student of `roster` in one transaction (all or none), checked against the
    /// stored roster (``RosterConflict``); with `replacing`, the stored roster is replaced by it.
    public static func save(_ roster: Roster, to store: ClickerStore, replacing: Bool = false) throws {
        try store.enroll(roster.entries.map {
            EnrolledStudent(studentId: $0.studentID, name: $0.name, enrollmentKey: Data($0.enrollment.description.utf8))
        }, replacingAll: replacing)
    }

    /// Removes students by ID in one transaction; refused, removing none, if any is not enrolled.
    public static func remove(_ studentIDs: [String], from store: ClickerStore) throws {
        try store.unenroll(studentIDs: studentIDs)
    }

    /// The stored class list, or nil when none was imported. A stored roster that a roster poll
    /// cannot use (a missing or unreadable code, a code under two student IDs, left by an older
    /// version) is an error that names the students and the command that repairs it.
    public static func load(from store: ClickerStore) throws -> Roster? {
        let rows = try store.roster()
        guard !rows.isEmpty else { return nil }
        var entries: [RosterEntry] = []
        var byCode: [EnrollmentCode: String] = [:]
        for row in rows {
            let id = TerminalText.safe(row.studentId)
            guard let data = row.enrollmentKey else {
                throw PollError.storage("the stored enrollment code of student \(id) is missing: "
                                        + "`clicker-tally roster remove \(id)`, then import that student again")
            }
            let code: EnrollmentCode
            do { code = try EnrollmentCode(parsing: String(decoding: data, as: UTF8.self)) } catch {
                throw PollError.storage("the stored enrollment code of student \(id) is unusable (\(error)): "
                                        + "`clicker-tally roster remove \(id)`, then import that student again")
            }
            if let other = byCode[code] {
                throw PollError.storage("students \(TerminalText.safe(other)) and \(id) have the same enrollment code in the "
                                        + "stored roster: remove the wrong one with `clicker-tally roster remove STUDENT-ID`")
            }
            byCode[code] = row.studentId
            entries.append(RosterEntry(name: row.name, studentID: row.studentId, enrollment: code))
        }
        do { return try Roster(entries: entries) } catch {
            throw PollError.storage("the stored roster is unusable (\(error)): `clicker-tally roster replace FILE.csv` repairs it")
        }
    }

    /// The lines of `clicker-tally roster list`, by student ID: read from the stored rows as they
    /// are, so that a roster a poll cannot use can still be listed and repaired.
    public static func listing(_ store: ClickerStore) throws -> [String] {
        try store.roster().map { listing(studentID: $0.studentId, name: $0.name) }
    }

    /// One line of `clicker-tally roster list`: student ID, tab, name, with anything a terminal
    /// would act on (escape sequences, carriage returns, bidi overrides) neutralised.
    public static func listing(_ e: RosterEntry) -> String { listing(studentID: e.studentID, name: e.name) }

    static func listing(studentID: String, name: String) -> String {
        TerminalText.safe(studentID) + "\t" + TerminalText.safe(name)
    }
}
