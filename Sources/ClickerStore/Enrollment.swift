import Foundation
import GRDB

/// An enrolled student as the store keeps them (the `roster` table, one row per student ID).
public struct EnrolledStudent: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "roster"
    public static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    public static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    public var studentId: String
    public var name: String
    /// The enrollment code (its text, UTF-8), opaque to the store. Two students never share one.
    public var enrollmentKey: Data?

    public init(studentId: String, name: String, enrollmentKey: Data?) {
        self.studentId = studentId
        self.name = name
        self.enrollmentKey = enrollmentKey
    }
}

/// Why a roster change was refused. Nothing of the change was stored.
public enum RosterConflict: Error, Sendable, Hashable, CustomStringConvertible {
    /// The change lists one student ID twice.
    case repeatedStudentID(String)
    /// The change gives one enrollment code to two student IDs.
    case repeatedCode(studentID: String, other: String)
    /// The student ID is enrolled with another enrollment code.
    case studentEnrolledWithAnotherCode(studentID: String)
    /// The enrollment code is enrolled under another student ID.
    case codeEnrolledUnderAnotherID(studentID: String, enrolled: String)
    /// Student IDs to remove that are not enrolled.
    case notEnrolled([String])

    public var description: String {
        switch self {
        case .repeatedStudentID(let id): "student ID \(id) appears twice"
        case let .repeatedCode(id, other): "students \(other) and \(id) have the same enrollment code"
        case .studentEnrolledWithAnotherCode(let id):
            "student \(id) is already enrolled with another enrollment code (to change it: `clicker-tally roster remove \(id)`, "
                + "then import again, or `clicker-tally roster replace` with the whole class list)"
        case let .codeEnrolledUnderAnotherID(id, enrolled):
            "the enrollment code of student \(id) is already enrolled for student \(enrolled): one device votes for one "
                + "student (if \(enrolled) is wrong: `clicker-tally roster remove \(enrolled)`, then import again)"
        case .notEnrolled(let ids): "not enrolled: " + ids.joined(separator: ", ") + " (see `clicker-tally roster list`)"
        }
    }
}

extension ClickerStore {
    /// The roster, by student ID.
    public func roster() throws -> [EnrolledStudent] {
        try pool.read { db in try EnrolledStudent.order(Column("student_id")).fetchAll(db) }
    }

    /// Enrolls `students` in one transaction: all of them or, on a conflict, none.
    ///
    /// A student ID already enrolled with the same enrollment code is kept (its name updated). Refused
    /// (``StoreError/roster(_:)``): a student ID or an enrollment code listed twice, a student ID
    /// enrolled with another code, a code enrolled under another student ID. With `replacingAll`
    /// the stored roster is emptied first, in the same transaction.
    public func enroll(_ students: [EnrolledStudent], replacingAll: Bool = false) throws {
        try pool.write { db in
            if replacingAll { try EnrolledStudent.deleteAll(db) }
            // The stored roster is read once (two lookups by table), so that checking each student
            // takes constant time: enrolling n students is linear, 100,000 in seconds.
            var storedKeys: [String: Data?] = [:]
            var storedIDs: [Data: String] = [:]
            for row in try EnrolledStudent.fetchAll(db) {
                storedKeys[row.studentId] = .some(row.enrollmentKey)
                if let key = row.enrollmentKey { storedIDs[key] = row.studentId }
            }
            var ids: Set<String> = []
            var codes: [Data: String] = [:]
            // Prepared once for the whole list: a record's insert would encode it and build its
            // statement again for every student (more than half of a 100,000-row import's time).
            let insert = try db.cachedStatement(sql: "INSERT INTO roster (student_id, name, enrollment_key) VALUES (?, ?, ?)")
            let update = try db.cachedStatement(sql: "UPDATE roster SET name = ?, enrollment_key = ? WHERE student_id = ?")
            for s in students {
                guard ids.insert(s.studentId).inserted else { throw StoreError.roster(.repeatedStudentID(s.studentId)) }
                if let key = s.enrollmentKey {
                    if let other = codes[key] { throw StoreError.roster(.repeatedCode(studentID: s.studentId, other: other)) }
                    codes[key] = s.studentId
                    if let enrolled = storedIDs[key], enrolled != s.studentId {
                        throw StoreError.roster(.codeEnrolledUnderAnotherID(studentID: s.studentId, enrolled: enrolled))
                    }
                }
                if let stored = storedKeys[s.studentId] {
                    guard stored == s.enrollmentKey else { throw StoreError.roster(.studentEnrolledWithAnotherCode(studentID: s.studentId)) }
                    try update.execute(arguments: [s.name, s.enrollmentKey, s.studentId])
                } else {
                    try insert.execute(arguments: [s.studentId, s.name, s.enrollmentKey])
                }
            }
        }
    }

    /// Removes the students with these IDs, in one transaction; refused, removing none, when any
    /// of them is not enrolled.
    public func unenroll(studentIDs: [String]) throws {
        try pool.write { db in
            let missing = try studentIDs.filter { try !EnrolledStudent.exists(db, key: $0) }
            guard missing.isEmpty else { throw StoreError.roster(.notEnrolled(missing)) }
            _ = try EnrolledStudent.deleteAll(db, keys: studentIDs)
        }
    }
}
