import ClickerWire

/// One enrolled student.
public struct RosterEntry: Sendable, Hashable {
    public var name: String
    public var studentID: String
    public var enrollment: EnrollmentCode

    public init(name: String, studentID: String, enrollment: EnrollmentCode) {
        self.name = name
        self.studentID = studentID
        self.enrollment = enrollment
    }
}

/// The class list of a roster poll, read from CSV `name,student_id,enrollment_code`.
public struct Roster: Sendable, Hashable {
    public private(set) var entries: [RosterEntry]

    /// The CSV header (optional in files).
    public static let header = ["name", "student_id", "enrollment_code"]

    /// From entries; errors name the 1-based position as the line.
    public init(entries: [RosterEntry]) throws(RosterError) {
        self.entries = []
        var seen = Seen()
        for (i, e) in entries.enumerated() {
            if let p = seen.problem(adding: e, line: i + 1) { throw RosterError(line: i + 1, problem: p) }
            self.entries.append(e)
        }
    }

    /// The student IDs and enrollment codes read so far, with the line of each: checking a new
    /// entry takes constant time, so a campus course of 100,000 students reads in linear time.
    struct Seen {
        var studentIDs: [String: Int] = [:]
        var codes: [EnrollmentCode: String] = [:]

        /// What is wrong with adding `e` (on `line`); nil: it is added.
        mutating func problem(adding e: RosterEntry, line: Int) -> RosterError.Problem? {
            if e.name.isBlank { return .emptyName }
            if e.studentID.isBlank { return .emptyStudentID }
            if e.name.unicodeScalars.contains("\u{0}") { return .nulByte(field: "name") }
            if e.studentID.unicodeScalars.contains("\u{0}") { return .nulByte(field: "student ID") }
            if let first = studentIDs[e.studentID] { return .duplicateStudentID(e.studentID, firstSeenAt: first) }
            if let name = codes[e.enrollment] { return .duplicateEnrollmentCode(name: name) }
            studentIDs[e.studentID] = line
            codes[e.enrollment] = e.name
            return nil
        }
    }

    /// Parses CSV: optional header row, fields optionally double-quoted (`""` is a quote),
    /// LF or CRLF line ends, blank lines skipped, surrounding spaces trimmed from each field.
    public init(csv text: String) throws(RosterError) {
        entries = []
        let records = try CSV.parse(text)
        var seen = Seen()
        for (n, record) in records.enumerated() {
            let (line, fields) = record
            if n == 0, fields.map({ $0.lowercased() }) == Self.header { continue }
            guard fields.count == 3 else { throw RosterError(line: line, problem: .wrongFieldCount(fields.count)) }
            let code: EnrollmentCode
            do { code = try EnrollmentCode(parsing: fields[2]) } catch {
                throw RosterError(line: line, problem: .badEnrollmentCode(error))
            }
            let e = RosterEntry(name: fields[0], studentID: fields[1], enrollment: code)
            if let p = seen.problem(adding: e, line: line) { throw RosterError(line: line, problem: p) }
            entries.append(e)
        }
    }

    /// The roster keys, in roster order: pass them to ``PollKeyring/init(secret:roster:)``.
    public var rosterKeys: [RosterKey] { entries.map(\.enrollment.rosterKey) }

    /// The CSV text of this roster (with header), which ``init(csv:)`` reads back.
    public var csv: String {
        func quote(_ s: String) -> String {
            s.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" })
                ? "\"" + s.replacingAll("\"", with: "\"\"") + "\"" : s
        }
        return ([Self.header.joined(separator: ",")]
            + entries.map { [quote($0.name), quote($0.studentID), $0.enrollment.description].joined(separator: ",") })
            .joined(separator: "\n") + "\n"
    }

    /// Each student's counted answer to a question (nil: no vote), in roster order.
    /// `keyring` must have been built from ``rosterKeys``.
    public func answers(_ results: QuestionResults, keyring: PollKeyring) -> [(entry: RosterEntry, answer: Answer?)] {
        var byIndex: [Int: Answer] = [:]
        for (voter, answer) in results.answers where voter.mode == .roster {
            if let i = keyring.rosterIndex(ofVoter: voter.voterID) { byIndex[i] = answer }
        }
        return entries.enumerated().map { ($0.element, byIndex[$0.offset]) }
    }
}

/// A roster file problem, with the line it is on (1-based).
public struct RosterError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Problem: Sendable, Equatable {
        case wrongFieldCount(Int)
        case emptyName
        case emptyStudentID
        /// A NUL byte in the name or student ID (other control characters are kept, and neutralised
        /// wherever a name is shown).
        case nulByte(field: String)
        case badEnrollmentCode(EnrollmentCodeError)
        case duplicateStudentID(String, firstSeenAt: Int)
        case duplicateEnrollmentCode(name: String)
        case unterminatedQuote
        case textAfterQuote
    }

    public var line: Int
    public var problem: Problem

    public init(line: Int, problem: Problem) {
        self.line = line
        self.problem = problem
    }

    public var description: String {
        let what: String
        switch problem {
        case .wrongFieldCount(let n): what = "expected 3 fields (name, student ID, enrollment code), found \(n)"
        case .emptyName: what = "the name is empty or blank"
        case .emptyStudentID: what = "the student ID is empty or blank"
        case .nulByte(let field): what = "the \(field) holds a NUL byte"
        case .badEnrollmentCode(let e): what = e.description
        case .duplicateStudentID(let id, let l): what = "student ID \(id) is already on line \(l)"
        case .duplicateEnrollmentCode(let n): what = "this enrollment code is already used by \(n)"
        case .unterminatedQuote: what = "a quoted field is not closed"
        case .textAfterQuote: what = "text after the closing quote of a field"
        }
        return "roster line \(line): \(what)"
    }
}

enum CSV {
    /// Records with their starting line numbers; blank records skipped.
    static func parse(_ text: String) throws(RosterError) -> [(line: Int, fields: [String])] {
        var records: [(line: Int, fields: [String])] = []
        var fields: [String] = []
        var field = ""
        var quoted = false      // inside quotes
        var wasQuoted = false   // current field was quoted and closed
        var line = 1
        var recordLine = 1
        var chars = Array(text.unicodeScalars)
        if chars.first == "\u{FEFF}" { chars.removeFirst() }
        var i = 0
        func endField() {
            fields.append(wasQuoted ? field : field.trimmingSpaces())
            field = ""
            wasQuoted = false
        }
        func endRecord() {
            endField()
            if !(fields.count == 1 && fields[0].isEmpty) { records.append((recordLine, fields)) }
            fields = []
        }
        while i < chars.count {
            let c = chars[i]
            if quoted {
                if c == "\"" {
                    if i + 1 < chars.count, chars[i + 1] == "\"" { field.unicodeScalars.append("\""); i += 1 } else {
                        quoted = false
                        wasQuoted = true
                    }
                } else {
                    if c == "\n" { line += 1 }
                    field.unicodeScalars.append(c)
                }
            } else if c == "," {
                endField()
            } else if c == "\n" || c == "\r" {
                if c == "\r", i + 1 < chars.count, chars[i + 1] == "\n" { i += 1 }
                endRecord()
                line += 1
                recordLine = line
            } else if c == "\"" && field.trimmingSpaces().isEmpty && !wasQuoted {
                quoted = true
                field = ""
            } else if wasQuoted {
                if c != " " && c != "\t" { throw RosterError(line: line, problem: .textAfterQuote) }
            } else {
                field.unicodeScalars.append(c)
            }
            i += 1
        }
        if quoted { throw RosterError(line: recordLine, problem: .unterminatedQuote) }
        if !field.isEmpty || !fields.isEmpty || wasQuoted { endRecord() }
        return records
    }
}

extension String {
    /// Empty, or only white space (spaces, tabs, no-break spaces, line breaks…).
    var isBlank: Bool { unicodeScalars.allSatisfy { $0.properties.isWhitespace } }

    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }

    func replacingAll(_ a: Character, with b: String) -> String {
        var out = ""
        for c in self { if c == a { out += b } else { out.append(c) } }
        return out
    }
}
