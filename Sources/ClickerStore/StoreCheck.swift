import Foundation
import GRDB

/// The check a database file passes before a store opens it for writing: SQLite's `quick_check`
/// (every page of every table and index read, their structure checked; not index contents against
/// the tables), through a read-only connection, so that a damaged file is refused before anything
/// is written into it. The time it takes grows with the file: docs/PERFORMANCE.md gives a
/// lecture's figure.
extension ClickerStore {
    /// At most this many problems are listed in the error.
    static let quickCheckProblems = 5

    /// Refuses the existing, non-empty file at `path` (``StoreError/damaged(path:problems:)``) when
    /// SQLite finds it damaged or not a database. A new or empty file passes unread.
    static func quickCheck(_ path: String) throws {
        var st = stat()
        guard stat(path, &st) == 0, st.st_size > 0 else { return }
        var config = Configuration()
        config.readonly = true
        let problems: [String]
        do {
            let queue = try DatabaseQueue(path: path, configuration: config)
            problems = try queue.read { db in
                try String.fetchAll(db, sql: "PRAGMA quick_check(\(quickCheckProblems))")
            }
            try queue.close()
        } catch let e as DatabaseError where e.resultCode == .SQLITE_CORRUPT || e.resultCode == .SQLITE_NOTADB {
            throw StoreError.damaged(path: path, problems: [e.message ?? "\(e.resultCode)"])
        }
        guard problems == ["ok"] else { throw StoreError.damaged(path: path, problems: problems) }
    }
}
