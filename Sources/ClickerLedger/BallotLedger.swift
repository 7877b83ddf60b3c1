import ClickerTally
import ClickerTransport
import ClickerWire
import PostgresClient

/// The shared ballot table in PostgreSQL that several receivers write to (docs/LEDGER.md).
///
/// The counting rule of PROTOCOL.md §8.3 holds in the database: writing a ballot is one upsert that
/// replaces the stored ballot only when the new one ranks higher, and the ranking is a total order, so
/// receivers may write in any order, twice, or again after a crash, and the table ends as one receiver
/// counting everything in heard order would leave it.
///
/// Synchronous (see ``PostgresConnection``): run it on a thread of its own, never on the cooperative pool.
public final class BallotLedger {
    let db: PostgresConnection
    /// ``upsertSQL``, parsed and planned once per connection.
    private let upsert: PreparedStatement

    /// Connects to `url` and brings the schema to this build's version (`migrate`, the instructor's
    /// side), or only checks that it is at that version (a receiver, whose role may not change it).
    /// Throws `schemaTooNew` for a database a newer build migrated.
    public convenience init(url: String, migrate: Bool = true) throws(LedgerError) {
        let db: PostgresConnection
        do { db = try PostgresConnection(url: url) } catch { throw .database(error) }
        try self.init(connection: db, migrate: migrate)
    }

    /// Uses an open connection (migrating or checking it like ``init(url:migrate:)``); one ledger per
    /// connection, which holds its prepared statement.
    public init(connection: PostgresConnection, migrate: Bool = true) throws(LedgerError) {
        db = connection
        upsert = try Self.mapped {
            if migrate { try LedgerSchema.migrate(connection) } else { try LedgerSchema.check(connection) }
            return try connection.prepare(Self.upsertSQL, as: "clicker_ledger_upsert")
        }
    }

    /// Registers a poll and its questions as single choices of four options (A–D), as
    /// ``register(poll:voteID:policy:specs:)`` does.
    public func register(poll: Int64, voteID: UInt16, policy: ChangePolicy, questions: [UInt8]) throws(LedgerError) {
        try register(poll: poll, voteID: voteID, policy: policy, specs: questions.map { QuestionSpec.choice($0) })
    }

    /// Registers a poll and its questions, with the answers each offers (what a receiver counts);
    /// again with the same vote ID and policy, adds the questions not yet there. Neither a poll's vote
    /// ID and change policy nor a question's answers ever change: asking for others throws
    /// `registrationConflict` (receivers would count answers the tally does not offer, or refuse
    /// answers it does), and registers nothing.
    public func register(poll: Int64, voteID: UInt16, policy: ChangePolicy, specs: [QuestionSpec]) throws(LedgerError) {
        try Self.mapped {
            try db.transaction {
                try db.execute("""
                    INSERT INTO polls (poll_id, vote_id, change_policy) VALUES ($1, $2, $3) ON CONFLICT (poll_id) DO NOTHING
                    """, [.int(poll), .int(Int64(voteID)), .text(policy.rawValue)])
                let row = try db.execute("SELECT vote_id, change_policy FROM polls WHERE poll_id = $1", [.int(poll)]).rows.first
                let storedVoteID = try row?.int(0), storedPolicy = try row?.text(1)
                guard storedVoteID == Int64(voteID), storedPolicy == policy.rawValue else {
                    throw LedgerError.registrationConflict(
                        poll: poll, stored: "vote ID \(storedVoteID.map(String.init) ?? "none"), change policy \(storedPolicy ?? "none")",
                        asked: "vote ID \(voteID), change policy \(policy.rawValue)")
                }
                for spec in specs.sorted(by: { $0.number < $1.number }) {
                    try db.execute("""
                        INSERT INTO questions (poll_id, question, options, kinds, numeric_lowest, numeric_highest)
                        VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING
                        """, LedgerQuestions.parameters(spec, poll: poll))
                    let stored = try db.execute("""
                        SELECT question, options, kinds, numeric_lowest, numeric_highest FROM questions
                        WHERE poll_id = $1 AND question = $2
                        """, [.int(poll), .int(Int64(spec.number))]).rows.first.map(LedgerQuestions.spec)
                    guard let stored, stored == LedgerQuestions.counted(spec) else {
                        throw LedgerError.registrationConflict(poll: poll, stored: stored.map(LedgerQuestions.described) ?? "no question \(spec.number)",
                                                               asked: LedgerQuestions.described(spec))
                    }
                }
            }
        }
    }

    /// Writes one ballot: a single statement, committed on return.
    public func write(_ ballot: LedgerBallot) throws(LedgerError) {
        do { try db.execute(upsert, Self.parameters(ballot)) } catch { throw Self.ledgerError(error, writing: ballot) }
    }

    /// Writes `ballots` in one transaction (all or none), each by the same statement as ``write(_:)``,
    /// sent a hundred at a time without waiting for each answer (libpq's pipeline mode). They go in
    /// one order of keys whatever their order here, so that writers of overlapping batches never
    /// deadlock. Duplicates are harmless.
    public func write(batch ballots: [LedgerBallot]) throws(LedgerError) {
        let ordered = ballots.sorted { $0.lockOrder < $1.lockOrder }
        do {
            try db.transaction { try db.executeEach(upsert, ordered.map(Self.parameters)) }
        } catch {
            let failed = (error as? PostgresError)?.statement.flatMap { ordered.indices.contains($0) ? ordered[$0] : nil }
            throw Self.ledgerError(error, writing: failed)
        }
    }

    /// The counted ballot of every voter of a question.
    public func counted(poll: Int64, question: UInt8) throws(LedgerError) -> [VoterKey: CountedBallot] {
        try Self.mapped {
            let rows = try db.execute("""
                SELECT b.voter_mode, b.voter_id, b.sequence, b.answer, b.verified, b.heard_at, b.address,
                       s.lowest_sequence, s.highest_sequence, s.first_heard, s.last_heard
                FROM ballots b JOIN ballot_spans s USING (poll_id, question, voter_mode, voter_id)
                WHERE b.poll_id = $1 AND b.question = $2
                """, [.int(poll), .int(Int64(question))]).rows
            var out: [VoterKey: CountedBallot] = [:]
            for r in rows {
                guard let mode = BallotMode(rawValue: UInt8(clamping: try r.int(0))), let id = UInt32(exactly: try r.int(1)),
                      let seq = UInt16(exactly: try r.int(2)), let low = UInt16(exactly: try r.int(7)),
                      let high = UInt16(exactly: try r.int(8)) else {
                    throw PostgresError(.badValue, "a ballot row out of range")
                }
                out[VoterKey(mode: mode, voterID: id)] = CountedBallot(
                    sequence: seq, answer: try Self.answer(r.bytes(3)), verified: try r.bool(4), heardAt: try r.int(5),
                    address: try Self.address(r.bytes(6)),
                    lowestSequence: low, highestSequence: high, firstHeard: try r.int(9), lastHeard: try r.int(10))
            }
            return out
        }
    }

    /// Counted ballots per answer (answers with none are absent), counted by the database.
    public func counts(poll: Int64, question: UInt8) throws(LedgerError) -> [Answer: Int] {
        try Self.mapped {
            let rows = try db.execute("""
                SELECT answer, count(*) FROM ballots WHERE poll_id = $1 AND question = $2 GROUP BY answer
                """, [.int(poll), .int(Int64(question))]).rows
            var out: [Answer: Int] = [:]
            for r in rows { out[try Self.answer(r.bytes(0))] = Int(try r.int(1)) }
            return out
        }
    }

    /// Counted ballots per answer of every question of `poll` that has any, counted by the database.
    public func counts(poll: Int64) throws(LedgerError) -> [UInt8: [Answer: Int]] {
        try Self.mapped {
            let rows = try db.execute("""
                SELECT question, answer, count(*) FROM ballots WHERE poll_id = $1 GROUP BY question, answer
                """, [.int(poll)]).rows
            var out: [UInt8: [Answer: Int]] = [:]
            for r in rows {
                guard let q = UInt8(exactly: try r.int(0)) else { throw PostgresError(.badValue, "a question out of range") }
                out[q, default: [:]][try Self.answer(r.bytes(1))] = Int(try r.int(2))
            }
            return out
        }
    }

    // MARK: The statement

    /// One statement: the span of what was heard from the voter widens (a no-op for a replay), and the
    /// counted ballot is replaced only when the new one outranks it. The ranking, highest first:
    /// verified before unverified; then the higher sequence (latest wins) or the lower (first response
    /// only); then the earlier `heard_at`; then the smaller answer bytes; then the smaller address.
    /// Every pair of distinct ballots is ordered, so the row ends at the highest whatever the order of
    /// writes.
    static let upsertSQL = """
        WITH span AS (
            INSERT INTO ballot_spans AS s (poll_id, question, voter_mode, voter_id,
                                           lowest_sequence, highest_sequence, first_heard, last_heard)
            VALUES ($1, $2, $3, $4, $5, $5, $8, $8)
            ON CONFLICT (poll_id, question, voter_mode, voter_id) DO UPDATE SET
                lowest_sequence = least(s.lowest_sequence, EXCLUDED.lowest_sequence),
                highest_sequence = greatest(s.highest_sequence, EXCLUDED.highest_sequence),
                first_heard = least(s.first_heard, EXCLUDED.first_heard),
                last_heard = greatest(s.last_heard, EXCLUDED.last_heard)
            WHERE EXCLUDED.lowest_sequence < s.lowest_sequence OR EXCLUDED.highest_sequence > s.highest_sequence
               OR EXCLUDED.first_heard < s.first_heard OR EXCLUDED.last_heard > s.last_heard)
        INSERT INTO ballots AS b (poll_id, question, voter_mode, voter_id, sequence, answer, verified, heard_at, address)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
        ON CONFLICT (poll_id, question, voter_mode, voter_id) DO UPDATE SET
            sequence = EXCLUDED.sequence, answer = EXCLUDED.answer, verified = EXCLUDED.verified,
            heard_at = EXCLUDED.heard_at, address = EXCLUDED.address
        WHERE (EXCLUDED.verified AND NOT b.verified)
           OR (EXCLUDED.verified = b.verified
               AND (CASE WHEN (SELECT p.change_policy FROM polls p WHERE p.poll_id = b.poll_id) = 'firstResponseOnly'
                         THEN EXCLUDED.sequence < b.sequence ELSE EXCLUDED.sequence > b.sequence END
                    OR (EXCLUDED.sequence = b.sequence
                        AND (EXCLUDED.heard_at, EXCLUDED.answer, EXCLUDED.address) < (b.heard_at, b.answer, b.address))))
        """

    static func parameters(_ b: LedgerBallot) -> [PostgresValue] {
        let (k, hi, lo) = b.answer.wireBytes
        let a = b.address.bytes
        return [.int(b.poll), .int(Int64(b.question)), .int(Int64(b.voter.mode.rawValue)), .int(Int64(b.voter.voterID)),
                .int(Int64(b.sequence)), .bytes([k, hi, lo]), .bool(b.verified), .int(b.heardAt),
                .bytes([a.0, a.1, a.2, a.3, a.4, a.5])]
    }

    static func answer(_ bytes: [UInt8]) throws(PostgresError) -> Answer {
        guard bytes.count == 3, let a = Answer(wire: bytes[0], bytes[1], bytes[2]) else {
            throw PostgresError(.badValue, "an answer that is not 3 well-formed bytes")
        }
        return a
    }

    /// Runs `body`, turning the client's errors into the ledger's.
    static func mapped<T>(_ body: () throws -> T) throws(LedgerError) -> T {
        do { return try body() } catch { throw ledgerError(error, writing: nil) }
    }

    /// The ledger's error for `error`, thrown while writing `ballot` (if any): a foreign-key violation
    /// then means its poll or question is not registered.
    static func ledgerError(_ error: any Error, writing ballot: LedgerBallot?) -> LedgerError {
        switch error {
        case let e as LedgerError: return e
        case let e as PostgresError:
            if let ballot, e.sqlState == "23503" { return .unknownQuestion(poll: ballot.poll, question: ballot.question) }
            return .database(e)
        default: return .database(PostgresError(.connectionLost, "\(error)"))
        }
    }
}
