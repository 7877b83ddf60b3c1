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
            """,
        version: ClickerVersion.text(program: "clicker-vote"),
        subcommands: [Cast.self, Enroll.self],
        defaultSubcommand: Cast.self
    )
}

struct Cast: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Vote (the default).")

    @Argument(help: "The join code on the instructor's screen, e.g. 4821-ABCDE-FGHJK.")
    var joinCode: String

    @Argument(help: "Your answer: A-H, true/false, a multi-select like A+C, a ranking like C>A>B, or a number.")
    var answer: String

    @Option(help: "Question number.")
    var question: UInt8 = 1

    @Option(help: "Advertising interval in milliseconds (20-10240).")
    var intervalMs: Int = 100

    @Flag(help: "Roster mode: sign with this device's enrolled key (see `clicker-vote enroll`).")
    var roster = false

    @Option(help: ArgumentHelp("The question's kind: single, multi, truefalse, numeric or ranked. An answer it does not offer is refused before anything is advertised.",
                               valueName: "kind"))
    var kind: AnswerForm.Kind?

    @Option(help: "Options the question offers (letters A…, 2-8; with --kind single, multi or ranked; default 4).")
    var options: Int?

    @Option(parsing: .unconditional,
            help: ArgumentHelp("Numbers the question takes, e.g. 0..10 or -5..5 (with --kind numeric; in its decimals).", valueName: "LOW..HIGH"))
    var range: String?

    @Option(help: "Digits after the decimal point a numeric question takes (0-4; with --kind numeric; default: those of --range, else 0).")
    var decimals: Int?

    @OptionGroup var radio: PeripheralRadioArguments

    func validate() throws {
        do { _ = try JoinCode(parsing: joinCode) } catch { throw ValidationError(quoting: "join code: \(error)") }
        let parse = try parser()
        do { _ = try parse(answer) } catch { throw ValidationError(quoting: "answer: \(error)") }
        guard (20...10_240).contains(intervalMs) else { throw ValidationError("--interval-ms must be 20 to 10240") }
    }

    /// The question as --kind, --options, --range and --decimals describe it; nil without --kind.
    func form() throws -> AnswerForm? {
        guard let kind else {
            if options != nil || range != nil || decimals != nil {
                throw ValidationError("--options, --range and --decimals describe a question: give its --kind too")
            }
            return nil
        }
        switch kind {
        case .single, .multi, .ranked:
            if range != nil || decimals != nil { throw ValidationError("--range and --decimals are for --kind numeric") }
            // As the tally: a question offers at least two options.
            if let options, !(2...Answer.maxOptions).contains(options) {
                throw ValidationError("--options must be 2 to 8: a question offers 2 to 8 options (A to H)")
            }
            return AnswerForm(kind: kind, options: options ?? 4)
        case .truefalse, .numeric:
            if options != nil { throw ValidationError("--options is for --kind single, multi or ranked") }
            if kind == .truefalse, range != nil || decimals != nil {
                throw ValidationError("--range and --decimals are for --kind numeric")
            }
            // As the tally's --range: without --decimals, the range's own decimals count (0.0..10.0 takes one).
            let places = decimals ?? range.map { NumericText.decimals(in: $0) } ?? 0
            guard (0...NumericText.maxDecimals).contains(places) else { throw ValidationError("--decimals must be 0 to 4") }
            var bounds: ClosedRange<Int16> = .min ... .max
            if let range {
                do { bounds = try AnswerForm.range(parsing: range, decimals: places) } catch {
                    throw ValidationError(quoting: "\(error)")
                }
            }
            return AnswerForm(kind: kind, decimals: places, range: bounds)
        }
    }

    /// Reads an answer: by the question's form when --kind is given, else any well-formed answer.
    func parser() throws -> @Sendable (String) throws -> Answer {
        guard let form = try form() else { return { try Answer(parsing: $0) } }
        return { try form.answer($0) }
    }

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let logger = Logger(label: "clicker.vote")
        let code = try JoinCode(parsing: joinCode)
        let parse = try parser()
        let first = try parse(answer)
        let state: StateDirectory
        let identity: DeviceKey
        do {
            state = try StateDirectory.standard(environment: ProcessInfo.processInfo.environment)
            identity = try await DeviceIdentity.load(in: state)
        } catch { throw Failure("\(error)") }
        let transport: any PeripheralTransport
        do { transport = try await radio.open(logger: logger) } catch { throw Failure.radio(error) }
        let secret = PollSecret(deriving: code)  // scrypt, once per run
        let session = VoterSession(secret: secret, question: question, identity: identity, roster: roster,
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

extension AnswerForm.Kind: ExpressibleByArgument {}
