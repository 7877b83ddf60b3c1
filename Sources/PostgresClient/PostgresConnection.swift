import CLibPQ
import CLibPQLoader
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
/// Statements go through `PQexecParams` or, prepared once, `PQexecPrepared`, with parameters in text
/// format: values are never spliced into the SQL text.
public final class PostgresConnection {
    let handle: OpaquePointer

    /// Connects to `url` (`postgres://user:password@host:port/database?…`, or `postgresql://`; a
    /// `host` parameter naming a directory connects over that directory's unix socket). Blocks until
    /// the server answers or refuses, or `liveness` gives up on a host that does not answer; the
    /// URL's own `connect_timeout`, `keepalives*` and `tcp_user_timeout` take precedence.
    public init(url: String, liveness: ConnectionLiveness = .standard) throws(PostgresError) {
        try Self.validate(url)
        // Keywords are read in order and a later value wins; the URL, expanded from `dbname`, comes last.
        let parameters = liveness.parameters + [("dbname", url)]
        let owned = parameters.map { (strdup($0.0), strdup($0.1)) }
        defer { for (k, v) in owned { free(k); free(v) } }
        let keywords: [UnsafePointer<CChar>?] = owned.map { $0.0.map { UnsafePointer($0) } } + [nil]
        let values: [UnsafePointer<CChar>?] = owned.map { $0.1.map { UnsafePointer($0) } } + [nil]
        guard let h = PQconnectdbParams(keywords, values, 1) else {
            throw PostgresError(.connectionLost, "libpq could not allocate a connection")
        }
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
        try loadLibrary()
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(url, &error) else {
            let message = redacted(error.map { PostgresError.trimmed(String(cString: $0)) } ?? "libpq could not parse it", url: url)
            if let error { PQfreemem(error) }
            throw PostgresError(.badURL, message)
        }
        PQconninfoFree(options)
    }

    /// Loads libpq, once for the process (`clicker_pq_load`): every libpq call of this module comes
    /// after a connection's URL was validated, so after this.
    static func loadLibrary() throws(PostgresError) {
        var why = [CChar](repeating: 0, count: 256)
        guard clicker_pq_load(&why, UInt(why.count)) == 0 else {
            throw PostgresError(.clientLibrary, String(decoding: why.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }

    /// `message` without the password of `url`, where libpq quotes the URL in its complaints
    /// (`user:password@`; the rest of the message is left alone, so a short password such as `p`
    /// does not blot out every `p` of it).
    static func redacted(_ message: String, url: String) -> String {
        guard let scheme = url.firstRange(of: "://") else { return message }
        let authority = url[scheme.upperBound...].prefix { $0 != "/" && $0 != "?" }
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return message }
        let password = String(authority[authority.index(after: colon)..<at])
        return password.isEmpty ? message : message.replacing(":" + password + "@", with: ":***@")
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
        try run(.sql(sql), parameters)
    }

    /// Runs a statement prepared on this connection, as ``execute(_:_:)-(String,_)`` runs SQL text.
    @discardableResult
    public func execute(_ statement: PreparedStatement, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresRows {
        try run(.prepared(statement.name), parameters)
    }

    /// Parses and plans `sql` once, under `name`, for this connection's lifetime (a name used twice
    /// is refused, SQLSTATE 42P05): what runs it often saves the parsing and planning of each run.
    public func prepare(_ sql: String, as name: String) throws(PostgresError) -> PreparedStatement {
        guard let result = PQprepare(handle, name, sql, 0, nil) else { throw PostgresError(.connectionLost, lastError) }
        defer { PQclear(result) }
        if let failure = failure(of: result) { throw failure }
        return PreparedStatement(name: name)
    }

    /// Runs `statement` once for each list of parameters, sent together and answered together (libpq's
    /// pipeline mode, in rounds of at most `round` statements so that neither side's socket buffer
    /// fills while the other waits): one round trip a round instead of one a statement. Outside a
    /// transaction each round commits as one (PostgreSQL's implicit transaction up to a pipeline's
    /// sync), so a refused statement undoes its round, and the rounds after it are not sent. It
    /// throws with its position in ``PostgresError/statement``.
    public func executeEach(_ statement: PreparedStatement, _ parameterLists: [[PostgresValue]], round: Int = 100) throws(PostgresError) {
        var start = 0
        while start < parameterLists.count {
            let end = min(start + max(1, round), parameterLists.count)
            try pipeline(statement.name, parameterLists[start..<end])
            start = end
        }
    }

    private enum Command {
        case sql(String)
        case prepared(String)
    }

    private func run(_ command: Command, _ parameters: [PostgresValue]) throws(PostgresError) -> PostgresRows {
        let result = Self.withCStrings(parameters) { values in
            switch command {
            case .sql(let sql): PQexecParams(handle, sql, Int32(values.count), nil, values.baseAddress, nil, nil, 0)
            case .prepared(let name): PQexecPrepared(handle, name, Int32(values.count), values.baseAddress, nil, nil, 0)
            }
        }
        guard let result else { throw PostgresError(.connectionLost, lastError) }
        defer { PQclear(result) }
        if let failure = failure(of: result) { throw failure }
        return PostgresRows(result)
    }

    private func pipeline(_ name: String, _ lists: ArraySlice<[PostgresValue]>) throws(PostgresError) {
        guard PQenterPipelineMode(handle) == 1 else { throw PostgresError(.connectionLost, "cannot enter pipeline mode: \(lastError)") }
        defer { PQexitPipelineMode(handle) }
        var sent = 0
        for parameters in lists {
            let ok = Self.withCStrings(parameters) { PQsendQueryPrepared(handle, name, Int32($0.count), $0.baseAddress, nil, nil, 0) }
            guard ok == 1 else { break }
            sent += 1
        }
        guard PQpipelineSync(handle) == 1 else { throw PostgresError(.connectionLost, lastError) }
        // Every result is read, up to the sync, whatever failed: the connection stays usable.
        var first: PostgresError?
        for i in 0..<sent {
            guard let result = PQgetResult(handle) else { throw PostgresError(.connectionLost, lastError) }
            if first == nil, PQresultStatus(result) != PGRES_PIPELINE_ABORTED, var failure = failure(of: result) {
                failure.statement = lists.startIndex + i
                first = failure
            }
            PQclear(result)
            while let extra = PQgetResult(handle) { PQclear(extra) }   // the end of this statement's results
        }
        guard let sync = PQgetResult(handle) else { throw PostgresError(.connectionLost, lastError) }
        PQclear(sync)
        if let first { throw first }
        guard sent == lists.count else { throw PostgresError(.connectionLost, lastError) }
    }

    /// The error a result reports, or nil for a successful command or query.
    private func failure(of result: OpaquePointer) -> PostgresError? {
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return nil }
        // 'C' is PG_DIAG_SQLSTATE (a character macro Swift does not import).
        let field = { (code: UInt8) in PQresultErrorField(result, Int32(code)).map { String(cString: $0) } }
        guard let state = field(UInt8(ascii: "C")) else {
            // libpq's own errors (a broken connection) carry no SQLSTATE.
            return PostgresError(.connectionLost, PostgresError.trimmed(PQresultErrorMessage(result).map { String(cString: $0) } ?? lastError))
        }
        return PostgresError(.sql(sqlState: state), field(UInt8(ascii: "M")) ?? lastError)
    }

    /// `parameters` in text format as C strings for the length of `body`.
    private static func withCStrings<R>(_ parameters: [PostgresValue], _ body: (UnsafeBufferPointer<UnsafePointer<CChar>?>) -> R) -> R {
        let owned: [UnsafeMutablePointer<CChar>?] = parameters.map { $0.textFormat.flatMap { strdup($0) } }
        defer { for p in owned { free(p) } }
        let values: [UnsafePointer<CChar>?] = owned.map { $0.map { UnsafePointer($0) } }
        return values.withUnsafeBufferPointer(body)
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

    /// The connection's options as libpq settled them (keyword → value; options without a value left out).
    public var options: [String: String] {
        guard let list = PQconninfo(handle) else { return [:] }
        defer { PQconninfoFree(list) }
        var out: [String: String] = [:]
        var p = list
        while let keyword = p.pointee.keyword {
            if let value = p.pointee.val { out[String(cString: keyword)] = String(cString: value) }
            p += 1
        }
        return out
    }

    /// The connection's socket (for its options; reading or writing it would confuse libpq).
    public var socket: Int32 { PQsocket(handle) }

    /// The server's version number (150018 for 15.18).
    public var serverVersion: Int { Int(PQserverVersion(handle)) }

    var lastError: String { PostgresError.trimmed(PQerrorMessage(handle).map { String(cString: $0) } ?? "") }
}

/// A statement prepared on one connection (``PostgresConnection/prepare(_:as:)``), run by name.
public struct PreparedStatement: Sendable, Hashable {
    public let name: String
}
