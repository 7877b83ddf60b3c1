import ArgumentParser
import ClickerCommandLine
import BlueZ
import ClickerTransport
import ClickerWire
import ClickerStore
import DBus
import Foundation
import Logging
import ProjectorWeb
import Receivers
import ServiceLifecycle
import TallyDaemon
import TerminalView

/// Which bus the daemon API lives on.
struct BusArguments: ParsableArguments {
    @Option(help: "D-Bus to use: system (default, honours DBUS_SYSTEM_BUS_ADDRESS), session, or an address.")
    var bus: String = "system"

    var target: DBusBusTarget {
        switch bus {
        case "system": .system
        case "session": .session
        default: .address(bus)
        }
    }

    func remote() async throws -> RemotePoll {
        do { return try await RemotePoll.connect(target) } catch { throw Failure("\(error)") }
    }
}

/// `clicker-tally daemon`: the same poll, headless, owning org.clicker.Tally1 (systemd runs this).
struct Daemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run headless as a service: count votes and serve the org.clicker.Tally1 D-Bus API.")

    @OptionGroup var poll: PollArguments
    @OptionGroup var radio: CentralRadioArguments
    @OptionGroup var busArguments: BusArguments
    @OptionGroup var room: SimulationArguments
    @OptionGroup var webArguments: WebArguments
    @OptionGroup var ledger: LedgerArguments

    @Flag(help: ArgumentHelp("Continue the poll left open when --resume would take it (as after a restart or an upgrade), else close it and start a new one. The unit starts the daemon so."))
    var resumeOpen = false

    @Option(help: ArgumentHelp("Log a line of resource counters (tables, mirror, reports) every this many seconds; 0 never.",
                               visibility: .hidden))
    var logStatistics: Double = 0

    func validate() throws {
        if poll.noStore { throw ValidationError("the daemon always keeps its polls in the database: leave out --no-store") }
        if resumeOpen && poll.resume { throw ValidationError("--resume-open already continues the open poll when it can: leave out --resume") }
        if resumeOpen && poll.joinCode != nil {
            throw ValidationError("--resume-open continues the open poll with its own join code: leave out --join-code")
        }
    }

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let logger = Logger(label: "clicker.daemon")
        // The bus first: without it there is nothing to serve, and the database stays untouched.
        let connection: DBusConnection
        do { connection = try await DBusConnection.connect(busArguments.target) } catch {
            throw Failure(RemotePollError.noBus("\(error)").description)
        }
        let store: ClickerStore
        do { store = try ClickerStore(path: poll.db, durability: .normal, exclusive: true) } catch {
            connection.close()
            throw Failure("cannot open the database: \(error)")
        }
        let kind: RadioKind = room.simulate != nil ? .sim : radio.radio
        // A poll left open (a crash, a daemon stopped without closing it): the new poll closes it, and
        // the journal says which and how to read it, as a run's stderr does.
        var previousNote = poll.previousPollNote(in: store)
        let controller: PollController
        do {
            let questionSet = try await poll.questionSet()
            let options = try poll.pollOptions(store: store, questionSet: questionSet, radio: kind)
            var resuming = poll
            resuming.resume = true
            if resumeOpen, let resumed = try PollController.continuing(options: options, store: store,
                                                                        start: resuming.start(questionSet: questionSet), logger: logger) {
                controller = resumed
                previousNote = nil
                let (voteID, question) = (await resumed.joinCode.voteID, await resumed.question)
                logger.notice("continued the open poll \(IDText.vote(voteID)) at question \(question)")
            } else {
                controller = try PollController(options: options, store: store, start: poll.start(questionSet: questionSet), logger: logger)
            }
        } catch {
            connection.close()
            throw Failure("\(error)")
        }
        let exports = (store.path as NSString).deletingLastPathComponent + "/exports"
        let api: TallyBusService
        do {
            api = try await TallyBusService(controller: controller, connection: connection, exportDirectory: exports)
        } catch {
            connection.close()
            throw Failure("D-Bus: \(error)")
        }
        if let previousNote { logger.notice("\(previousNote)") }
        let link: TallyLedgerLink?
        do { link = try await ledger.link(controller, logger: logger) } catch {
            api.object.unexport()
            connection.close()
            throw error
        }
        let voteID = await controller.joinCode.voteID
        logger.info("serving \(TallyBus.name); poll \(IDText.vote(voteID)) open, database \(store.path)")
        // The URL goes to the journal once (with the token when off loopback: journal readers can open the page).
        let web: ProjectorServer?
        do { web = try await webArguments.start(controller: controller, logger: logger) { logger.notice("\($0)") } } catch {
            api.object.unexport()
            connection.close()
            throw error
        }
        let opened: OpenedCentral
        do { opened = try await radio.open(kind, seed: room.seed, hall: try room.lectureHall(), logger: logger,
                                          keepTrying: true) } catch {
            await web?.stop()
            throw Failure("\(error)")
        }
        var students = room.companions(air: opened.air, controller: controller, options: poll.options,
                                       question: poll.firstQuestion, logger: logger)
        if let web { students.append { await web.run() } }
        if let link { students.append { await link.run(logger: logger) } }
        let service = TallyRunService(
            controller: controller, central: opened.central,
            view: .log { logger.info("\($0)") }, simulatedRoom: room.simulate,
            companions: [{ await api.emitChanges(clock: controller.clock) }] + students + statisticsLog(controller, opened.central, logger),
            logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        await web?.stop()
        await opened.close()
        if let link {
            let (status, caughtUp) = await link.finish()
            logger.notice("\(PollSummary.ledger(status, caughtUp: caughtUp, poll: link.poll))")
        }
        api.object.unexport()
        connection.close()
        if let e = service.radioFailure { throw Failure("radio failed: \(e)") }
        if let e = await controller.storageFailure { throw Failure(PollSummary.storageFailed(e)) }
    }

    /// The `--log-statistics` companion: one `statistics {...}` line (JSON) per interval, read by
    /// Tests/soak/run.sh to follow the tables that must not grow with time.
    func statisticsLog(_ controller: PollController, _ central: any CentralTransport,
                       _ logger: Logger) -> [@Sendable () async -> Void] {
        guard logStatistics > 0 else { return [] }
        let every = Duration.milliseconds(Int64(max(0.1, logStatistics) * 1000))
        return [{
            while !Task.isCancelled {
                try? await controller.clock.sleep(for: every)
                let line = await StatisticsLine(controller: controller, central: central)
                logger.info("statistics \(line.json)")
            }
        }]
    }
}

/// One line of resource counters of the running daemon.
struct StatisticsLine: Encodable {
    var question: Int
    var footprint: PollFootprint
    var reports: Int
    var verifications: Int
    var cacheHits: Int
    var mirroredObjects: Int?
    var heardAddresses: Int?
    var staleDevicesRemoved: Int?
    var discoveryRestarts: Int?
    var acquisitions: Int?
    /// Reports the central dropped for a consumer too far behind, and bluetoothd's signals it could not parse.
    var droppedReports: Int?
    var rejectedSignals: Int?
    var heap: HeapUsage?

    init(controller: PollController, central: any CentralTransport) async {
        question = Int(await controller.question)
        footprint = await controller.footprint
        let stats = await controller.ingestStatistics
        reports = stats.reports
        verifications = stats.verifications
        cacheHits = stats.cacheHits
        heap = Allocator.usage()
        // Several adapters: the sums of their centrals.
        let merged = MergedCentral.of(central)
        let blueZ = merged.map { $0.members.compactMap { $0.central as? BlueZCentral } } ?? [central as? BlueZCentral].compactMap { $0 }
        if !blueZ.isEmpty {
            let all = blueZ.map(\.statistics)
            mirroredObjects = all.map(\.mirroredObjects).reduce(0, +)
            heardAddresses = all.map(\.heardAddresses).reduce(0, +)
            staleDevicesRemoved = all.map(\.staleDevicesRemoved).reduce(0, +)
            discoveryRestarts = all.map(\.discoveryRestarts).reduce(0, +)
            acquisitions = all.map(\.acquisitions).reduce(0, +)
            droppedReports = all.map(\.droppedReports).reduce(0, +)
            rejectedSignals = all.map(\.rejectedSignals).reduce(0, +)
        }
    }

    var json: String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys]
        return (try? e.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

/// `clicker-tally watch`: the live view of a running daemon.
struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Attach the live view to the running daemon.")
    @OptionGroup var busArguments: BusArguments

    func run() async throws {
        let remote = try await busArguments.remote()
        guard let terminal = try? TerminalSession() else { throw Failure("watch needs a terminal") }
        // Quitting only detaches from the daemon: no question to confirm.
        await LiveView.run(remote, terminal: terminal, exportDirectory: "",
                           environment: ProcessInfo.processInfo.environment, quitNeedsConfirmation: false,
                           clock: ContinuousClock())
    }
}

/// Script commands: one call each, `--json` for machine-readable output.
struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the daemon's poll status.")
    @OptionGroup var busArguments: BusArguments
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        let remote = try await busArguments.remote()
        let text = try await wrap { try await remote.statusJSON() }
        if json { print(text); return }
        guard let m = try? JSONDecoder().decode(TallyViewModel.self, from: Data(text.utf8)) else { print(text); return }
        // The instructor's own terminal: the code is shown (never in --json).
        print("join code \(try await wrap { try await remote.joinCode() })")
        print(PlainLineFormatter().statusLine(m))
    }
}

struct New: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "End the daemon's poll and start a new one with a fresh join code.")
    @OptionGroup var busArguments: BusArguments
    @Flag(help: "Print JSON (the vote ID only, never the join code).") var json = false
    func run() async throws {
        let remote = try await busArguments.remote()
        let voteID = try await wrap { try await remote.newPoll() }
        if json { print("{\"voteID\":\(voteID)}"); return }
        print("new poll, join code \(try await wrap { try await remote.joinCode() })")
    }
}

struct Open: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reopen the current question; with --kind (--options, --title, …), ask a new question while none is open.")
    @OptionGroup var busArguments: BusArguments
    @OptionGroup var question: QuestionArguments
    func run() async throws {
        let remote = try await busArguments.remote()
        guard question.given else { return try await wrap { try await remote.openQuestion() } }
        let q = try question.busArguments()
        let n = try await wrap { try await remote.ask(kind: q.kind, options: q.options, title: q.title, next: false) }
        print("question \(n) open")
    }
}

struct Close: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Close the current question.")
    @OptionGroup var busArguments: BusArguments
    func run() async throws {
        let remote = try await busArguments.remote()
        try await wrap { try await remote.closeQuestion() }
    }
}

struct Next: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Close the current question and open the next (of the question set; with --kind …, this ad-hoc question).")
    @OptionGroup var busArguments: BusArguments
    @OptionGroup var question: QuestionArguments
    @Flag(help: "Print JSON.") var json = false
    func run() async throws {
        let remote = try await busArguments.remote()
        let adHoc = question.given ? try question.busArguments() : nil
        let q = try await wrap {
            if let adHoc { return try await remote.ask(kind: adHoc.kind, options: adHoc.options, title: adHoc.title, next: true) }
            return try await remote.nextQuestion()
        }
        print(json ? "{\"question\":\(q)}" : "question \(q) open")
    }
}

struct Results: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the results of a question (of the daemon's poll, or with --db/--poll of any poll in the database).")
    @OptionGroup var busArguments: BusArguments
    @OptionGroup var storeArguments: StoreArguments
    @Option(help: "Question number (default: the current one; with --db/--poll: every question).") var question: Int?
    @Flag(help: "Print JSON (with --db/--poll: the export's JSON document, of the question asked or of every one).") var json = false
    func run() async throws {
        if let q = question, !(1...255).contains(q) { throw ValidationError("--question is 1 to 255 (got \(q))") }
        if storeArguments.direct {
            let store = try storeArguments.open()
            let poll = try storeArguments.record(in: store)
            do {
                print(json ? String(decoding: try store.export(poll: poll.id, question: question).json, as: UTF8.self)
                           : try StoreListing.results(poll, store: store, question: question))
            } catch {
                throw Failure("cannot read the database: \(error)")
            }
            return
        }
        let remote = try await busArguments.remote()
        let text = try await wrap { try await remote.resultsJSON(question: question) }
        if json { print(text); return }
        guard let r = try? JSONDecoder().decode(PollResults.self, from: Data(text.utf8)) else { print(text); return }
        print(PollSummary.text(r))
    }
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write CSV and JSON exports of the poll (the daemon's, or with --db/--poll any poll in the database).",
        discussion: """
            With --db or --poll the database is read directly: the summary CSV, the JSON, a roster poll's \
            ballots CSV and a ranked question's rounds CSV (the gradebooks and charts come from a running tally).
            """)
    @OptionGroup var busArguments: BusArguments
    @OptionGroup var storeArguments: StoreArguments
    @Argument(help: "Absolute directory the daemon writes to (default: its own exports directory; with --db/--poll: the current directory).")
    var directory: String = ""
    @Flag(help: "Print JSON.") var json = false
    func run() async throws {
        let files: [String]
        if storeArguments.direct {
            let store = try storeArguments.open()
            let poll = try storeArguments.record(in: store)
            let target = directory.isEmpty ? FileManager.default.currentDirectoryPath : directory
            do { files = try store.export(poll: poll.id, to: target) } catch { throw Failure("cannot export: \(error)") }
        } else {
            let remote = try await busArguments.remote()
            files = try await wrap { try await remote.export(to: directory) }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(files), as: UTF8.self))
        } else {
            files.forEach { print($0) }
        }
    }
}

/// Turns D-Bus errors into one clear line.
func wrap<T>(_ body: () async throws -> T) async throws -> T {
    do { return try await body() } catch let e as DBusError {
        throw Failure(e.name == DBusError.accessDenied
            ? "access denied: only members of the clicker group may control the daemon (\(e.message))"
            : e.message.isEmpty ? e.name : e.message)
    } catch let e as RemotePollError { throw Failure(e.description) }
}
