import ClickerTally
import PostgresClient

/// What a receiver token is: a database role of its own and its password, made for one poll.
/// Row-level security (schema version 3) lets the role read that poll, its questions and its beacon
/// (version 7) and write that poll's ballots, while its row in `ledger_receivers` exists and its time
/// has not run out; closing the poll drops the role. Its login expires with it too (`VALID UNTIL`).
public struct ReceiverToken: Sendable, Hashable {
    public let role: String
    public let password: String

    /// `url` (the instructor's) with this token's role and password in place of its credentials:
    /// the URL a receiver is given.
    public func url(replacingCredentialsOf url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let hostStart = rest[..<authorityEnd].lastIndex(of: "@").map { rest.index(after: $0) } ?? rest.startIndex
        return String(url[..<scheme.upperBound]) + "\(role):\(password)@" + String(rest[hostStart...])
    }
}

/// The poll a receiver's token is for, as the ledger says.
public struct ReceiverPoll: Sendable, Hashable {
    public var poll: Int64
    public var voteID: UInt16
    public var policy: ChangePolicy

    public init(poll: Int64, voteID: UInt16, policy: ChangePolicy) {
        self.poll = poll
        self.voteID = voteID
        self.policy = policy
    }
}

extension BallotLedger {
    /// Makes a receiver token for `poll` (registered and not closed), valid until `validUntil`
    /// (seconds since the Unix epoch) or until the poll is closed, whichever comes first. The
    /// instructor's role must be allowed to create roles (CREATEROLE, or a superuser).
    public func issueReceiverToken(poll: Int64, validUntil: Int64) throws(LedgerError) -> ReceiverToken {
        var random = SystemRandomNumberGenerator()
        let token = ReceiverToken(role: "clicker_receiver_" + Self.hex(16, using: &random), password: Self.hex(32, using: &random))
        try Self.mapped {
            try db.transaction {
                let open = try db.execute("SELECT 1 FROM polls WHERE poll_id = $1 AND closed_at IS NULL FOR UPDATE", [.int(poll)])
                guard !open.rows.isEmpty else { throw LedgerError.pollClosed(poll: poll) }
                // The time as PostgreSQL writes it; role, password and time are this function's own hex
                // digits and the server's digits, so spelling them into the statement is safe (CREATE
                // ROLE takes no parameters).
                let until = try db.execute("SELECT to_char(to_timestamp($1) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')",
                                           [.int(validUntil)]).rows.first?.text(0) ?? ""
                try db.execute("CREATE ROLE \(token.role) LOGIN PASSWORD '\(token.password)' VALID UNTIL '\(until)+00'")
                try db.execute("GRANT SELECT ON ledger_schema_version, ledger_receivers, polls, questions, beacons TO \(token.role)")
                try db.execute("GRANT SELECT, INSERT, UPDATE ON ballots, ballot_spans TO \(token.role)")
                try db.execute("INSERT INTO ledger_receivers (role_name, poll_id, valid_until) VALUES ($1, $2, to_timestamp($3))",
                               [.text(token.role), .int(poll), .int(validUntil)])
            }
        }
        return token
    }

    /// Closes `poll`: it takes no new receiver token, every token made for it stops working (its role
    /// is dropped and its open connections are ended). Returns how many tokens it revoked.
    @discardableResult
    public func close(poll: Int64) throws(LedgerError) -> Int {
        let (roles, sessions): ([String], [Int64]) = try Self.mapped {
            try db.transaction {
                try db.execute("UPDATE polls SET closed_at = coalesce(closed_at, now()) WHERE poll_id = $1", [.int(poll)])
                let roles = try db.execute("DELETE FROM ledger_receivers WHERE poll_id = $1 RETURNING role_name", [.int(poll)])
                    .rows.map { try $0.text(0) }
                var sessions: [Int64] = []
                for role in roles {
                    // Spelled into the statements below: only a name this code makes is accepted.
                    guard role.hasPrefix("clicker_receiver_"), role.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || (97...122).contains($0)
                                                                                        || (48...57).contains($0) }) else {
                        throw PostgresError(.badValue, "a receiver role not made by clicker: \(role.prefix(80))")
                    }
                    sessions += try db.execute("SELECT pid FROM pg_stat_activity WHERE usename = $1", [.text(role)]).rows.map { try $0.int(0) }
                    try db.execute("DROP OWNED BY \(role)")
                    try db.execute("DROP ROLE \(role)")
                }
                return (roles, sessions)
            }
        }
        // After the commit: a session the role still has is ended (its statements were refused already).
        for pid in sessions { _ = try? db.execute("SELECT pg_terminate_backend($1)", [.int(pid)]) }
        return roles.count
    }

    /// The poll this connection's receiver token is for; `tokenNotValid` when its poll was closed or
    /// its time ran out.
    public func receiverPoll() throws(LedgerError) -> ReceiverPoll {
        try Self.mapped {
            let rows = try db.execute("""
                SELECT p.poll_id, p.vote_id, p.change_policy FROM polls p
                WHERE p.poll_id IN (SELECT ledger_receiver_polls())
                """).rows
            guard rows.count == 1, let row = rows.first else { throw LedgerError.tokenNotValid }
            guard let voteID = UInt16(exactly: try row.int(1)), let policy = ChangePolicy(rawValue: try row.text(2)) else {
                throw PostgresError(.badValue, "a poll row out of range")
            }
            return ReceiverPoll(poll: try row.int(0), voteID: voteID, policy: policy)
        }
    }

    static func hex(_ bytes: Int, using random: inout some RandomNumberGenerator) -> String {
        let digits = Array("0123456789abcdef")
        return String((0..<bytes).flatMap { _ in
            let b = UInt8.random(in: .min ... .max, using: &random)
            return [digits[Int(b >> 4)], digits[Int(b & 15)]]
        })
    }
}
