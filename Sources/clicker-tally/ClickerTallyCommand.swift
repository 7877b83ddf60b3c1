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
                      Results.self, Export.self, RosterCommand.self],
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

/// Options shared by every command that runs a poll.
struct PollArguments: ParsableArguments {
    @Option(help: ArgumentHelp("Join code as shown to students, e.g. 4821-K7QXM-3PF9A (vote ID, then the secret in two groups of five), never used before. Default: a fresh random one.",
                               valueName: "code"))
    var joinCode: String?

    @Flag(help: "Continue the open poll (its join code, rule and votes) instead of starting a new one.")
    var resume = false

    @Option(help: ArgumentHelp("--resume refuses a poll that started more than this many hours ago.", valueName: "hours"))
    var resumeLimit: Double = 6

    @Option(name: .customLong("question"), help: "Question to open first, 1-255 (default 1; --resume: the open poll's).")
    var questionGiven: Int?
    /// Checked to be 1-255 by `validate()`.
    var firstQuestion: UInt8 { UInt8(clamping: questionGiven ?? 1) }

    @Option(help: ArgumentHelp("A question set: a YAML file of questions (README, \"Question sets\"); `n` opens the next. --resume: the open poll's.",
                               valueName: "file"))
    var questions: String?

    @OptionGroup var question: QuestionArguments

    /// Options of the first question (the simulated room answers among them).
    var options: Int { (try? question.spec(number: 1).options) ?? 4 }

    @Flag(help: "Count only a voter's first answer (default: the latest answer wins).")
    var firstResponseOnly = false

    @Flag(inversion: .prefixedNo, help: "Read anonymous ballots back over GATT and verify their signature, so an unverified copy cannot replace a verified vote (off: changes unverified).")
    var gattConfirm = true

    @Option(help: "Database file (default: clicker.sqlite in $STATE_DIRECTORY, else $XDG_STATE_HOME/clicker, else $HOME/.local/state/clicker).")
    var db: String?

    @Flag(help: "Keep nothing on disk (demos).")
    var noStore = false

    @Flag(help: "Roster poll: count only enrolled students (see `clicker-tally roster import`).")
    var roster = false

    func validate() throws {
        if questions != nil, question.given {
            throw ValidationError("--questions defines every question: leave out --kind, --options, --title, --range and --decimals")
        }
        _ = try question.spec(number: 1)
        if let q = questionGiven, !(1...255).contains(q) { throw ValidationError("--question is 1 to 255 (got \(q))") }
        if let j = joinCode {
            do { _ = try JoinCode(parsing: j) } catch { throw ValidationError("--join-code: \(error)") }
        }
        if roster && noStore { throw ValidationError("--roster needs the database (drop --no-store)") }
        if resume && joinCode != nil {
            throw ValidationError("--resume continues the open poll with its own join code: leave out --join-code")
        }
        if resume && noStore { throw ValidationError("--resume needs the database (drop --no-store)") }
        guard resumeLimit > 0, resumeLimit <= 24 * 7 else { throw ValidationError("--resume-limit is above 0, up to 168 hours") }
    }

    /// A new poll, or `--resume`.
    func start() throws -> PollStart {
        guard resume else { return .fresh }
        // What was said is checked against the open poll; what was not is taken from it.
        return .resume(maxAge: .seconds(Int64(resumeLimit * 3600)),
                       stated: ResumeFlags(options: question.optionsGiven.map { _ in options }, roster: roster ? true : nil,
                                           policy: firstResponseOnly ? .firstResponseOnly : nil,
                                           question: questionGiven.map { _ in firstQuestion },
                                           kind: question.kind == nil ? nil : (try? question.spec(number: 1))?.kinds.first,
                                           questionSet: try questions.map(readQuestionSet)))
    }

    func pollOptions(store: ClickerStore?) throws -> PollOptions {
        // With --resume the controller takes the open poll's code instead.
        let code = try joinCode.map { try JoinCode(parsing: $0) } ?? PollController.unusedJoinCode(store: store)
        var students: Roster?
        if roster {
            guard let store, let r = try RosterBook.load(from: store) else {
                throw Failure("no roster: import one first with `clicker-tally roster import FILE.csv`")
            }
            students = r
        }
        var options = PollOptions(joinCode: code, roster: students, policy: firstResponseOnly ? .firstResponseOnly : .latestWins,
                                  options: self.options, firstQuestion: firstQuestion, confirmByGATT: gattConfirm)
        if let questions {
            options.questionSet = try readQuestionSet(questions)
        } else {
            options.adHoc = try question.spec(number: firstQuestion)
        }
        return options
    }

    func openStore() throws -> ClickerStore? {
        noStore ? nil : try ClickerStore(path: db, durability: .normal, exclusive: true)
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
        let options = try poll.pollOptions(store: store)
        let controller: PollController
        do {
            controller = try PollController(options: options, store: store, start: try poll.start(), logger: logger)
        } catch { throw Failure("\(error)") }
        // Before the live view takes the terminal: a port in use is an error the instructor sees.
        let web = try await webArguments.start(controller: controller, logger: logger) { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }

        let opened: OpenedCentral
        do { opened = try await radio.open(kind, seed: room.seed, logger: logger) } catch {
            await web?.stop()
            throw Failure("\(error)")
        }
        var companions = room.companions(air: opened.air, controller: controller, options: poll.options,
                                         question: poll.firstQuestion, logger: logger)
        if let web { companions.append { await web.run() } }

        let view: ViewMode
        if !json, TerminalSession.isTerminal(STDOUT_FILENO), TerminalSession.isTerminal(STDIN_FILENO) {
            // Log lines must not land on the picture: to a file (or the journal) while it is up.
            let target = (try? route.divert(toFile: Self.logFile(store: store)))
                ?? (try? route.divert(toFile: NSTemporaryDirectory() + "clicker-tally-\(getpid()).log"))
            if let terminal = try? TerminalSession() {
                if let target { logger.notice("log lines go to \(target)") }
                // On the status line too, since the live view covers what was printed before it.
                if let web { logger.notice("projector page: \(web.url)") }
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

        let results = await controller.results()
        if let e = service.radioFailure, results.voters == 0 { throw Failure("radio failed: \(e)") }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(results), as: UTF8.self))
        } else {
            print(PollSummary.text(results, simulatedRoom: room.simulate))
        }
        if let e = service.radioFailure { throw Failure("radio failed: \(e)") }
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

/// Human summary printed at the end of a run.
enum PollSummary {
    static func text(_ r: PollResults, simulatedRoom: Int? = nil) -> String {
        let total = max(1, r.counts.values.reduce(0, +))
        var lines = ["vote \(IDText.vote(UInt16(clamping: r.voteID))) question \(r.question): \(r.voters) voters, \(r.changes) changed their answer"]
        var room = TallyViewModel(joinCode: "", voters: r.voters)
        room.simulatedRoom = simulatedRoom
        if let note = room.roomNote { lines.append("  " + note) }
        for (answer, n) in r.counts.sorted(by: { $0.key < $1.key }) {
            lines.append("  \(answer)  \(String(repeating: "#", count: n * 40 / total)) \(n)")
        }
        for line in r.results?.summaryLines ?? [] { lines.append("  " + line) }
        let rejected = r.rejected.filter { $0.value > 0 }.sorted { $0.key < $1.key }
        if !rejected.isEmpty {
            lines.append("  rejected: " + rejected.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        }
        return lines.joined(separator: "\n")
    }
}

/// A simulated room of students (demos, tests, the crash check).
struct SimulationArguments: ParsableArguments {
    @Option(help: "Simulate a room of N students on the simulated air (implies --radio sim).")
    var simulate: Int?

    @Option(help: "Seed of the simulated room and air.")
    var seed: UInt64 = 1

    @Option(help: "Speed of the simulated students: 10 makes them answer ten times sooner.")
    var simulateSpeed: Double = 1

    @Option(help: ArgumentHelp("After answering, simulated students keep changing answers so that about N votes/s arrive (load tests).",
                               valueName: "N"))
    var simulateChurn: Double?

    func validate() throws {
        if let c = simulateChurn, !(c > 0 && c <= 10_000) { throw ValidationError("--simulate-churn is above 0, up to 10000 votes/s") }
        if let n = simulate, !(0...5000).contains(n) { throw ValidationError("--simulate takes 0 to 5000 students") }
        guard simulateSpeed > 0, simulateSpeed <= 1000 else { throw ValidationError("--simulate-speed is above 0, up to 1000") }
    }

    /// The students' task, when a room is simulated on `air`.
    func companions(air: SimulatedAir?, controller: PollController, options: Int, question: UInt8,
                    logger: Logger) -> [@Sendable () async -> Void] {
        guard let n = simulate, let air else { return [] }
        var rng = SplitMix64(seed: seed)
        let room = Classroom(count: n, options: options, using: &rng)
        let scale = 1 / simulateSpeed
        logger.info("simulating \(room.students.count) students voting on the simulated air")
        let churn = simulateChurn
        let kindSeed = seed &+ 1
        // Each student keeps one radio for the whole run and answers every question the poll opens.
        let radios = RadioCache(air: air)
        return [{
            var current = await controller.question
            var code = await controller.joinCode
            var secret = PollSecret(deriving: code)  // scrypt: once per poll, not per question
            var kindRNG = SplitMix64(seed: kindSeed)
            while !Task.isCancelled {
                let q = current
                let now = await controller.joinCode
                if now != code { code = now; secret = PollSecret(deriving: code) }
                let s = secret
                // The room answers the question's kind, with its options (a set's question may have fewer).
                var asked = room
                let spec = await controller.spec
                if let kind = [Answer.Kind.choice, .multiSelect, .ranking, .trueFalse, .numeric].first(where: spec.kinds.contains) {
                    asked = room.answering(kind, options: spec.options,
                                           range: spec.numeric.map { $0.lowest...$0.highest } ?? 0...100, using: &kindRNG)
                }
                let students = Task { [asked] in
                    await asked.run(secret: s, question: q, timeScale: scale, churn: churn) { radios[$0] }
                }
                while !Task.isCancelled, current == q {
                    try? await Task.sleep(for: .milliseconds(200))
                    current = await controller.question
                }
                students.cancel()
                await students.value
            }
        }]
    }
}

/// One simulated radio per student, made on first use and reused for every question (the air keeps
/// a record of every device it has seen, so a fresh radio per question would grow it).
final class RadioCache: Sendable {
    private let air: SimulatedAir
    private let radios = Mutex<[Int: SimulatedPeripheral]>([:])

    init(air: SimulatedAir) { self.air = air }

    subscript(student: Int) -> SimulatedPeripheral {
        radios.withLock { r in
            if let p = r[student] { return p }
            let p = air.addPeripheral()
            r[student] = p
            return p
        }
    }
}
