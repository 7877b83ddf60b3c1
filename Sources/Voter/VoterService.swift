import ClickerWire
import Logging
import ServiceLifecycle

/// `clicker-vote`'s run: casts the first answer, then follows the answers that arrive as lines
/// (typed on stdin, or piped from a board's buttons), until a graceful shutdown; then withdraws the
/// advertisement and the GATT application.
///
/// When the input ends the vote stays on the air until shutdown. A first cast that fails ends the
/// service with its error (the service group rethrows it); a later line that does not parse or
/// cannot be cast is reported (and logged) and the vote on the air stays as it was.
public struct VoterService: Service {
    let session: VoterSession
    let first: Answer
    let lines: AsyncStream<String>
    let report: @Sendable (String) -> Void
    /// Reads a typed line: ``AnswerForm/answer(_:)`` when the question's kind is known, so a line the
    /// question does not offer is refused before anything is advertised.
    let parse: @Sendable (String) throws -> Answer
    let logger: Logger
    /// Returns when the group shuts down (or the task is cancelled).
    let untilShutdown: @Sendable () async -> Void

    /// - Parameters:
    ///   - lines: answers, one a line; surrounding spaces and blank lines are ignored.
    ///   - report: one line for the person or script watching (stdout), written at once.
    ///   - parse: reads a line into an answer, or throws why it is refused (reported; the vote stays).
    public init(session: VoterSession, first: Answer, lines: AsyncStream<String>,
                report: @escaping @Sendable (String) -> Void, logger: Logger,
                parse: @escaping @Sendable (String) throws -> Answer = { try Answer(parsing: $0) }) {
        self.init(session: session, first: first, lines: lines, report: report, logger: logger, parse: parse,
                  untilShutdown: { try? await gracefulShutdown() })
    }

    /// `untilShutdown` wraps the wait for shutdown, so a test sees the service reach it.
    package init(session: VoterSession, first: Answer, lines: AsyncStream<String>,
                 report: @escaping @Sendable (String) -> Void, logger: Logger,
                 parse: @escaping @Sendable (String) throws -> Answer = { try Answer(parsing: $0) },
                 untilShutdown: @escaping @Sendable () async -> Void) {
        self.session = session
        self.parse = parse
        self.first = first
        self.lines = lines
        self.report = report
        self.logger = logger
        self.untilShutdown = untilShutdown
    }

    public func run() async throws {
        let session = self.session, lines = self.lines, report = self.report, logger = self.logger, parse = self.parse
        let untilShutdown = self.untilShutdown, first = self.first
        do {
            let b = try await session.cast(first)
            report("voting \(b.answer) as voter \(IDText.voter(b.voterID)) (sequence \(b.sequence))")
        } catch {
            await session.stop()
            throw error
        }
        await cancelWhenGracefulShutdown {
            var current = first
            for await line in lines {
                let text = line.trimmingWhitespace()
                if text.isEmpty { continue }
                do {
                    let b = try await session.cast(try parse(text))
                    current = b.answer
                    report("changed to \(b.answer) (sequence \(b.sequence))")
                } catch {
                    report("not cast: \(Self.excerpt(text)): \(Self.excerpt("\(error)", limit: 160)); the vote stays \(current)")
                    logger.error("\(Self.excerpt(text)): \(Self.excerpt("\(error)", limit: 160))")
                }
            }
            guard !Task.isCancelled else { return }
            report("input closed; the vote stays on the air until stopped")
            // Keep the vote on the air until the group shuts down (Ctrl-C, SIGTERM).
            await untilShutdown()
        }
        await session.stop()
        report("stopped advertising")
    }

    /// Text that may quote a typed line, as the log shows it: at most `limit` characters.
    static func excerpt(_ text: String, limit: Int = 40) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "…"
    }
}
