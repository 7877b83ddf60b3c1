import ArgumentParser
import ClickerSim
import ClickerTransport
import ClickerWire
import Foundation
import HCI
import Logging
import ServiceLifecycle
import Synchronization
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

    @OptionGroup var radio: PeripheralRadioArguments

    func validate() throws {
        do { _ = try JoinCode(parsing: joinCode) } catch { throw ValidationError("join code: \(error)") }
        do { _ = try Answer(parsing: answer) } catch { throw ValidationError("answer: \(error)") }
        guard (20...10_240).contains(intervalMs) else { throw ValidationError("--interval-ms must be 20 to 10240") }
    }

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let logger = Logger(label: "clicker.vote")
        let code = try JoinCode(parsing: joinCode)
        let first = try Answer(parsing: answer)
        let state: StateDirectory
        let identity: DeviceKey
        do {
            state = try StateDirectory.standard(environment: ProcessInfo.processInfo.environment)
            identity = try await DeviceIdentity.load(in: state)
        } catch { throw Failure("\(error)") }
        let transport: any PeripheralTransport
        do { transport = try await radio.open(logger: logger) } catch { throw Failure("\(error)") }
        let secret = PollSecret(deriving: code)  // scrypt, once per run
        let session = VoterSession(secret: secret, question: question, identity: identity, roster: roster,
                                   transport: transport, state: state,
                                   interval: .milliseconds(intervalMs), logger: logger)
        let service = VoterService(session: session, first: first, logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        if let e = service.failure.error { throw Failure("\(e)") }
    }
}

/// Casts the first answer, then follows answers typed on stdin, until shutdown; then withdraws
/// the advertisement and the GATT application.
struct VoterService: Service {
    let session: VoterSession
    let first: Answer
    let logger: Logger
    let failure = ErrorBox()

    func run() async throws {
        let session = self.session, failure = self.failure, logger = self.logger
        do {
            let b = try await session.cast(first)
            say("voting \(b.answer) as voter \(hex8(b.voterID)) (sequence \(b.sequence))")
        } catch {
            failure.set(error)
            await session.stop()
            return
        }
        await cancelWhenGracefulShutdown {
            for await line in StdinLines.stream() {
                let text = line.trimmingCharacters(in: .whitespaces)
                if text.isEmpty { continue }
                do {
                    let answer = try Answer(parsing: text)
                    let b = try await session.cast(answer)
                    say("changed to \(b.answer) (sequence \(b.sequence))")
                } catch {
                    logger.error("\(text): \(error)")
                }
            }
            // Input closed: keep the vote on the air until told to stop.
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        }
        await session.stop()
        say("stopped advertising")
    }
}

/// Lines from standard input, read on a thread of their own so the cooperative pool never blocks.
enum StdinLines {
    static func stream() -> AsyncStream<String> {
        AsyncStream { continuation in
            let thread = Thread {
                while let line = readLine(strippingNewline: true) { continuation.yield(line) }
                continuation.finish()
            }
            thread.start()
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

/// An error for the person at the keyboard: ArgumentParser prints `Error: <description>` and exits 1.
struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Holds the error that ended the voter; written once, read after the run.
final class ErrorBox: Sendable {
    private let storage = Mutex<(any Error)?>(nil)
    func set(_ e: any Error) { storage.withLock { $0 = e } }
    var error: (any Error)? { storage.withLock { $0 } }
}

/// A voter ID as the tally prints it: eight hex digits.
func hex8(_ v: UInt32) -> String {
    let h = String(v, radix: 16)
    return String(repeating: "0", count: 8 - h.count) + h
}

/// One line to stdout, written at once (a board's script reads it through a pipe).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
