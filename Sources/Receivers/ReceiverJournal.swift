import ClickerLedger
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import GRDB

/// The receiver's local journal (SQLite through GRDB): every ballot the receiver counts is appended
/// here first, then shipped to the ledger, and deleted once the ledger has committed it. While the
/// database is out of reach the journal grows; when it is back the receiver ships what it holds, in
/// order. A ballot shipped and not yet deleted (a crash between the two) is shipped again, which the
/// ledger's upsert makes harmless (docs/LEDGER.md, "The ranking").
///
/// Synchronous: used on the writer's thread only (``LedgerShipper``).
final class ReceiverJournal: Sendable {
    let queue: DatabaseQueue

    /// Opens (or creates) the journal at `path`, readable by its owner only.
    init(path: String) throws(ReceiverError) {
        do {
            var config = Configuration()
            config.prepareDatabase { db in
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                // Shipped rows are overwritten with zeros, not left in the file's free pages.
                try db.execute(sql: "PRAGMA secure_delete = ON")
            }
            let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw ReceiverError.journal("cannot open \(path): \(String(cString: strerror(errno)))") }
            close(fd)
            queue = try DatabaseQueue(path: path, configuration: config)
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
            try queue.write { db in
                try db.execute(sql: """
                    CREATE TABLE IF NOT EXISTS journal (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        poll INTEGER NOT NULL, question INTEGER NOT NULL, mode INTEGER NOT NULL, voter INTEGER NOT NULL,
                        sequence INTEGER NOT NULL, answer BLOB NOT NULL, verified INTEGER NOT NULL,
                        heard_at INTEGER NOT NULL, address INTEGER NOT NULL)
                    """)
            }
        } catch let e as ReceiverError {
            throw e
        } catch {
            throw .journal("\(path): \(error)")
        }
    }

    /// Appends `ballots` in one transaction.
    func append(_ ballots: [LedgerBallot]) throws {
        try queue.write { db in
            let statement = try db.cachedStatement(sql: """
                INSERT INTO journal (poll, question, mode, voter, sequence, answer, verified, heard_at, address)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            for b in ballots {
                let (k, hi, lo) = b.answer.wireBytes
                try statement.execute(arguments: [b.poll, Int(b.question), Int(b.voter.mode.rawValue), Int64(b.voter.voterID),
                                                  Int(b.sequence), Data([k, hi, lo]), b.verified, b.heardAt,
                                                  Int64(bitPattern: b.address.rawValue)])
            }
        }
    }

    /// The oldest `limit` ballots not yet shipped, with the id of the last. A row that does not decode
    /// (which this build never writes) is skipped and counted in `undecodable`.
    func oldest(_ limit: Int) throws -> (ballots: [LedgerBallot], through: Int64?, undecodable: Int) {
        try queue.read { db in
            var out: [LedgerBallot] = []
            var last: Int64?
            var bad = 0
            let rows = try Row.fetchCursor(db, sql: "SELECT * FROM journal ORDER BY id LIMIT ?", arguments: [limit])
            while let r = try rows.next() {
                // Read as optionals: a row this build did not write is skipped, never trapped on.
                func int(_ column: String) -> Int64? { Int64.fromDatabaseValue(r[column] as DatabaseValue) }
                last = int("id") ?? last
                guard let answer = Data.fromDatabaseValue(r["answer"] as DatabaseValue).map(Array.init), answer.count == 3,
                      let a = Answer(wire: answer[0], answer[1], answer[2]),
                      let mode = int("mode").flatMap(UInt8.init(exactly:)).flatMap(BallotMode.init(rawValue:)),
                      let voter = int("voter").flatMap(UInt32.init(exactly:)), let poll = int("poll"),
                      let question = int("question").flatMap(UInt8.init(exactly:)),
                      let sequence = int("sequence").flatMap(UInt16.init(exactly:)),
                      let verified = int("verified"), let heardAt = int("heard_at"), let address = int("address") else {
                    bad += 1
                    continue
                }
                out.append(LedgerBallot(poll: poll, question: question, voter: VoterKey(mode: mode, voterID: voter),
                                        sequence: sequence, answer: a, verified: verified != 0, heardAt: heardAt,
                                        address: DeviceAddress(rawValue: UInt64(bitPattern: address))))
            }
            return (out, last, bad)
        }
    }

    /// Deletes the ballots up to and including `id`: the ledger has committed them.
    func shipped(through id: Int64) throws {
        try queue.write { db in try db.execute(sql: "DELETE FROM journal WHERE id <= ?", arguments: [id]) }
    }

    /// Ballots held, not yet shipped.
    func count() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM journal") ?? 0 }
    }
}
