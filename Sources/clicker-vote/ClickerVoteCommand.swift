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
import OSThreads
import ServiceLifecycle
import Voter

struct ClickerVoteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clicker-vote",
        abstract: "Cast a classroom vote over Bluetooth LE.",
        discussion: """
            clicker-vote 4821-ABCDE-FGHJK B   advertises answer B for that poll. Type another answer \
            (or pipe one per line into stdin, e.g. from a board's buttons) to change it; Ctrl-C or \
            SIGTERM stops advertising cleanly.

            clicker-vote 4821-ABCDE-FGHJK   follows the tally's beacon: it shows the open question, \
            takes your answers from stdin (checked against the question) and says when your vote is \
            counted. When stdout is not a terminal it prints one line per change: waiting, no-beacon, \
            question N KIND OPTIONS [TITLE], sending X, counted X, not-offered X, question-closed N, \
            poll-closed, roster-mismatch.
            """,
        version: ClickerVersion.text(program: "clicker-vote"),
        subcommands: [Cast.self, Enroll.self],
        defaultSubcommand: Cast.self
    )
}

struct Cast: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Vote (the default).")

    @OptionGroup var vote: VoteArguments

    @Option(help: "Advertising interval in milliseconds (20-10240).")
    var intervalMs: Int = 100

    @OptionGroup var radio: PeripheralRadioArguments

    func validate() throws {
        guard (20...10_240).contains(intervalMs) else { throw ValidationError("--interval-ms must be 20 to 10240") }
    }

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
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
        guard let answerText = vote.answer else {
            return try await follow(secret: secret, identity: identity, state: state, transport: transport, logger: logger)
        }
        let first = try parse(answerText)
        let session = VoterSession(secret: secret, question: vote.question, identity: identity, roster: vote.roster,
                                   transport: transport, state: state,
                                   interval: .milliseconds(intervalMs), logger: logger)
        let service = VoterService(session: session, first: first, lines: StdinLines.stream(), report: say, logger: logger,
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
    /// sentence per change; otherwise one stable line per change (README.md lists them).
    func follow(secret: PollSecret, identity: DeviceKey, state: StateDirectory, transport: any PeripheralTransport,
                logger: Logger) async throws {
        let terminal = isatty(STDOUT_FILENO) == 1
        let service = BeaconFollowService(
            secret: secret, identity: identity, roster: vote.roster, transport: transport, state: state,
            lines: StdinLines.stream(),
            report: { status in say(terminal ? status.sentence : status.line) },
            notSending: { why in say(terminal ? why.sentence : why.line) },
            logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do { try await group.run() } catch { throw Failure("\(error)") }
    }
}

/// Lines from standard input, read on a thread of their own so the cooperative pool never blocks.
enum StdinLines {
    static func stream() -> AsyncStream<String> {
        AsyncStream { continuation in
            let started = OSThread.start(name: "clicker-stdin") {
                while let line = readLine(strippingNewline: true) { continuation.yield(line) }
                continuation.finish()
            }
            // Without a thread for stdin the first answer still stands; no later ones can arrive.
            if started == nil { continuation.finish() }
        }
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

