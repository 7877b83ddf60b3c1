import Foundation
import GRDB

extension ClickerStore {
    /// A single choice stored as its bare option index (0…7) becomes ClickerWire's encoding,
    /// kind 0x01 << 16 | option; every other answer was stored that way already.
    static let answersInWireEncoding = "UPDATE ballot SET answer = (1 << 16) | answer WHERE answer BETWEEN 0 AND 7"

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE poll (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    vote_id BLOB NOT NULL,
                    join_code TEXT,
                    join_secret BLOB,
                    mode TEXT NOT NULL CHECK (mode IN ('anonymous', 'roster')),
                    title TEXT,
                    created_at REAL NOT NULL,
                    closed_at REAL
                );
                CREATE TABLE question (
                    poll_id INTEGER NOT NULL REFERENCES poll(id) ON DELETE CASCADE,
                    number INTEGER NOT NULL CHECK (number >= 1),
                    state TEXT NOT NULL CHECK (state IN ('open', 'closed')),
                    opened_at REAL NOT NULL,
                    closed_at REAL,
                    PRIMARY KEY (poll_id, number)
                ) WITHOUT ROWID;
                CREATE TABLE ballot (
                    poll_id INTEGER NOT NULL,
                    question INTEGER NOT NULL,
                    voter BLOB NOT NULL,
                    sequence INTEGER NOT NULL,
                    answer INTEGER NOT NULL,
                    address TEXT NOT NULL,
                    first_heard REAL NOT NULL,
                    last_heard REAL NOT NULL,
                    gatt_verified INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (poll_id, question, voter, sequence),
                    FOREIGN KEY (poll_id, question) REFERENCES question(poll_id, number) ON DELETE CASCADE
                ) WITHOUT ROWID;
                CREATE TABLE rejection (
                    poll_id INTEGER NOT NULL REFERENCES poll(id) ON DELETE CASCADE,
                    question INTEGER NOT NULL,
                    reason TEXT NOT NULL,
                    count INTEGER NOT NULL,
                    PRIMARY KEY (poll_id, question, reason)
                ) WITHOUT ROWID;
                CREATE TABLE roster (
                    student_id TEXT PRIMARY KEY,
                    name TEXT NOT NULL,
                    enrollment_key BLOB
                );
                """)
        }
        // v2: the join secret column was never filled (the join code column is what a resume reads);
        // polls record their counting rule, so that the stored summary counts what the live tally
        // counted; anonymous polls keep per-voter rows only while a question is open, then only totals.
        m.registerMigration("v2") { db in
            try db.execute(sql: "ALTER TABLE poll DROP COLUMN join_secret")
            try db.alter(table: "poll") { t in
                t.add(column: "rule", .text).notNull().defaults(to: CountingRule.latestWins.rawValue)
            }
            try db.create(table: QuestionTotals.databaseTableName) { t in
                t.column("poll_id", .integer).notNull()
                t.column("question", .integer).notNull()
                t.column("voters", .integer).notNull()
                t.column("changes", .integer).notNull()
                t.column("gatt_verified", .integer).notNull()
                t.column("counts", .text).notNull()
                // Added by "sealed-answers" to a database made before it (v2's seal below stores it).
                t.column("answers", .text)
                t.primaryKey(["poll_id", "question"])
                t.foreignKey(["poll_id", "question"], references: "question", columns: ["poll_id", "number"],
                             onDelete: .cascade)
            }
            // Answers in the wire encoding before the seal below reads ballots (the same statement
            // as "answer-wire-encoding", which a database past v2 runs instead; it matches nothing twice).
            try db.execute(sql: Self.answersInWireEncoding)
            // Existing anonymous polls: no addresses, and closed questions keep only their totals.
            try db.execute(sql: "UPDATE ballot SET address = '' WHERE poll_id IN (SELECT id FROM poll WHERE mode = 'anonymous')")
            let closed = try Row.fetchAll(db, sql: """
                SELECT q.poll_id, q.number FROM question q JOIN poll p ON p.id = q.poll_id
                WHERE p.mode = 'anonymous' AND q.state = 'closed'
                """)
            for row in closed {
                guard let poll: Int64 = row["poll_id"], let number: Int = row["number"] else { continue }
                try seal(db, poll: poll, number: number)
            }
        }
        registerVoterKeyMigration(&m)
        // Each question keeps its definition (answer kinds by wire kind byte, JSON; option count;
        // option texts, JSON), so that --resume asks the same question without being told. NULL in
        // the questions stored before: a resume takes those from its options.
        m.registerMigration("question-definition") { db in
            try db.alter(table: "question") { t in
                t.add(column: "answer_kinds", .text)
                t.add(column: "options", .integer)
                t.add(column: "option_texts", .text)
            }
        }
        // Ballots store answers in ClickerWire's encoding (kind << 16 | value) only: a single choice
        // was stored as its bare option index before.
        m.registerMigration("answer-wire-encoding") { db in
            try db.execute(sql: Self.answersInWireEncoding)
        }
        // The rest of a question's definition: its title, a numeric question's scale and range (wire
        // units), its correct answers (JSON array of answers in the ballots' encoding) and points.
        // NULL in the questions stored before: those have none.
        m.registerMigration("question-definition-details") { db in
            try db.alter(table: "question") { t in
                t.add(column: "title", .text)
                t.add(column: "numeric_decimals", .integer)
                t.add(column: "numeric_lowest", .integer)
                t.add(column: "numeric_highest", .integer)
                t.add(column: "correct_answers", .text)
                t.add(column: "points", .double)
            }
        }
        registerPlanMigration(&m)
        // A sealed question keeps its counted answers of every kind (each answer with its number of
        // ballots, JSON; no voter ID), so that a closed anonymous multi-select, numeric or ranked
        // question keeps its results. v2 creates the column in a new database.
        m.registerMigration("sealed-answers") { db in
            if try !db.columns(in: QuestionTotals.databaseTableName).contains(where: { $0.name == "answers" }) {
                try db.alter(table: QuestionTotals.databaseTableName) { t in t.add(column: "answers", .text) }
            }
        }
        // Dates are seconds since 1970 in REAL columns, but records written through GRDB (a question
        // opened, reopened or closed) stored text ("2026-11-28 02:09:11.221", UTC) until their date
        // strategies were declared as GRDB 7 asks (`databaseDateEncodingStrategy(for:)`).
        m.registerMigration("dates-as-seconds") { db in
            for (table, columns) in [("poll", ["created_at", "closed_at"]), ("question", ["opened_at", "closed_at"]),
                                     ("ballot", ["first_heard", "last_heard"])] {
                for c in columns {
                    try db.execute(sql: "UPDATE \(table) SET \(c) = (julianday(\(c)) - 2440587.5) * 86400.0 WHERE typeof(\(c)) = 'text'")
                }
            }
        }
        // Protocol version 4: the seed of the poll's beacon key pair, kept with the poll for --resume.
        m.registerMigration("beacon-key") { db in
            if try !db.columns(in: "poll").contains(where: { $0.name == "beacon_seed" }) {
                try db.alter(table: "poll") { t in t.add(column: "beacon_seed", .blob) }
            }
        }
        return m
    }
}
