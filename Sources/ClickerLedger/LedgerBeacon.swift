import ClickerTransport
import PostgresClient

/// The tally's beacon as the ledger holds it for the poll's receivers (schema version 7): the payload
/// the tally's radio broadcasts now, frames it sealed and signed, which a receiver broadcasts as they
/// are (docs/LEDGER.md, "The beacon from every receiver"). A receiver holds no key that makes a frame:
/// it can only repeat the tally's.
public struct LedgerBeacon: Sendable, Hashable {
    /// What to broadcast; nil once the tally stopped broadcasting.
    public var payload: BroadcastPayload?
    /// One more at each write: a reader that saw this serial has this payload.
    public var serial: Int64
    /// How long before the reading the tally wrote it, by the database's clock (so that a receiver's
    /// clock, set or not, does not decide whether the tally is still there).
    public var age: Duration

    public init(payload: BroadcastPayload?, serial: Int64, age: Duration) {
        self.payload = payload
        self.serial = serial
        self.age = age
    }

    /// The frames as the table stores them: each behind one byte of its length (frames are at most
    /// 251 bytes, the extended advertising data of one set). Nil for a frame that is empty or longer.
    public static func encode(_ frames: [[UInt8]]) -> [UInt8]? {
        var out: [UInt8] = []
        for f in frames {
            guard let n = UInt8(exactly: f.count), n > 0, n <= 251 else { return nil }
            out.append(n)
            out += f
        }
        return out
    }

    /// The frames of a stored value; nil when it is not what ``encode(_:)`` makes.
    public static func decode(_ bytes: [UInt8]) -> [[UInt8]]? {
        var frames: [[UInt8]] = [], i = 0
        while i < bytes.count {
            let n = Int(bytes[i])
            guard n > 0, n <= 251, i + 1 + n <= bytes.count else { return nil }
            frames.append(Array(bytes[(i + 1)...(i + n)]))
            i += 1 + n
        }
        return frames
    }
}

extension BallotLedger {
    /// Writes what the tally of `poll` broadcasts now (nil: it stopped), for its receivers; one
    /// statement, committed on return. The instructor's role: a receiver's may read the row, not write it.
    public func publishBeacon(poll: Int64, payload: BroadcastPayload?) throws(LedgerError) {
        guard let frames = LedgerBeacon.encode(payload?.frames ?? []) else {
            throw .database(PostgresError(.badValue, "a beacon frame of more than 251 bytes, or empty"))
        }
        let interval = payload.map { Int64($0.interval.components.seconds) * 1_000_000 + $0.interval.components.attoseconds / 1_000_000_000_000 }
        try Self.mapped {
            _ = try db.execute("""
                INSERT INTO beacons (poll_id, serial, company_id, interval_us, frames) VALUES ($1, 1, $2, $3, $4)
                ON CONFLICT (poll_id) DO UPDATE SET serial = beacons.serial + 1, company_id = EXCLUDED.company_id,
                    interval_us = EXCLUDED.interval_us, frames = EXCLUDED.frames, written_at = now()
                """, [.int(poll), .int(Int64(payload?.companyID ?? 0)), .int(max(1, interval ?? 1)), .bytes(frames)])
        }
    }

    /// The beacon of `poll` as the ledger has it; nil when the tally has written none (or this role may
    /// not read it). A stored value this build cannot read throws `badValue`.
    public func beacon(poll: Int64) throws(LedgerError) -> LedgerBeacon? {
        try Self.mapped {
            guard let row = try db.execute("""
                SELECT serial, company_id, interval_us, frames,
                       greatest(0, (extract(epoch FROM clock_timestamp() - written_at) * 1000000)::bigint)
                FROM beacons WHERE poll_id = $1
                """, [.int(poll)]).rows.first else { return nil }
            guard let frames = LedgerBeacon.decode(try row.bytes(3)), let company = UInt16(exactly: try row.int(1)) else {
                throw PostgresError(.badValue, "a beacon row this build cannot read")
            }
            let payload = frames.isEmpty ? nil
                : BroadcastPayload(companyID: company, frames: frames, interval: .microseconds(try row.int(2)))
            return LedgerBeacon(payload: payload, serial: try row.int(0), age: .microseconds(try row.int(4)))
        }
    }
}
