import CLibPQ
#if canImport(Glibc)
import Glibc
#endif

/// One connection to a PostgreSQL server through libpq, PostgreSQL's own C client.
///
/// Synchronous, like ClickerStore's GRDB API: every call blocks its thread until the server answers,
/// so callers run it on a thread of their own (`OSThread`, a `ThreadExecutor`), never on Swift's
/// cooperative pool. A connection is used by one thread at a time (libpq's rule), hence not `Sendable`;
/// writers on several threads each open their own.
///
/// Statements go through `PQexecParams` with parameters in text format: values are never spliced
/// into the SQL text.
public final class PostgresConnection {
    private let handle: OpaquePointer

    /// Connects to `url` (`postgres://user:password@host:port/database?…`, or `postgresql://`; a
    /// `host` parameter naming a directory connects over that directory's unix socket). Blocks until
    /// the server answers or refuses; add `?connect_timeout=N` to bound the wait for a host that
    /// does not answer at all.
    public init(url: String) throws(PostgresError) {
        try Self.validate(url)
        guard let h = PQconnectdb(url) else { throw PostgresError(.connectionLost, "libpq could not allocate a connection") }
        guard PQstatus(h) == CONNECTION_OK else {
            let message = PostgresError.trimmed(PQerrorMessage(h).map { String(cString: $0) } ?? "")
            let needsPassword = PQconnectionNeedsPassword(h) == 1
            PQfinish(h)
            throw PostgresError(Self.startFailure(message, needsPassword: needsPassword), Self.redacted(message, url: url))
        }
        handle = h
    }

    deinit { PQfinish(handle) }

    /// Refuses what is not a `postgres://` or `postgresql://` URL libpq can parse, before any
    /// connection attempt (a key=value string would also connect, but the project names servers by URL).
    static func validate(_ url: String) throws(PostgresError) {
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
            throw PostgresError(.badURL, "it does not start with postgres:// or postgresql:// (postgres://user:password@host:port/database)")
        }
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &error) else {
            let message = redacted(error.map { PostgresError.trimmed(String(cString: $0)) } ?? "libpq could not parse it", url: url)
            if let error { PQfreemem(error) }
            throw PostgresError(.badURL, message)
        }
        PQconninfoFree(options)
    }

    /// `message` without the password of `url` (libpq quotes the URL in some of its complaints).
    static func redacted(_ message: String, url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return message }
        let authority = url[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" }
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return message }
        let password = String(authority[authority.index(after: colon)..<at])
        return password.isEmpty ? message : message.replacing(password, with: "***")
    }

    /// What a failed start-up was. libpq gives no SQLSTATE then, only its message: options it checks
    /// before connecting ("invalid integer value … for connection option \"port\"", "invalid sslmode
    /// value") are the URL's fault; the server's refusals of credentials (28P01, 28000) say so in words.
    static func startFailure(_ message: String, needsPassword: Bool) -> PostgresError.Kind {
        if message.hasPrefix("invalid ") { return .badURL }
        if needsPassword || message.contains("authentication failed") || message.contains("no pg_hba.conf entry")
            || message.contains("role \"") && message.contains("does not exist") {
            return .authentication
        }
        return .unreachable
    }

    /// Runs one statement with `parameters` bound to `$1`, `$2`, … and returns its rows (none for a
    /// command). A statement the server refuses throws `.sql(sqlState:)`.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresRows {
        var owned: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.textFormat.flatMap { strdup($0) } }
        defer { for p in owned { free(p) } }
        let values: [UnsafePointer<CChar>?] = owned.map { $0.map { UnsafePointer($0) } }
        let result = values.withUnsafeBufferPointer {
            PQexecParams(handle, sql, Int32($0.count), nil, $0.baseAddress, nil, nil, 0)
        }
        guard let result else { throw PostgresError(.connectionLost, lastError) }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return PostgresRows(result) }
        // 'C' is PG_DIAG_SQLSTATE (a character macro Swift does not import).
        let field = { (code: UInt8) in PQresultErrorField(result, Int32(code)).map { String(cString: $0) } }
        guard let state = field(UInt8(ascii: "C")) else {
            // libpq's own errors (a broken connection) carry no SQLSTATE.
            throw PostgresError(.connectionLost, PostgresError.trimmed(PQresultErrorMessage(result).map { String(cString: $0) } ?? lastError))
        }
        throw PostgresError(.sql(sqlState: state), field(UInt8(ascii: "M")) ?? lastError)
    }

    /// Runs `body` between BEGIN and COMMIT; any error rolls back and is rethrown.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
    }

    /// The server's version number (150018 for 15.18).
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    private var lastError: String { PostgresError.trimmed(PQerrorMessage(handle).map { String(cString: $0) } ?? "") }
}
