import Foundation
import GRDB

/// Durable storage of polls, questions, ballots, rejection counters and the roster (SQLite in WAL mode).
///
/// Every write method returns only after its transaction has committed: a ballot that `record` returned
/// for survives a crash of the process (and, with `.full` durability, of the machine).
/// All methods are synchronous and thread-safe; reads run concurrently with writes.
public final class ClickerStore: Sendable {
    /// How hard a commit waits for the disk.
    public enum Durability: Sendable {
        /// `synchronous=FULL`: each commit is fsynced; survives power loss.
        case full
        /// `synchronous=NORMAL`: survives a process crash; the last commits may be lost on power loss.
        case normal
    }

    /// The database file path.
    public let path: String
    let pool: DatabasePool
    /// SQLite page cache per connection, in KiB.
    public static let pageCacheKiB = 256

    /// Held by an `exclusive` store for its lifetime (see ``StoreLock``).
    private let lock: StoreLock?

    /// Opens (creating the file if needed) the database at `path`, whose directory must exist, or
    /// at the default location (`StoreLocation.defaultPath(environment:)`, directories created)
    /// when `path` is nil. Runs pending migrations.
    ///
    /// An existing file is checked first (SQLite's quick check, ``quickCheck(_:)``) and refused,
    /// unwritten, when damaged (``StoreError/damaged(path:problems:)``).
    ///
    /// `exclusive` (a tally running a poll) takes the database's lock for the store's lifetime, and
    /// fails with ``StoreError/inUse(path:holder:)`` while another exclusive store holds it.
    public init(path: String? = nil, durability: Durability = .full, exclusive: Bool = false,
                environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let resolved: String
        if let path {
            resolved = path
            let directory = (path as NSString).deletingLastPathComponent
            var isDirectory: ObjCBool = false
            if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory)
                || !isDirectory.boolValue {
                throw StoreError.noDirectory(path: path, directory: directory)
            }
        } else {
            resolved = try StoreLocation.defaultPath(environment: environment)
            try StoreLocation.makeDirectory((resolved as NSString).deletingLastPathComponent)
        }
        lock = exclusive ? try StoreLock(database: resolved) : nil
        // Checked before anything (the WAL mode, a migration, a ballot) is written into it.
        try Self.quickCheck(resolved)
        try StoreLocation.prepareFile(resolved)

        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(5)
        let sync = durability == .full ? "FULL" : "NORMAL"
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(sync)")
            // Deleted rows (the per-voter ballots of a closed anonymous question) are overwritten with
            // zeros, not left in free pages of the file.
            try db.execute(sql: "PRAGMA secure_delete = ON")
            // A bounded page cache: the database grows with the lecture (a row per ballot), and
            // SQLite's default cache (2 MB per connection) would keep all of it resident. Writes
            // append; reads (results, exports) are rare and sequential.
            try db.execute(sql: "PRAGMA cache_size = -\(Self.pageCacheKiB)")
        }
        pool = try DatabasePool(path: resolved, configuration: config)
        self.path = resolved
        let migrator = Self.migrator
        let upToDate = try pool.read { db in try migrator.hasCompletedMigrations(db) }
        try migrator.migrate(pool)
        // Older WAL frames may still hold rows that a migration deleted (best effort: another
        // process reading the file only delays it to the next seal).
        if !upToDate { _ = try? checkpoint() }
        StoreLocation.tighten(resolved)
    }

    // MARK: Polls and questions

    /// Creates a poll. It is the open poll until `closePoll` is called.
    /// `beaconSeed`: the seed of the poll's beacon key pair (kept, like the join code, for `--resume`).
    public func createPoll(voteID: Data, joinCode: String?, mode: PollMode, rule: CountingRule = .latestWins,
                           title: String? = nil, at date: Date = Date(), beaconSeed: Data? = nil) throws -> PollRecord {
        try pool.write { db in
            try db.execute(sql: """
                INSERT INTO poll (vote_id, join_code, mode, rule, title, created_at, beacon_seed)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [voteID, joinCode, mode.rawValue, rule.rawValue, title, date.timeIntervalSince1970, beaconSeed])
            return PollRecord(id: db.lastInsertedRowID, voteID: voteID, joinCode: joinCode, mode: mode, rule: rule,
                              title: title, createdAt: date, closedAt: nil, beaconSeed: beaconSeed)
        }
    }

    /// The poll that used `joinCode` (compared as stored), if any: a code is never used for two polls.
    public func poll(joinCode: String) throws -> PollRecord? {
        try pool.read { db in
            try PollRecord.filter(Column("join_code") == joinCode).order(Column("id")).fetchOne(db)
        }
    }

    /// Marks a poll closed (it is no longer resumed); closes its open questions too. The open questions
    /// of an anonymous poll are sealed: only their totals remain (see `closeQuestion`). Its key bindings
    /// (voter ID and public key, table `voter_key`) are deleted, and the WAL is checkpointed and
    /// truncated whether or not a question was sealed, so that their old pages leave the files too.
    public func closePoll(_ poll: Int64, at date: Date = Date()) throws {
        try pool.write { db in
            try Self.requirePoll(db, poll)
            let t = date.timeIntervalSince1970
            let anonymous = try Self.isAnonymous(db, poll)
            let open = try Int.fetchAll(db, sql: "SELECT number FROM question WHERE poll_id = ? AND state = 'open'",
                                        arguments: [poll])
            try db.execute(sql: "UPDATE question SET state = 'closed', closed_at = ? WHERE poll_id = ? AND state = 'open'",
                           arguments: [t, poll])
            if anonymous { for n in open { try Self.seal(db, poll: poll, number: n) } }
            try db.execute(sql: "UPDATE poll SET closed_at = ? WHERE id = ? AND closed_at IS NULL", arguments: [t, poll])
            // The beacon key signs for the open poll only: a closed poll's is of no further use.
            try db.execute(sql: "UPDATE poll SET beacon_seed = NULL WHERE id = ?", arguments: [poll])
            try Self.deleteVoterKeys(db, poll: poll)
        }
        checkpointAfterSeal()
    }

    /// Opens question `number` of `poll`, creating it with `definition` if needed. Reopening a closed
    /// question keeps its first `openedAt` and its definition, and clears `closedAt`.
    @discardableResult
    public func openQuestion(poll: Int64, number: Int, definition: QuestionDefinition? = nil,
                             at date: Date = Date()) throws -> QuestionRecord {
        guard number >= 1 else { throw StoreError.invalidValue("question number \(number)") }
        return try pool.write { db in
            try Self.requirePoll(db, poll)
            if try QuestionTotals.exists(db, key: ["poll_id": poll, "question": number]) {
                throw StoreError.sealedQuestion(poll: poll, number: number)
            }
            guard var q = try Self.fetchQuestion(db, poll: poll, number: number) else {
                let q = QuestionRecord(poll: poll, number: number, state: .open, openedAt: date, closedAt: nil,
                                       definition: definition)
                try q.insert(db)
                return q
            }
            q.state = .open
            q.closedAt = nil
            if q.definition == nil { q.definition = definition }
            try q.update(db)
            return q
        }
    }

    /// Closes question `number` of `poll`. In an anonymous poll the question is sealed in the same
    /// transaction: its totals are stored and its per-voter ballots (voter IDs) deleted, with
    /// `secure_delete` and a WAL checkpoint so that they leave no trace in the files. `totals` are
    /// the live tally's (then what is kept is what was shown); without them they are counted from
    /// the stored ballots.
    @discardableResult
    public func closeQuestion(poll: Int64, number: Int, at date: Date = Date(),
                              totals: QuestionTotals? = nil) throws -> QuestionRecord {
        let (q, sealed) = try pool.write { db -> (QuestionRecord, Bool) in
            try db.execute(sql: "UPDATE question SET state = 'closed', closed_at = ? WHERE poll_id = ? AND number = ? AND state = 'open'",
                           arguments: [date.timeIntervalSince1970, poll, number])
            guard let q = try Self.fetchQuestion(db, poll: poll, number: number) else {
                throw StoreError.unknownQuestion(poll: poll, number: number)
            }
            let anonymous = try Self.isAnonymous(db, poll)
            if anonymous { try Self.seal(db, poll: poll, number: number, totals: totals) }
            return (q, anonymous)
        }
        if sealed { checkpointAfterSeal() }
        return q
    }

    /// All polls, oldest first.
    public func polls() throws -> [PollRecord] {
        try pool.read { db in
            try PollRecord.order(Column("id")).fetchAll(db)
        }
    }

    /// One poll, or nil.
    public func poll(_ id: Int64) throws -> PollRecord? {
        try pool.read { db in
            try PollRecord.fetchOne(db, key: id)
        }
    }

    /// The questions of a poll, by number.
    public func questions(poll: Int64) throws -> [QuestionRecord] {
        try pool.read { db in try Self.fetchQuestions(db, poll: poll) }
    }

    // MARK: Ballots and rejections

    /// Commits one ballot; returns after the commit. Recording a ballot already stored (same poll,
    /// question, voter, sequence) widens its heard interval and ORs `gattVerified`; the first answer
    /// stays (a same-sequence conflict: the first counted ballot stands), unless the new ballot is
    /// verified and the stored one is not (the tally counted the verified one: PROTOCOL.md, takeover
    /// rule). Anonymous polls store no address, and nothing more for a sealed question (its totals are final).
    public func record(_ ballot: BallotRecord) throws {
        try pool.write { db in try Self.upsert(db, ballot) }
    }

    /// Commits many ballots, rejection increments and voter key bindings in one transaction; returns
    /// after the commit.
    public func record(_ ballots: [BallotRecord], rejections: [RejectionCount] = [],
                       voterKeys: [VoterKeyRecord] = []) throws {
        if ballots.isEmpty && rejections.isEmpty && voterKeys.isEmpty { return }
        try pool.write { db in
            for k in voterKeys { try Self.bind(db, k) }
            for b in ballots { try Self.upsert(db, b) }
            for r in rejections { try Self.addRejection(db, r) }
        }
    }

    /// Adds `count` to a rejection counter (poll, question, reason); commits before returning.
    public func countRejection(poll: Int64, question: Int, reason: String, count: Int = 1) throws {
        try pool.write { db in
            try Self.addRejection(db, RejectionCount(poll: poll, question: question, reason: reason, count: count))
        }
    }

    /// The ballots of a poll (optionally one question), ordered by question, voter, sequence.
    public func ballots(poll: Int64, question: Int? = nil) throws -> [BallotRecord] {
        try pool.read { db in try Self.fetchBallots(db, poll: poll, question: question) }
    }

    /// Rejection counters of a poll, ordered by question and reason.
    public func rejections(poll: Int64) throws -> [RejectionCount] {
        try pool.read { db in try Self.fetchRejections(db, poll: poll) }
    }

    // MARK: Resume

    /// The ID of the most recent poll not yet closed, read without its rows (a new poll closes it,
    /// whatever its ballots hold); nil if none.
    public func openPollID() throws -> Int64? {
        try pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT id FROM poll WHERE closed_at IS NULL ORDER BY id DESC LIMIT 1")
        }
    }

    /// The most recent poll not yet closed, with its questions, ballots and rejections; nil if none.
    public func resume() throws -> ResumeState? {
        try pool.read { db in
            guard let poll = try PollRecord.filter(Column("closed_at") == nil).order(Column("id").desc).fetchOne(db) else {
                return nil
            }
            return ResumeState(poll: poll,
                               questions: try Self.fetchQuestions(db, poll: poll.id),
                               ballots: try Self.fetchBallots(db, poll: poll.id, question: nil),
                               rejections: try Self.fetchRejections(db, poll: poll.id),
                               totals: try QuestionTotals.filter(Column("poll_id") == poll.id)
                                   .order(Column("question")).fetchAll(db),
                               voterKeys: try Self.fetchVoterKeys(db, poll: poll.id),
                               plan: try Self.plan(db, poll: poll.id))
        }
    }

    // MARK: Summary

    /// Per-question summaries of a poll, by question number, counted by the poll's rule.
    public func summary(poll: Int64) throws -> [QuestionSummary] {
        try pool.read { db in
            guard let record = try PollRecord.fetchOne(db, key: poll) else { throw StoreError.unknownPoll(poll) }
            return Self.summarize(questions: try Self.fetchQuestions(db, poll: poll),
                                  ballots: try Self.fetchBallots(db, poll: poll, question: nil),
                                  rejections: try Self.fetchRejections(db, poll: poll), rule: record.rule,
                                  mode: record.mode, totals: try QuestionTotals.filter(Column("poll_id") == poll).fetchAll(db))
        }
    }

    // MARK: Maintenance

    /// `PRAGMA integrity_check` result lines (`["ok"]` when healthy).
    public func integrityCheck() throws -> [String] {
        try pool.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
    }

    /// After a seal: the WAL still holds the deleted rows' old pages until it is checkpointed and
    /// truncated. The seal itself has committed, so a failure here (a reader holding the WAL past the
    /// busy timeout) is not the caller's error: the frames go at the next seal or the next start.
    private func checkpointAfterSeal() {
        _ = try? checkpoint()
    }

    /// Copies the WAL into the main file and truncates the WAL (also done automatically, without truncating).
    func checkpoint() throws {
        _ = try pool.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
    }

    // MARK: Internals

    static func isAnonymous(_ db: Database, _ poll: Int64) throws -> Bool {
        try String.fetchOne(db, sql: "SELECT mode FROM poll WHERE id = ?", arguments: [poll]) == PollMode.anonymous.rawValue
    }

    static func requirePoll(_ db: Database, _ poll: Int64) throws {
        guard try Bool.fetchOne(db, sql: "SELECT 1 FROM poll WHERE id = ?", arguments: [poll]) == true else {
            throw StoreError.unknownPoll(poll)
        }
    }

    private static func upsert(_ db: Database, _ b: BallotRecord) throws {
        let stmt = try db.cachedStatement(sql: """
            INSERT INTO ballot (poll_id, question, voter, sequence, answer, address, first_heard, last_heard, gatt_verified)
            SELECT ?1, ?2, ?3, ?4, ?5, CASE (SELECT mode FROM poll WHERE id = ?1) WHEN 'roster' THEN ?6 ELSE '' END, ?7, ?8, ?9
            WHERE NOT EXISTS (SELECT 1 FROM question_total WHERE poll_id = ?1 AND question = ?2)
            ON CONFLICT (poll_id, question, voter, sequence) DO UPDATE SET
                answer = CASE WHEN excluded.gatt_verified AND NOT gatt_verified THEN excluded.answer ELSE answer END,
                first_heard = min(first_heard, excluded.first_heard),
                last_heard = max(last_heard, excluded.last_heard),
                gatt_verified = gatt_verified OR excluded.gatt_verified
            """)
        do {
            try stmt.execute(arguments: [b.poll, b.question, b.voter, Int64(b.sequence), b.answer, b.address,
                                         b.firstHeard.timeIntervalSince1970, b.lastHeard.timeIntervalSince1970,
                                         b.gattVerified])
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
            throw StoreError.unknownQuestion(poll: b.poll, number: b.question)
        }
    }

    private static func addRejection(_ db: Database, _ r: RejectionCount) throws {
        let stmt = try db.cachedStatement(sql: """
            INSERT INTO rejection (poll_id, question, reason, count) VALUES (?, ?, ?, ?)
            ON CONFLICT (poll_id, question, reason) DO UPDATE SET count = count + excluded.count
            """)
        do {
            try stmt.execute(arguments: [r.poll, r.question, r.reason, r.count])
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
            throw StoreError.unknownPoll(r.poll)
        }
    }

    static func fetchQuestion(_ db: Database, poll: Int64, number: Int) throws -> QuestionRecord? {
        try QuestionRecord.fetchOne(db, key: ["poll_id": poll, "number": number])
    }

    static func fetchQuestions(_ db: Database, poll: Int64) throws -> [QuestionRecord] {
        try QuestionRecord.filter(Column("poll_id") == poll).order(Column("number")).fetchAll(db)
    }

    static func fetchBallots(_ db: Database, poll: Int64, question: Int?) throws -> [BallotRecord] {
        var request = BallotRecord.filter(Column("poll_id") == poll)
        if let question { request = request.filter(Column("question") == question) }
        return try request.order(Column("question"), Column("voter"), Column("sequence")).fetchAll(db)
    }

    static func fetchRejections(_ db: Database, poll: Int64) throws -> [RejectionCount] {
        try RejectionCount.filter(Column("poll_id") == poll).order(Column("question"), Column("reason")).fetchAll(db)
    }
}
