import PostgresClient

/// The ledger's schema, versioned: `ledger_schema_version` holds one row per migration applied.
/// Opening a database applies the migrations it lacks, in one transaction under an advisory lock (two
/// receivers starting together migrate once), and refuses a database migrated by a newer build.
public enum LedgerSchema {
    /// The migrations, in order: version n is `migrations[n - 1]`. Never edit one that shipped; add one.
    static let migrations: [[String]] = [
        // 1: polls, their questions, and the counted ballot per voter and question.
        [
            """
            CREATE TABLE polls (
                poll_id bigint PRIMARY KEY,
                vote_id integer NOT NULL CHECK (vote_id BETWEEN 0 AND 65535),
                change_policy text NOT NULL CHECK (change_policy IN ('latestWins', 'firstResponseOnly')))
            """,
            """
            CREATE TABLE questions (
                poll_id bigint NOT NULL REFERENCES polls ON DELETE CASCADE,
                question smallint NOT NULL CHECK (question BETWEEN 0 AND 255),
                PRIMARY KEY (poll_id, question))
            """,
            """
            CREATE TABLE ballots (
                poll_id bigint NOT NULL,
                question smallint NOT NULL,
                voter_mode smallint NOT NULL CHECK (voter_mode IN (0, 1)),
                voter_id bigint NOT NULL CHECK (voter_id BETWEEN 0 AND 4294967295),
                sequence integer NOT NULL CHECK (sequence BETWEEN 1 AND 65535),
                answer bytea NOT NULL CHECK (length(answer) = 3),
                verified boolean NOT NULL,
                heard_at bigint NOT NULL,
                address bytea NOT NULL CHECK (length(address) = 6),
                PRIMARY KEY (poll_id, question, voter_mode, voter_id),
                FOREIGN KEY (poll_id, question) REFERENCES questions ON DELETE CASCADE)
            """,
        ],
        // 2: what was heard from each voter, counted or not: lowest and highest sequence, first and
        // last time (a voter's record in the in-process tally keeps the same). Filled from the
        // counted ballots of a version-1 database.
        [
            """
            CREATE TABLE ballot_spans (
                poll_id bigint NOT NULL,
                question smallint NOT NULL,
                voter_mode smallint NOT NULL,
                voter_id bigint NOT NULL,
                lowest_sequence integer NOT NULL,
                highest_sequence integer NOT NULL,
                first_heard bigint NOT NULL,
                last_heard bigint NOT NULL,
                PRIMARY KEY (poll_id, question, voter_mode, voter_id),
                FOREIGN KEY (poll_id, question) REFERENCES questions ON DELETE CASCADE)
            """,
            """
            INSERT INTO ballot_spans
            SELECT poll_id, question, voter_mode, voter_id, sequence, sequence, heard_at, heard_at FROM ballots
            """,
        ],
        // 3: what a receiver needs to count a question (its answers), and receivers' access: a
        // database role per receiver token, limited by row-level security to its poll's rows while
        // its `ledger_receivers` row says it is valid (docs/LEDGER.md, "Receivers"). Table owners
        // (the instructor's role) are not subject to the policies.
        [
            "ALTER TABLE polls ADD COLUMN closed_at timestamptz",
            """
            ALTER TABLE questions ADD COLUMN options smallint NOT NULL DEFAULT 4 CHECK (options BETWEEN 1 AND 8),
                ADD COLUMN kinds text NOT NULL DEFAULT '1',
                ADD COLUMN numeric_lowest integer, ADD COLUMN numeric_highest integer
            """,
            """
            CREATE TABLE ledger_receivers (
                role_name text PRIMARY KEY,
                poll_id bigint NOT NULL REFERENCES polls ON DELETE CASCADE,
                valid_until timestamptz NOT NULL)
            """,
            """
            CREATE FUNCTION ledger_receiver_polls() RETURNS SETOF bigint LANGUAGE sql STABLE AS
            'SELECT poll_id FROM ledger_receivers WHERE role_name = current_user AND valid_until > now()'
            """,
            "ALTER TABLE ledger_receivers ENABLE ROW LEVEL SECURITY",
            "CREATE POLICY own_row ON ledger_receivers FOR SELECT USING (role_name = current_user)",
            "ALTER TABLE polls ENABLE ROW LEVEL SECURITY",
            "CREATE POLICY receiver_reads ON polls FOR SELECT USING (poll_id IN (SELECT ledger_receiver_polls()))",
            "ALTER TABLE questions ENABLE ROW LEVEL SECURITY",
            "CREATE POLICY receiver_reads ON questions FOR SELECT USING (poll_id IN (SELECT ledger_receiver_polls()))",
            "ALTER TABLE ballots ENABLE ROW LEVEL SECURITY",
            """
            CREATE POLICY receiver_writes ON ballots USING (poll_id IN (SELECT ledger_receiver_polls()))
                WITH CHECK (poll_id IN (SELECT ledger_receiver_polls()))
            """,
            "ALTER TABLE ballot_spans ENABLE ROW LEVEL SECURITY",
            """
            CREATE POLICY receiver_writes ON ballot_spans USING (poll_id IN (SELECT ledger_receiver_polls()))
                WITH CHECK (poll_id IN (SELECT ledger_receiver_polls()))
            """,
        ],
        // 4: a notification on channel `clicker_ledger`, the poll's number as payload, when a
        // transaction that changed a counted ballot commits (PostgreSQL sends one per poll and
        // transaction): what the instructor's `LedgerFollower` waits for.
        [
            """
            CREATE FUNCTION ledger_notify() RETURNS trigger LANGUAGE plpgsql AS
            'BEGIN PERFORM pg_notify(''clicker_ledger'', NEW.poll_id::text); RETURN NULL; END'
            """,
            "CREATE TRIGGER ballots_changed AFTER INSERT OR UPDATE ON ballots FOR EACH ROW EXECUTE FUNCTION ledger_notify()",
        ],
        // 5: the transaction that last wrote each counted ballot (set on insert by the default, on
        // update by the trigger, whoever writes), so that a reader can ask for the ballots changed
        // since a snapshot it took (``BallotLedger/changes(poll:since:)``): the instructor's tally
        // counts every receiver's ballots with its own. Needs PostgreSQL 13 or later (`xid8`).
        [
            "ALTER TABLE ballots ADD COLUMN written_by xid8 NOT NULL DEFAULT pg_current_xact_id()",
            "CREATE INDEX ballots_written_by ON ballots (poll_id, written_by)",
            """
            CREATE FUNCTION ledger_stamp() RETURNS trigger LANGUAGE plpgsql AS
            'BEGIN NEW.written_by := pg_current_xact_id(); RETURN NEW; END'
            """,
            "CREATE TRIGGER ballots_stamped BEFORE UPDATE ON ballots FOR EACH ROW EXECUTE FUNCTION ledger_stamp()",
        ],
        // 6: a question's close (``BallotLedger/closeQuestion(poll:question:)``, the instructor's):
        // from then on a write of one of its ballots or spans, whoever writes, changes nothing (a
        // BEFORE trigger skips the row; the rest of its batch commits), so every writer's count of it
        // ends where the ledger's did. The trigger runs as the writer: a receiver's role reads its
        // poll's questions.
        [
            "ALTER TABLE questions ADD COLUMN closed_at timestamptz",
            """
            CREATE FUNCTION ledger_open_question() RETURNS trigger LANGUAGE plpgsql AS
            'BEGIN
                IF EXISTS (SELECT 1 FROM questions q WHERE q.poll_id = NEW.poll_id AND q.question = NEW.question
                           AND q.closed_at IS NOT NULL) THEN RETURN NULL; END IF;
                RETURN NEW;
            END'
            """,
            """
            CREATE TRIGGER ballots_open_question BEFORE INSERT OR UPDATE ON ballots
                FOR EACH ROW EXECUTE FUNCTION ledger_open_question()
            """,
            """
            CREATE TRIGGER spans_open_question BEFORE INSERT OR UPDATE ON ballot_spans
                FOR EACH ROW EXECUTE FUNCTION ledger_open_question()
            """,
        ],
        // 7: the tally's beacon, for its receivers to broadcast (``BallotLedger/publishBeacon(poll:payload:)``):
        // one row per poll, the payload its radio broadcasts now (frames the tally sealed and signed;
        // empty once it stopped), its serial and when it was written; a notification on channel
        // `clicker_beacon`, the poll's number as payload, at each write. Only the instructor's role
        // writes it; a receiver's role reads its poll's row.
        [
            """
            CREATE TABLE beacons (
                poll_id bigint PRIMARY KEY REFERENCES polls ON DELETE CASCADE,
                serial bigint NOT NULL,
                company_id integer NOT NULL CHECK (company_id BETWEEN 0 AND 65535),
                interval_us bigint NOT NULL CHECK (interval_us > 0),
                frames bytea NOT NULL,
                written_at timestamptz NOT NULL DEFAULT now())
            """,
            "ALTER TABLE beacons ENABLE ROW LEVEL SECURITY",
            "CREATE POLICY receiver_reads ON beacons FOR SELECT USING (poll_id IN (SELECT ledger_receiver_polls()))",
            """
            CREATE FUNCTION ledger_beacon_notify() RETURNS trigger LANGUAGE plpgsql AS
            'BEGIN PERFORM pg_notify(''clicker_beacon'', NEW.poll_id::text); RETURN NULL; END'
            """,
            "CREATE TRIGGER beacon_written AFTER INSERT OR UPDATE ON beacons FOR EACH ROW EXECUTE FUNCTION ledger_beacon_notify()",
        ],
    ]

    /// The version this build writes and reads.
    public static var version: Int { migrations.count }

    /// The channel of ``migrations``' version 4: one notification per poll and committed transaction
    /// that changed a counted ballot, the poll's number as payload.
    public static let channel = "clicker_ledger"

    /// The channel of ``migrations``' version 7: one notification per write of a poll's beacon, the
    /// poll's number as payload.
    public static let beaconChannel = "clicker_beacon"

    /// Any constant: the advisory lock migrations take, so that concurrent openers migrate one at a time.
    static let migrationLock: Int64 = 0x636C_6963_6B65_72   // "clicker"

    /// Brings the database to `target` (the current version unless a test asks for an older one) and
    /// returns the version it found. Throws `schemaTooNew` when the database is past this build.
    @discardableResult
    static func migrate(_ db: PostgresConnection, to target: Int = version) throws -> Int {
        try db.transaction {
            try db.execute("SELECT pg_advisory_xact_lock($1)", [.int(migrationLock)])
            // `IF NOT EXISTS` on a migrated database is not news: no NOTICE on the caller's stderr.
            try db.execute("SET LOCAL client_min_messages = warning")
            try db.execute("""
                CREATE TABLE IF NOT EXISTS ledger_schema_version (
                    version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
                """)
            let found = Int(try db.execute("SELECT coalesce(max(version), 0) FROM ledger_schema_version").rows.first?.int(0) ?? 0)
            guard found <= version else { throw LedgerError.schemaTooNew(database: found, known: version) }
            for v in stride(from: found + 1, through: min(target, version), by: 1) {
                for statement in migrations[v - 1] { try db.execute(statement) }
                try db.execute("INSERT INTO ledger_schema_version (version) VALUES ($1)", [.int(Int64(v))])
            }
            return found
        }
    }

    /// Checks, without changing anything, that the database is at this build's version: what a
    /// receiver does, whose role may read the schema but not change it.
    static func check(_ db: PostgresConnection) throws {
        let found = Int(try db.execute("SELECT coalesce(max(version), 0) FROM ledger_schema_version").rows.first?.int(0) ?? 0)
        guard found <= version else { throw LedgerError.schemaTooNew(database: found, known: version) }
        guard found == version else { throw LedgerError.schemaTooOld(database: found, known: version) }
    }
}
