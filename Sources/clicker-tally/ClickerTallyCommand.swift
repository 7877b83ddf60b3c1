import ArgumentParser
import ClickerCommandLine
import Synchronization
import ClickerSim
import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import Logging
import ProjectorWeb
import ServiceLifecycle
import TallyDaemon
import TerminalView
import Voter

struct ClickerTallyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clicker-tally",
        abstract: "Count classroom votes from Bluetooth LE advertisements.",
        discussion: """
            With no subcommand it runs a poll in this terminal (`clicker-tally run`, whose options follow): it \
            picks a fresh join code, shows it large, and counts the votes that arrive. Every run starts a new \
            poll; `--resume` continues the open one (if it started less than --resume-limit hours ago). \
            `--simulate 300` fills the room with simulated students.

            """ + "\n" + runOptionsHelp,
        version: ClickerVersion.text(program: "clicker-tally"),
        subcommands: [Run.self, Daemon.self, Watch.self, Status.self, New.self, Open.self, Close.self, Next.self,
                      Results.self, Export.self, Polls.self, RosterCommand.self, Doctor.self, ReceiverCommand.self, LedgerCommand.self],
        // The default run is a subcommand, not the root's own options: a subcommand's `--json` or
        // `--question` must not be taken by the root (`results --json`).
        defaultSubcommand: Run.self
    )

    /// The default run's options, as `clicker-tally run --help` lists them, for the root's `--help`.
    static var runOptionsHelp: String {
        let help = Run.helpMessage(columns: 78)
        guard let start = help.range(of: "OPTIONS:") else { return "" }
        return help[start.lowerBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.contains("--help") }.joined(separator: "\n")
            .replacingOccurrences(of: "OPTIONS:", with: "OPTIONS OF THE DEFAULT RUN:")
    }
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run a poll here (the default: the same as no subcommand).")

    @OptionGroup var arguments: RunArguments

    func run() async throws { try await arguments.execute() }
}

/// The options of a run in this terminal (`clicker-tally` with no subcommand, or `clicker-tally run`).
struct RunArguments: ParsableArguments {
    @OptionGroup var poll: PollArguments
    @OptionGroup var radio: CentralRadioArguments

    @OptionGroup var room: SimulationArguments
    @OptionGroup var webArguments: WebArguments
    @OptionGroup var ledger: LedgerArguments

    @Option(parsing: .unconditional, help: ArgumentHelp("Stop after this many seconds and print the results.", valueName: "seconds"))
    var duration: Double?

    @Flag(help: "Print the final results as one JSON object on the last line of stdout.")
    var json = false

    @Option(help: ArgumentHelp("Where the export key writes its files. Default: the current directory.", valueName: "directory"))
    var exportDirectory: String?

    func validate() throws {
        if let d = duration, !(d > 0 && d <= 86_400) {
            throw ValidationError("--duration is above 0, up to 86400 seconds (got \(d))")
        }
    }

    func execute() async throws {
        let route = LogRoute()
        LoggingSystem.bootstrap { route.handler(label: $0) }
        var logger = Logger(label: "clicker.tally")
        logger.logLevel = .info
        let kind: RadioKind = room.simulate != nil ? .sim : radio.radio
        let store: ClickerStore?
        do { store = try poll.openStore() } catch { throw Failure("cannot open the database: \(error)") }
        let questionSet = try await poll.questionSet()
        let options = try poll.pollOptions(store: store, questionSet: questionSet, radio: kind)
        // A poll left open (a crash, a run that did not end it): the new poll closes it, and says so.
        let previousNote = poll.previousPollNote(in: store)
        let controller: PollController
        do {
            controller = try PollController(options: options, store: store, start: poll.start(questionSet: questionSet),
                                            logger: logger)
        } catch { throw Failure("\(error)") }
        if let previousNote { FileHandle.standardError.write(Data((previousNote + "\n").utf8)) }
        let link = try await ledger.link(controller, logger: logger)
        // Before the live view takes the terminal: a port in use is an error the instructor sees.
        let web = try await webArguments.start(controller: controller, logger: logger) { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        if let web { await controller.setProjectorURL("\(web.url)") }

        let opened: OpenedCentral
        do { opened = try await radio.open(kind, seed: room.seed, hall: try room.lectureHall(), logger: logger) } catch {
            await web?.stop()
            throw Failure("\(error)")
        }
        var companions = room.companions(air: opened.air, controller: controller, options: poll.options,
                                         question: poll.firstQuestion, logger: logger)
        if let web { companions.append { await web.run() } }
        if let link { companions.append { [logger] in await link.run(logger: logger) } }

        let view: ViewMode
        if !json, TerminalSession.isTerminal(STDOUT_FILENO), TerminalSession.isTerminal(STDIN_FILENO) {
            // Log lines must not land on the picture: to a file (or the journal) while it is up.
            let target = (try? route.divert(toFile: Self.logFile(store: store)))
                ?? (try? route.divert(toFile: NSTemporaryDirectory() + "clicker-tally-\(getpid()).log"))
            if let terminal = try? TerminalSession() {
                if let target { logger.notice("log lines go to \(target)") }
                // On the status line too, since the live view covers what was printed before it.
                if let web { logger.notice("projector page: \(web.url)") }
                if let previousNote { logger.notice("\(previousNote)") }
                view = .live(terminal, exportDirectory: exportDirectory ?? FileManager.default.currentDirectoryPath,
                             log: route)
            } else {
                route.restore()
                view = .plain { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
            }
        } else if json {
            view = .none
        } else {
            // Lines to a file or a pipe are a log: the join secret stays out of them.
            let write: @Sendable (String) -> Void = { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
            view = TerminalSession.isTerminal(STDOUT_FILENO) ? .plain(write) : .log(write)
        }
        let service = TallyRunService(controller: controller, central: opened.central, view: view,
                                      duration: duration.map { .milliseconds(Int64($0 * 1000)) },
                                      simulatedRoom: room.simulate, companions: companions, logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        await web?.stop()
        if case .live(let terminal, _, _) = view { terminal.restore() }
        if let file = route.restore() {
            FileHandle.standardError.write(Data("log lines of this run: \(file)\n".utf8))
        }
        await opened.close()
        if let link {
            let (status, caughtUp) = await link.finish()
            FileHandle.standardError.write(Data((PollSummary.ledger(status, caughtUp: caughtUp, poll: link.poll) + "\n").utf8))
        }

        if store != nil, await controller.exportedAt == nil {
            // Quitting without `e`: the files a graded poll needs were never written.
            let id = await controller.joinCode.voteID
            FileHandle.standardError.write(Data("""
                not exported: vote \(id) was never exported in this run; its votes are in the database: \
                clicker-tally export\(poll.db.map { " --db " + $0 } ?? "") --poll \(id) [DIRECTORY]\n
                """.utf8))
        }
        let results = await controller.results()
        if let e = service.radioFailure, results.voters == 0 { throw Failure("radio failed: \(e)") }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(results), as: UTF8.self))
        } else {
            // Every question asked, not only the last.
            for q in await controller.askedQuestions {
                let r = Int(q) == results.question ? results : await controller.results(question: q)
                print(PollSummary.text(r, simulatedRoom: room.simulate))
            }
        }
        if let e = service.radioFailure { throw Failure("radio failed: \(e)") }
        if let e = await controller.storageFailure { throw Failure(PollSummary.storageFailed(e)) }
    }

    /// Where the live view's log lines go: next to the database, else in the state directory if it
    /// exists, else in the temporary directory.
    static func logFile(store: ClickerStore?) -> String {
        let name = "clicker-tally.log"
        if let store { return (store.path as NSString).deletingLastPathComponent + "/" + name }
        if let dir = try? StoreLocation.defaultDirectory(environment: ProcessInfo.processInfo.environment),
           FileManager.default.fileExists(atPath: dir) {
            return dir + "/" + name
        }
        return NSTemporaryDirectory() + "clicker-tally-\(getpid()).log"
    }
}

