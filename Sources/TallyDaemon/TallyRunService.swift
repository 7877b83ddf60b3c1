import ClickerTransport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import TerminalView

/// How results are shown while a poll runs.
public enum ViewMode: Sendable {
    /// Full-screen live view on this terminal; `log`'s latest notice is shown on its status line.
    case live(TerminalSession, exportDirectory: String, log: LogRoute? = nil)
    /// Plain log lines through `write` (stdout not a terminal).
    case plain(@Sendable (String) -> Void)
    /// Plain log lines for a log others may read (the journal): the join secret is left out.
    case log(@Sendable (String) -> Void)
    /// Nothing while running (scripts that want only the final `--json`).
    case none
}

/// Runs a poll as a service: the radio feeds the controller, a view shows it, and the run ends on
/// SIGTERM/SIGINT (graceful shutdown), when the operator quits, or after `duration`.
/// Pending counters are committed before `run()` returns.
public struct TallyRunService: Service {
    public let controller: PollController
    public let central: any CentralTransport
    public let view: ViewMode
    public let duration: Duration?
    /// Students in a simulated room (`--simulate N`): the view says why fewer are counted.
    public let simulatedRoom: Int?
    /// Other work that lives as long as the poll (a simulated classroom, a D-Bus API).
    public let companions: [@Sendable () async -> Void]
    private let failure = FailureBox()
    private let logger: Logger

    public init(controller: PollController, central: any CentralTransport, view: ViewMode, duration: Duration? = nil,
                simulatedRoom: Int? = nil,
                companions: [@Sendable () async -> Void] = [], logger: Logger = Logger(label: "clicker.tally")) {
        self.simulatedRoom = simulatedRoom
        self.controller = controller
        self.central = central
        self.view = view
        self.duration = duration
        self.companions = companions
        self.logger = logger
    }

    /// The error that ended the radio for good, if any.
    public var radioFailure: (any Error)? { failure.error }

    public func run() async throws {
        let controller = self.controller, central = self.central, view = self.view
        let failure = self.failure, logger = self.logger, room = self.simulatedRoom
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    do {
                        try await controller.run(central: central)
                    } catch is CancellationError {
                    } catch {
                        logger.error("radio stopped: \(error)")
                        failure.set(error)
                    }
                }
                // A companion that ends early (a classroom that finished) must not end the run.
                for companion in companions { group.addTask { await companion(); await Self.untilShutdown() } }
                group.addTask {
                    switch view {
                    case .live(let terminal, let dir, let log):
                        await LiveView.run(controller, terminal: terminal, exportDirectory: dir,
                                           environment: ProcessInfo.processInfo.environment, log: log,
                                           simulatedRoom: room, clock: controller.clock)
                    case .plain(let write):
                        await PlainView.run(controller, simulatedRoom: room, clock: controller.clock, write: write)
                    case .log(let write):
                        await PlainView.run(controller, redactSecret: true, simulatedRoom: room, clock: controller.clock,
                                            write: write)
                    case .none:
                        await Self.untilShutdown()
                    }
                }
                if let d = duration {
                    group.addTask { try? await controller.clock.sleep(for: d) }
                }
                // The first to finish (quit key, duration, radio failure) ends the run.
                await group.next()
                group.cancelAll()
            }
        }
        await controller.flush()
        // The votes are committed: tell the voters the poll closed (a few seconds at most), then stop.
        await controller.endBeacon()
    }

    /// Returns at graceful shutdown or cancellation, whichever comes first.
    static func untilShutdown() async {
        try? await gracefulShutdown()
    }
}

/// Holds the error that ended the radio; written once from the radio task, read after the run.
final class FailureBox: Sendable {
    private let storage = Mutex<(any Error)?>(nil)
    func set(_ e: any Error) { storage.withLock { $0 = e } }
    var error: (any Error)? { storage.withLock { $0 } }
}
