import Foundation
import GRDB

/// A voter ID bound to the public key that signed its first verified ballot in a poll (trust on first
/// use). Kept while the poll is open, so that a restart verifies the same ballots; deleted when the
/// poll closes.
public struct VoterKeyRecord: Sendable, Hashable, Codable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "voter_key"

    public var poll: Int64
    /// The voter's ID (opaque bytes, as in ``BallotRecord/voter``).
    public var voter: Data
    /// The public key bound to it.
    public var publicKey: Data

    enum CodingKeys: String, CodingKey {
        case voter
        case poll = "poll_id", publicKey = "public_key"
    }

    public init(poll: Int64, voter: Data, publicKey: Data) {
        self.poll = poll
        self.voter = voter
        self.publicKey = publicKey
    }
}

extension ClickerStore {
    static func registerVoterKeyMigration(_ m: inout DatabaseMigrator) {
        m.registerMigration("voter-keys") { db in
            try db.execute(sql: """
                CREATE TABLE voter_key (
                    poll_id INTEGER NOT NULL REFERENCES poll(id) ON DELETE CASCADE,
                    voter BLOB NOT NULL,
                    public_key BLOB NOT NULL,
                    PRIMARY KEY (poll_id, voter)
                ) WITHOUT ROWID;
                """)
        }
    }

    /// The voter key bindings of a poll, by voter.
    public func voterKeys(poll: Int64) throws -> [VoterKeyRecord] {
        try pool.read { db in try Self.fetchVoterKeys(db, poll: poll) }
    }

    /// Stores a binding; the first one of a voter stays (a binding never changes during a poll).
    static func bind(_ db: Database, _ k: VoterKeyRecord) throws {
        do {
            try k.insert(db, onConflict: .ignore)
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_FOREIGNKEY {
            throw StoreError.unknownPoll(k.poll)
        }
    }

    static func fetchVoterKeys(_ db: Database, poll: Int64) throws -> [VoterKeyRecord] {
        try VoterKeyRecord.filter(Column("poll_id") == poll).order(Column("voter")).fetchAll(db)
    }

    static func deleteVoterKeys(_ db: Database, poll: Int64) throws {
        try db.execute(sql: "DELETE FROM voter_key WHERE poll_id = ?", arguments: [poll])
    }
}
