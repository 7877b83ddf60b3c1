import CLibPQ

/// A statement parameter, sent in PostgreSQL's text format.
public enum PostgresValue: Sendable, Hashable {
    case null
    case int(Int64)
    case bool(Bool)
    case text(String)
    /// A `bytea` value (sent as `\x` and hex digits).
    case bytes([UInt8])

    /// The value in PostgreSQL's text format; nil for NULL.
    var textFormat: String? {
        switch self {
        case .null: nil
        case .int(let v): String(v)
        case .bool(let b): b ? "t" : "f"
        case .text(let s): s
        case .bytes(let b): "\\x" + b.map { hexDigits[Int($0 >> 4)] + hexDigits[Int($0 & 15)] }.joined()
        }
    }
}

private let hexDigits = (0..<16).map { String($0, radix: 16) }

/// The rows of a result, copied out of libpq's result (which is freed at once), values as text.
public struct PostgresRows: Sendable, Hashable {
    public let rows: [PostgresRow]
    /// Rows a command touched (INSERT, UPDATE, DELETE), 0 for others.
    public let affected: Int

    init(_ result: OpaquePointer) {
        let n = Int(PQntuples(result)), columns = Int(PQnfields(result))
        rows = (0..<n).map { r in
            PostgresRow(values: (0..<columns).map { c in
                PQgetisnull(result, Int32(r), Int32(c)) == 1 ? nil
                    : PQgetvalue(result, Int32(r), Int32(c)).map { String(cString: $0) }
            })
        }
        affected = PQcmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
    }
}

/// One row: its columns' values in text format (nil for NULL), read by typed accessors that throw
/// `.badValue` instead of trapping.
public struct PostgresRow: Sendable, Hashable {
    public let values: [String?]

    public func text(_ column: Int) throws(PostgresError) -> String {
        guard column >= 0, column < values.count else { throw PostgresError(.badValue, "no column \(column)") }
        guard let v = values[column] else { throw PostgresError(.badValue, "column \(column) is NULL") }
        return v
    }

    public func int(_ column: Int) throws(PostgresError) -> Int64 {
        let t = try text(column)
        guard let v = Int64(t) else { throw PostgresError(.badValue, "column \(column) is not an integer: \(t.prefix(40))") }
        return v
    }

    public func bool(_ column: Int) throws(PostgresError) -> Bool {
        switch try text(column) {
        case "t": return true
        case "f": return false
        case let t: throw PostgresError(.badValue, "column \(column) is not a boolean: \(t.prefix(40))")
        }
    }

    /// A `bytea` column in the server's default hex output (`\x0102…`).
    public func bytes(_ column: Int) throws(PostgresError) -> [UInt8] {
        let t = Array(try text(column).utf8)
        guard t.count >= 2, t[0] == UInt8(ascii: "\\"), t[1] == UInt8(ascii: "x"), t.count % 2 == 0 else {
            throw PostgresError(.badValue, "column \(column) is not bytea in hex output")
        }
        var out: [UInt8] = []
        out.reserveCapacity((t.count - 2) / 2)
        var i = 2
        while i < t.count {
            guard let hi = nibble(t[i]), let lo = nibble(t[i + 1]) else {
                throw PostgresError(.badValue, "column \(column) holds a bad hex digit")
            }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
