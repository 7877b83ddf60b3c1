#if canImport(Glibc)
import Glibc
#endif
import Hummingbird
import HummingbirdCore
import NIOCore
import ProjectorPage

/// What bounds the page server's connections, so that no number of them takes the tally down
/// (docs/SECURITY.md, "The projector page"): the connections it holds at once stay under its file
/// descriptor limit with room for the rest of the tally (database, D-Bus, radio, event loops), a
/// refused request's connection is closed once it is answered, and a connection left idle is closed
/// after `ProjectorServer.start`'s `idleTimeout`. Past the cap, new connections wait in the kernel's
/// accept queue (they cost the tally no descriptor) until one closes.
public enum ConnectionLimits {
    /// Descriptors kept for the rest of the tally whatever the page's connections.
    public static let reservedDescriptors = 128

    /// The process's soft limit on open files (RLIMIT_NOFILE), nil when it cannot be read or is unlimited.
    public static func descriptorLimit() -> Int? {
        #if canImport(Glibc)
        var l = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &l) == 0, l.rlim_cur != rlim_t.max else { return nil }
        return Int(clamping: l.rlim_cur)
        #else
        return nil
        #endif
    }

    /// The connections the server holds at once: `requested`, at most the descriptor limit less the
    /// reserve (and at least 8, so that a tiny limit still serves a projector).
    public static func connections(requested: Int, descriptors: Int? = descriptorLimit()) -> Int {
        guard let descriptors else { return max(1, requested) }
        return max(1, min(requested, max(8, descriptors - reservedDescriptors)))
    }
}

/// Thrown after a refused request was answered: Hummingbird then closes its connection.
struct RefusedConnection: Error {}

extension HTTPServerBuilder {
    /// HTTP/1.1 whose connections end after a refused request (403, 405; `ProjectorResponder.refusal`):
    /// a client without the token cannot hold a connection by sending one refused request after another.
    static func projector(access: ProjectorAccess, idleTimeout: Duration) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            HTTP1Channel(responder: { request, writer, channel in
                let refused = ProjectorResponder.refusal(of: request, access: access) != nil
                try await responder(request, writer, channel)
                if refused { throw RefusedConnection() }
            }, configuration: HTTP1Channel.Configuration(idleTimeout: TimeAmount(idleTimeout)))
        }
    }
}
