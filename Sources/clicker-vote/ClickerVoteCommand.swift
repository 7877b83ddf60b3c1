import ArgumentParser
import ClickerCommandLine
import ClickerSim
import ClickerTransport
import ClickerWire
#if canImport(FoundationEssentials)
import FoundationEssentials   // not Foundation: it would bring ICU's 34 MB of data into the binary
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HCI
import Logging
import ServiceLifecycle
import Voter

struct ClickerVoteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clicker-vote",
        abstract: "Cast a classroom vote over Bluetooth LE.",
        discussion: """
            clicker-vote 4821-ABCDE-FGHJK   follows the tally's beacon: it shows the open question, \
            takes your answers from stdin (checked against the question) and says when your vote is \
            counted; after the instructor moves on it shows the next question. \
            clicker-vote 4821-ABCDE-FGHJK B   does the same and answers B to the first question that \
            takes it. In a roster (graded) poll add --roster. Ctrl-C or SIGTERM stops advertising cleanly.

            When stdout is not a terminal it prints one line per change: waiting, no-beacon, \
            question N KIND OPTIONS [TITLE], sending X, counted X, not-offered X, question-closed N, \
            poll-closed, roster-mismatch; log lines go to stderr (on a terminal only with --verbose).

            clicker-vote --question 2 4821-ABCDE-FGHJK B   answers question 2 without the beacon (a tally \
            that does not beacon); type another answer to change it.

            """ + "\n" + castOptionsHelp,
        version: ClickerVersion.text(program: "clicker-vote"),
        subcommands: [Cast.self, Enroll.self, Doctor.self],
        defaultSubcommand: Cast.self
    )

    /// The vote's options, as `clicker-vote cast --help` lists them, for the root's `--help`: a student
    /// types `clicker-vote --help` and must see `--roster` and `--radio`.
    static var castOptionsHelp: String {
        let help = Cast.helpMessage(columns: 78)
        guard let start = help.firstRange(of: "OPTIONS:") else { return "" }
        return help[start.lowerBound...].split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.contains("--help") }.joined(separator: "\n")
            .replacing("OPTIONS:", with: "OPTIONS OF THE VOTE (the default command):")
    }
}

struct Cast: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Vote (the default).")

    @OptionGroup var vote: VoteArguments

    @Option(help: "Advertising interval in milliseconds (20-10240).")
    var intervalMs: Int = 100

    @OptionGroup var radio: PeripheralRadioArguments

    @Flag(help: "Log lines on stderr even when stdout is a terminal (they always go there when it is not).")
    var verbose = false

    func validate() throws {
        guard (20...10_240).contains(intervalMs) else { throw ValidationError("--interval-ms must be 20 to 10240") }
    }

    func run() async throws {
        // A student's terminal shows sentences; log lines are for scripts (stderr) and --verbose.
        let quiet = isatty(STDOUT_FILENO) == 1 && !verbose
        LoggingSystem.bootstrap { label in
            if quiet { return SwiftLogNoOpLogHandler() }
            var handler = StreamLogHandler.standardError(label: label)
            if verbose { handler.logLevel = .debug }
            return handler
        }
        let logger = Logger(label: "clicker.vote")
        let code = try JoinCode(parsing: vote.joinCode)
        let parse = try vote.parser()
        let state: StateDirectory
        let identity: DeviceKey
        do {
            state = try StateDirectory.standard(environment: ProcessInfo.processInfo.environment)
            identity = try await DeviceIdentity.load(in: state)
        } catch { throw Failure("\(error)") }
        let transport: any PeripheralTransport
        do { transport = try await radio.open(logger: logger) } catch { throw Failure.radio(error) }
        let secret = PollSecret(deriving: code)  // scrypt, once per run
        guard !vote.followsBeacon, let answerText = vote.answer else {
            return try await follow(secret: secret, identity: identity, state: state, transport: transport, logger: logger)
        }
        let first = try parse(answerText)
        let session = VoterSession(secret: secret, question: vote.question, identity: identity, roster: vote.roster,
                                   transport: transport, state: state,
                                   interval: .milliseconds(intervalMs), logger: logger)
        let service = VoterService(session: session, first: first, lines: InputLines.stream(), report: say, logger: logger,
                                   parse: parse)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        // A first cast that fails ends the service with its error, which the group rethrows.
        do { try await group.run() } catch { throw Failure("\(error)") }
    }
}

extension Cast {
    /// `clicker-vote <join-code>`: follows the beacon (docs/PROTOCOL.md §11.10). On a terminal a
    /// sentence per change; otherwise one stable line per change (docs/GUIDE.md lists them).
    func follow(secret: PollSecret, identity: DeviceKey, state: StateDirectory, transport: any PeripheralTransport,
                logger: Logger) async throws {
        let terminal = isatty(STDOUT_FILENO) == 1
        var radio: any PeripheralTransport = transport
        // A restarted tally hosts a new simulated air: the voter joins it (ReopeningRadio).
        if self.radio.radio == .sim, let listening = transport as? ReopeningRadio.Radio {
            let path = self.radio.air
            radio = ReopeningRadio(listening, logger: logger, reopen: { try await SimulatedAir.connect(path: path) })
        }
        let service = BeaconFollowService(
            secret: secret, identity: identity, roster: vote.roster, transport: radio, state: state,
            lines: InputLines.stream(), first: vote.answer,
            report: { shown in
                if terminal {
                    say(shown.sentence)
                } else if case .note = shown {
                    // A script has the log on stderr; its stdout keeps the status lines of docs/GUIDE.md.
                } else {
                    say(shown.line)
                }
            },
            notSending: { why in say(terminal ? why.sentence : why.line) },
            logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do { try await group.run() } catch { throw Failure("\(error)") }
    }
}

struct Enroll: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print this device's enrollment code for the instructor's roster (creates the device key once).")

    func run() async throws {
        do {
            let state = try StateDirectory.standard(environment: ProcessInfo.processInfo.environment)
            let key = try await DeviceIdentity.load(in: state)
            print(key.enrollmentCode.description)
        } catch { throw Failure("\(error)") }
    }
}

/// One line to stdout, written at once (a board's script reads it through a pipe).
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    var written = 0
    while written < bytes.count {
        let n = bytes[written...].withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n > 0 else { return }   // stdout closed: nobody is reading
        written += n
    }
}

