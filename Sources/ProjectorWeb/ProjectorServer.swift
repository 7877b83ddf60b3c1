import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import ProjectorPage
import TallyDaemon

/// The projector page's HTTP server (Hummingbird) for one poll: `start` binds the address and
/// returns once it listens (or throws why it cannot), `run` serves until cancelled, `stop` ends it.
/// Serving runs in a task of its own, so a tally can fail at once on a port in use, before its live
/// view takes the terminal.
public final class ProjectorServer: Sendable {
    /// The address it listens on, with the port the system picked when asked for port 0.
    public let address: ProjectorAddress
    public let access: ProjectorAccess
    /// Every browser's event stream is fed from here.
    public let fanOut: SnapshotFanOut
    private let services: ServiceGroup
    private let task: Task<Void, Never>
    /// The poll's clock: the feed's pacing and the stop's grace run on it.
    private let clock: PollClock

    private init(address: ProjectorAddress, access: ProjectorAccess, fanOut: SnapshotFanOut, services: ServiceGroup,
                 task: Task<Void, Never>, clock: PollClock) {
        self.address = address
        self.access = access
        self.fanOut = fanOut
        self.services = services
        self.task = task
        self.clock = clock
    }

    /// The page's URLs, with the token when one is needed (print them once, to the instructor): the
    /// address's own, or for a wildcard address (`0.0.0.0`, `::`) one per address of this machine,
    /// loopback last (`ProjectorAddress.urls`).
    public func urls(machineAddresses: [String] = MachineAddresses.current()) -> [String] {
        address.urls(token: access.token, machineAddresses: machineAddresses)
    }

    /// What serving the page beyond loopback gives away (docs/SECURITY.md, "The projector page"): the
    /// page is plain HTTP, so its URL's token and the join code it shows cross the network in clear.
    public static let plainHTTPWarning = "warning: the projector page is plain HTTP: anyone who can see this network's "
        + "traffic (the same Wi-Fi, a switch's mirror port) reads its token and the join code in clear, and can then "
        + "vote and open the page; serve it beyond this machine only on a network you trust"

    /// The first of `urls`: one another machine can open when there is one.
    public var url: String {
        urls().first ?? "http://\(address)/"
    }

    /// Starts serving `controller`'s page on `address`. Off loopback, `token` is required in every
    /// request (`ProjectorAccess`); on loopback no token is needed, but the request must name
    /// this machine as its host. The page's timers run on the poll's clock (`PollController.clock`).
    /// - Parameters:
    ///   - interval: at most one snapshot per interval while changes arrive.
    ///   - maxConnections: connections held at once, at most the file descriptor limit less
    ///     `ConnectionLimits.reservedDescriptors`; past it, new ones wait in the accept queue.
    ///   - idleTimeout: a connection that sends no complete request part for this long, with no
    ///     response under way, is closed, so that connections opened and left silent (without the
    ///     token, say) cannot hold every one of `maxConnections`. An open event stream is a response
    ///     under way: it is never cut by this (Hummingbird's `HTTPConnectionStateHandler`). A
    ///     refused request's connection is closed as soon as it is answered.
    public static func start(controller: PollController, address: ProjectorAddress, token: String?,
                             maxConnections: Int = 1024, interval: Duration = .milliseconds(100),
                             idleTimeout: Duration = .seconds(10),
                             logger: Logger = Logger(label: "clicker.web")) async throws(ProjectorServerError) -> ProjectorServer {
        if !address.isLoopback, token == nil { throw .tokenRequired(address) }
        let access = ProjectorAccess(token: token)
        let maxConnections = ConnectionLimits.connections(requested: maxConnections)
        let fanOut = SnapshotFanOut(maxSubscribers: max(1, maxConnections - 16))
        let feed = ProjectorFeed(controller: controller, fanOut: fanOut, interval: interval)
        // The page has a snapshot to show before the first browser comes.
        await feed.publishNow()
        var serverLogger = logger
        // Hummingbird's own start and stop lines are not the instructor's business.
        serverLogger.logLevel = max(logger.logLevel, .warning)
        let (bound, boundContinuation) = AsyncStream<Result<Int, any Error>>.makeStream()
        let app = Application(
            responder: ProjectorResponder(access: access, fanOut: fanOut),
            server: .projector(access: access, idleTimeout: idleTimeout),
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port),
                                                    availableConnectionsDelegate: MaximumAvailableConnections(maxConnections)),
            onServerRunning: { channel in boundContinuation.yield(.success(channel.localAddress?.port ?? address.port)) },
            logger: serverLogger)
        let services = ServiceGroup(configuration: ServiceGroupConfiguration(services: [app], logger: serverLogger))
        // Detached: the server's life is `run`'s and `stop`'s to end, not inherited from the caller's task.
        let task = Task.detached {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await feed.run() }
                group.addTask {
                    do { try await services.run() } catch { boundContinuation.yield(.failure(error)) }
                    boundContinuation.finish()
                }
                await group.next()
                group.cancelAll()
            }
            fanOut.finish()
        }
        for await result in bound {
            switch result {
            case .success(let port):
                return ProjectorServer(address: ProjectorAddress(host: address.host, port: port), access: access,
                                       fanOut: fanOut, services: services, task: task, clock: controller.clock)
            case .failure(let error):
                task.cancel()
                await task.value
                throw .cannotListen(address, "\(error)")
            }
        }
        task.cancel()
        await task.value
        throw .cannotListen(address, "the server stopped before it listened")
    }

    /// Serves until the calling task is cancelled, then stops (`stop`).
    public func run() async {
        await withTaskCancellationHandler {
            await task.value
        } onCancel: {
            Task { await self.stop() }
        }
        await stop()
    }

    /// Ends every event stream (each browser sees its stream end and reconnects after its `retry:`
    /// delay), lets the requests under way finish, closes the server and returns once it has stopped.
    /// Connections still busy after `grace` on the poll's clock (a browser that stopped reading) are cut.
    public func stop(grace: Duration = .seconds(2)) async {
        fanOut.finish()
        await services.triggerGracefulShutdown()
        let task = self.task, clock = self.clock
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await task.value }
            group.addTask {
                try? await clock.sleep(for: grace)
                task.cancel()
            }
            await group.next()
            group.cancelAll()
        }
        await task.value
    }
}

public enum ProjectorServerError: Error, Sendable, Equatable, CustomStringConvertible {
    case tokenRequired(ProjectorAddress)
    case cannotListen(ProjectorAddress, String)

    public var description: String {
        switch self {
        case .tokenRequired(let a): "the projector page on \(a) (off loopback) needs a token"
        case .cannotListen(let a, let why): "cannot serve the projector page on \(a): \(why)"
        }
    }
}
