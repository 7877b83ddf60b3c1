import CLibPQ
#if canImport(Glibc)
import Glibc
#endif

/// A notification of a channel the connection listens to (`LISTEN channel`), as `NOTIFY` or
/// `pg_notify(channel, payload)` sent it when its transaction committed.
public struct PostgresNotification: Sendable, Hashable {
    public let channel: String
    public let payload: String
}

extension PostgresConnection {
    /// Waits until a notification arrives or `timeout` has passed, and returns what arrived (empty
    /// after the timeout, or when a signal interrupted the wait). Blocks its thread on the
    /// connection's socket: call it from a thread of its own. A connection the server ended throws
    /// `.connectionLost`.
    public func notifications(waitingUpTo timeout: Duration) throws(PostgresError) -> [PostgresNotification] {
        var arrived = takeNotifications()
        if !arrived.isEmpty { return arrived }
        let fd = PQsocket(handle)
        guard fd >= 0 else { throw PostgresError(.connectionLost, "the connection has no socket: \(lastError)") }
        let (seconds, atto) = timeout.components
        let milliseconds = Int32(clamping: max(0, seconds * 1000 + atto / 1_000_000_000_000_000))
        var socket = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&socket, 1, milliseconds)
        if ready < 0 {
            if errno == EINTR { return [] }
            throw PostgresError(.connectionLost, "poll: errno \(errno)")
        }
        guard ready > 0 else { return [] }
        guard PQconsumeInput(handle) == 1 else { throw PostgresError(.connectionLost, lastError) }
        arrived = takeNotifications()
        return arrived
    }

    /// The notifications libpq has read and not yet handed over.
    private func takeNotifications() -> [PostgresNotification] {
        var out: [PostgresNotification] = []
        while let n = PQnotifies(handle) {
            out.append(PostgresNotification(channel: String(cString: n.pointee.relname), payload: String(cString: n.pointee.extra)))
            PQfreemem(n)
        }
        return out
    }
}
