import ClickerStore
import ClickerTally
import ClickerWire
import Foundation
import TerminalView

/// The class list kept in the store, between `clicker-tally roster import` and a `--roster` poll.
/// Enrollment codes hold the students' roster keys: the store file is 0600 and they are never logged or exported.
public enum RosterBook {
    /// Adds or replaces (by student ID) every student of `roster`.
    public static func save(_ roster: Roster, to store: ClickerStore) throws {
        for e in roster.entries {
            try store.upsertRoster(StoredRosterEntry(name: e.name, studentID: e.studentID,
                                                     enrollmentKey: Data(e.enrollment.description.utf8)))
        }
    }

    /// The stored class list, or nil when none was imported.
    public static func load(from store: ClickerStore) throws -> Roster? {
        let rows = try store.roster()
        guard !rows.isEmpty else { return nil }
        var entries: [ClickerTally.RosterEntry] = []
        for row in rows {
            guard let data = row.enrollmentKey else {
                throw PollError.storage("the stored enrollment code of student \(row.studentID) is missing; import the roster again")
            }
            let code: EnrollmentCode
            do { code = try EnrollmentCode(parsing: String(decoding: data, as: UTF8.self)) } catch {
                throw PollError.storage("the stored enrollment code of student \(row.studentID) is unusable (\(error)); import the roster again")
            }
            entries.append(ClickerTally.RosterEntry(name: row.name, studentID: row.studentID, enrollment: code))
        }
        return try Roster(entries: entries)
    }

    /// One line of `clicker-tally roster list`: student ID, tab, name, with anything a terminal
    /// would act on (escape sequences, carriage returns, bidi overrides) neutralised.
    public static func listing(_ e: ClickerTally.RosterEntry) -> String {
        TerminalText.safe(e.studentID) + "\t" + TerminalText.safe(e.name)
    }
}
