import ClickerTally
import ClickerTransport
import ClickerWire
import PostgresClient

/// A point in the ledger's history: what a reader had seen when it last read (a PostgreSQL snapshot,
/// in its text form). Transactions committed after it are the changes of the next read.
public struct LedgerSnapshot: Sendable, Hashable {
    let text: String
}

extension BallotLedger {
    /// The counted ballots of `poll` written by transactions that `since` did not see (every counted
    /// ballot of the poll when `since` is nil), and the snapshot to ask from next time.
    ///
    /// Exact whatever the order in which writers commit: a ballot is returned when the transaction
    /// that last wrote it is visible now and was not in `since` (migration 5 keeps that transaction
    /// with each ballot). Counters and sequences would miss a transaction that took its number
    /// before another but committed after it; snapshots do not. A ballot rewritten since is returned
    /// once, as it is now.
    public func changes(poll: Int64, since: LedgerSnapshot?) throws(LedgerError) -> (ballots: [LedgerBallot], next: LedgerSnapshot) {
        try Self.mapped {
            try db.transaction {
                // One snapshot for both statements: the one returned is the one the rows were read in.
                try db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                guard let now = try db.execute("SELECT pg_current_snapshot()::text").rows.first.map({ try $0.text(0) }) else {
                    throw PostgresError(.badValue, "no snapshot")
                }
                let rows = try db.execute("""
                    SELECT question, voter_mode, voter_id, sequence, answer, verified, heard_at, address FROM ballots
                    WHERE poll_id = $1 AND ($2::text IS NULL
                        OR (written_by >= pg_snapshot_xmin($2::pg_snapshot) AND NOT pg_visible_in_snapshot(written_by, $2::pg_snapshot)))
                    """, [.int(poll), since.map { .text($0.text) } ?? .null]).rows
                var out: [LedgerBallot] = []
                out.reserveCapacity(rows.count)
                for r in rows {
                    guard let q = UInt8(exactly: try r.int(0)), let mode = BallotMode(rawValue: UInt8(clamping: try r.int(1))),
                          let id = UInt32(exactly: try r.int(2)), let seq = UInt16(exactly: try r.int(3)) else {
                        throw PostgresError(.badValue, "a ballot row out of range")
                    }
                    out.append(LedgerBallot(poll: poll, question: q, voter: VoterKey(mode: mode, voterID: id), sequence: seq,
                                            answer: try Self.answer(r.bytes(4)), verified: try r.bool(5), heardAt: try r.int(6),
                                            address: try Self.address(r.bytes(7))))
                }
                return (out, LedgerSnapshot(text: now))
            }
        }
    }

    static func address(_ bytes: [UInt8]) throws(PostgresError) -> DeviceAddress {
        guard bytes.count == 6 else { throw PostgresError(.badValue, "an address of \(bytes.count) bytes") }
        return DeviceAddress(bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5])
    }
}
