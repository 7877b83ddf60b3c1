/// How long a connection waits on a network that stops answering, unless its URL says otherwise.
///
/// libpq's own defaults wait for ever to connect to a host that drops packets, and leave a broken
/// connection's statement waiting until the kernel gives up retransmitting (about 15 minutes on Linux).
/// A receiver or a tally on a lecture hall's network would hang that long before its journal's retry
/// took over. These values end both waits within seconds; a URL parameter of the same name
/// (`?connect_timeout=30`, `?keepalives=0`, …) takes precedence. They apply to TCP connections only:
/// libpq ignores them for a unix socket.
public struct ConnectionLiveness: Sendable, Equatable {
    /// Seconds to wait for the server to answer a connection (`connect_timeout`; libpq's least is 2).
    public var connectTimeout: Int
    /// Seconds of silence before TCP probes an idle connection (`keepalives_idle`).
    public var keepaliveIdle: Int
    /// Seconds between probes (`keepalives_interval`).
    public var keepaliveInterval: Int
    /// Unanswered probes before the connection counts as dead (`keepalives_count`).
    public var keepaliveCount: Int
    /// Milliseconds that sent data may stay unacknowledged before the connection counts as dead
    /// (`tcp_user_timeout`): this ends a statement waiting on a network that went silent mid-call.
    public var userTimeoutMilliseconds: Int

    public init(connectTimeout: Int, keepaliveIdle: Int, keepaliveInterval: Int, keepaliveCount: Int, userTimeoutMilliseconds: Int) {
        self.connectTimeout = connectTimeout
        self.keepaliveIdle = keepaliveIdle
        self.keepaliveInterval = keepaliveInterval
        self.keepaliveCount = keepaliveCount
        self.userTimeoutMilliseconds = userTimeoutMilliseconds
    }

    /// 10 s to connect; a silent connection is found dead within 25 s idle (10 + 3 × 5) or 20 s
    /// with data unacknowledged.
    public static let standard = ConnectionLiveness(connectTimeout: 10, keepaliveIdle: 10, keepaliveInterval: 5, keepaliveCount: 3,
                                                    userTimeoutMilliseconds: 20_000)

    /// libpq's keywords and values, in the order `PQconnectdbParams` takes them before the URL.
    var parameters: [(String, String)] {
        [("connect_timeout", "\(connectTimeout)"), ("keepalives", "1"), ("keepalives_idle", "\(keepaliveIdle)"),
         ("keepalives_interval", "\(keepaliveInterval)"), ("keepalives_count", "\(keepaliveCount)"),
         ("tcp_user_timeout", "\(userTimeoutMilliseconds)")]
    }
}
