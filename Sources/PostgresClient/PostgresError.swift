/// What went wrong talking to PostgreSQL, in words a person can act on.
public struct PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The URL is not a `postgres://` or `postgresql://` URL libpq can parse.
        case badURL
        /// No connection: the server is down, refuses connections, or cannot be found.
        case unreachable
        /// The server refused the credentials (wrong password, unknown role, no pg_hba.conf entry).
        case authentication
        /// The server ran the statement and refused it; `sqlState` is its five-character SQLSTATE
        /// (`23503` foreign key violation, `40P01` deadlock, …).
        case sql(sqlState: String)
        /// The connection broke or libpq returned something the client does not expect.
        case connectionLost
        /// A result value could not be read as the type asked for.
        case badValue
        /// PostgreSQL's client library (libpq) is not installed, or too old.
        case clientLibrary
    }

    public let kind: Kind
    /// libpq's or the server's message, trimmed to one paragraph.
    public let message: String
    /// Which statement of ``PostgresConnection/executeEach(_:_:round:)`` was refused (0 for the first).
    public var statement: Int?

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The SQLSTATE of a refused statement, or nil.
    public var sqlState: String? {
        if case .sql(let s) = kind { return s }
        return nil
    }

    public var description: String {
        switch kind {
        case .badURL: "bad PostgreSQL URL: \(message)"
        case .unreachable: "cannot connect to PostgreSQL: \(message)"
        case .authentication: "PostgreSQL refused the credentials: \(message)"
        case .sql(let state): "PostgreSQL error \(state): \(message)"
        case .connectionLost: "PostgreSQL connection failed: \(message)"
        case .badValue: "unexpected value from PostgreSQL: \(message)"
        case .clientLibrary: message
        }
    }

    /// libpq's messages end in a newline and may hold several lines ("connection to server at … failed:
    /// Connection refused\n\tIs the server running …"): one line, whitespace collapsed.
    static func trimmed(_ text: String) -> String {
        text.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
    }
}
