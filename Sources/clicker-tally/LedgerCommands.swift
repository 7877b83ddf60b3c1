import ArgumentParser
import ClickerCommandLine
import ClickerLedger
import ClickerWire
import Foundation

/// `clicker-tally ledger`: the instructor's side of a ledger poll.
struct LedgerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ledger",
        abstract: "Open a poll in a shared ballot ledger (PostgreSQL) for receivers, follow its counts, or close it.",
        subcommands: [LedgerOpen.self, LedgerWatch.self, LedgerClose.self])
}

struct LedgerOpen: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "open",
        abstract: "Register a poll and its questions in the ledger and print a receiver token (a database URL).",
        discussion: """
            Run it once per receiver: each gets its own token, valid until the poll is closed (clicker-tally \
            ledger close) or --hours have passed. The role of --store must be allowed to create roles.
            """)

    @Option(help: ArgumentHelp("The ledger's database URL, with the instructor's credentials.", valueName: "postgres://…"))
    var store: String

    @Option(help: ArgumentHelp("The poll's join code.", valueName: "code"))
    var joinCode: String

    @Option(help: ArgumentHelp("The poll's number in the ledger, the same for each receiver of the poll.", valueName: "n"))
    var poll: Int64

    @Option(help: ArgumentHelp("A question set file (YAML): registers all its questions.", valueName: "file"))
    var questions: String?

    @Option(help: ArgumentHelp("The question to register when there is no --questions file (default 1).", valueName: "n"))
    var question: UInt8 = 1

    @OptionGroup var adHoc: QuestionArguments

    @Flag(help: "Count each student's first answer only (the poll's rule; default: the latest answer counts).")
    var firstResponseOnly = false

    @Option(help: ArgumentHelp("Hours the token is valid for, if the poll is not closed before (default 6).", valueName: "hours"))
    var hours: Double = 6

    func validate() throws {
        guard (0.01...48).contains(hours) else { throw ValidationError("--hours is 0.01 to 48") }
        do { _ = try JoinCode(parsing: joinCode) } catch { throw ValidationError("--join-code: \(error)") }
    }

    func run() throws {
        let code: JoinCode
        do { code = try JoinCode(parsing: joinCode) } catch { throw Failure("--join-code: \(error)") }
        let specs = try questions.map(readQuestionSet) ?? [adHoc.spec(number: question)]
        do {
            let ledger = try BallotLedger(url: store)
            try ledger.register(poll: poll, voteID: code.voteID, policy: firstResponseOnly ? .firstResponseOnly : .latestWins,
                                specs: specs)
            let token = try ledger.issueReceiverToken(poll: poll,
                                                      validUntil: Int64(Date().timeIntervalSince1970 + hours * 3600))
            print(token.url(replacingCredentialsOf: store))
        } catch { throw Failure("\(error)") }
    }
}

struct LedgerClose: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "close", abstract: "Close a poll in the ledger: every receiver token of it stops working.")

    @Option(help: ArgumentHelp("The ledger's database URL, with the instructor's credentials.", valueName: "postgres://…"))
    var store: String

    @Option(help: ArgumentHelp("The poll's number in the ledger.", valueName: "n"))
    var poll: Int64

    func run() throws {
        do {
            let revoked = try BallotLedger(url: store).close(poll: poll)
            print("poll \(poll) closed; \(revoked) receiver token\(revoked == 1 ? "" : "s") revoked")
        } catch { throw Failure("\(error)") }
    }
}

struct LedgerWatch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print a poll's counts in the ledger, every receiver's ballots, when they change.",
        discussion: "One line at start and one each time a receiver's commit changes them, or a question closes: q1 (closed): A 2, B 1 (3 voters); q2: A 1 (1 voter).")

    @Option(help: ArgumentHelp("The ledger's database URL.", valueName: "postgres://…"))
    var store: String

    @Option(help: ArgumentHelp("The poll's number in the ledger.", valueName: "n"))
    var poll: Int64

    @Option(parsing: .unconditional, help: ArgumentHelp("Stop after this many seconds (default: at Ctrl-C).", valueName: "seconds"))
    var duration: Double?

    func validate() throws {
        if let d = duration, !(d > 0 && d <= 86_400) { throw ValidationError("--duration is above 0, up to 86400 seconds (got \(d))") }
    }

    func run() async throws {
        guard let follower = LedgerFollower(url: store, poll: poll) else { throw Failure("the system refused a thread") }
        let printer = Task {
            for await reading in follower.readings {
                FileHandle.standardOutput.write(Data((Self.line(reading) + "\n").utf8))
            }
        }
        if let duration {
            try? await Task.sleep(for: .milliseconds(Int64(duration * 1000)))
            await follower.stop()
        }
        await printer.value
    }

    /// `q1 (closed): A 2, B 1 (3 voters); q2: …`, or why the ledger cannot be read. A closed question
    /// without ballots is listed too.
    static func line(_ r: LedgerFollower.Reading) -> String {
        let counts = Set(r.counts.keys).union(r.closed).sorted().map { q in
            let answers = r.counts[q] ?? [:]
            let total = answers.values.reduce(0, +)
            let parts = answers.sorted { $0.key.description < $1.key.description }.map { "\($0.key) \($0.value)" }
            let closed = r.closed.contains(q) ? " (closed)" : ""
            return "q\(q)\(closed): " + (parts.isEmpty ? "no ballots" : parts.joined(separator: ", "))
                + " (\(total) voter\(total == 1 ? "" : "s"))"
        }
        let text = counts.isEmpty ? "no ballots yet" : counts.joined(separator: "; ")
        return r.error.map { "the ledger cannot be read (\($0)); last counts: \(text)" } ?? text
    }
}
