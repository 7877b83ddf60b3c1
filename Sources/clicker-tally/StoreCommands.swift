import ArgumentParser
import ClickerCommandLine
import ClickerStore
import ClickerTally
import ClickerWire
import Foundation

/// The database of `results --db`, `export --db` and `polls`: read directly, no daemon needed.
struct StoreArguments: ParsableArguments {
    @Option(help: "Read the polls from this database directly, without a daemon (default with --poll: clicker.sqlite in $STATE_DIRECTORY, else $XDG_STATE_HOME/clicker, else $HOME/.local/state/clicker).")
    var db: String?

    @Option(help: ArgumentHelp("The poll, by its vote ID (clicker-tally polls lists them; default with --db: the newest).",
                               valueName: "vote-id"))
    var poll: Int?

    /// Whether the command reads the database instead of asking the daemon.
    var direct: Bool { db != nil || poll != nil }

    func validate() throws {
        if let poll, !(0...Int(UInt16.max)).contains(poll) { throw ValidationError("--poll is a vote ID, 0 to 65535 (got \(poll))") }
    }

    func open() throws -> ClickerStore { try Self.open(db) }

    static func open(_ db: String?) throws -> ClickerStore {
        do { return try ClickerStore(path: db, durability: .normal) } catch { throw Failure("cannot open the database: \(error)") }
    }

    /// The poll `--poll` names (the newest of those with that vote ID), else the newest poll.
    func record(in store: ClickerStore) throws -> PollRecord {
        let polls: [PollRecord]
        do { polls = try store.polls() } catch { throw Failure("cannot read the database: \(error)") }
        let matching = poll.map { id in polls.filter { StoreListing.voteID($0) == id } } ?? polls
        guard let newest = matching.max(by: { $0.createdAt < $1.createdAt }) else {
            throw Failure(poll.map { "no poll with vote ID \($0) in \(store.path) (clicker-tally polls --db \(store.path) lists them)" }
                          ?? "no poll in \(store.path)")
        }
        if matching.count > 1 {
            FileHandle.standardError.write(Data("""
                \(matching.count) polls have vote ID \(StoreListing.voteID(newest)); this is the newest, \
                started \(Exporter.timestamp(newest.createdAt))\n
                """.utf8))
        }
        return newest
    }
}

/// Texts of polls read from the database (pure but for the reads).
enum StoreListing {
    static func voteID(_ p: PollRecord) -> Int { p.voteID.reduce(0) { $0 << 8 | Int($1) } }

    /// What a new run says of the poll it closed because it was still open (a crash, or a run ended
    /// without closing it): that its votes are kept, how to read them, and that `--resume` continues one.
    static func previousPollNote(_ s: ResumeState, db: String?) -> String {
        let id = voteID(s.poll)
        let started = Exporter.timestamp(s.poll.createdAt).prefix(16)
        let where_ = db.map { " --db " + $0 } ?? ""
        return "the previous poll (vote \(id), started \(started)Z) was still open: closed now, votes kept "
            + "(clicker-tally results\(where_) --poll \(id), export\(where_) --poll \(id)); --resume would have continued it"
    }

    /// One line per poll: vote ID, start, open or closed, mode, questions and voters.
    static func line(_ p: PollRecord, store: ClickerStore) throws -> String {
        let summaries = try store.summary(poll: p.id)
        var s = "vote \(voteID(p))  started \(Exporter.timestamp(p.createdAt).prefix(19))Z  "
        s += p.closedAt.map { "closed \(Exporter.timestamp($0).prefix(19))Z" } ?? "open (clicker-tally --resume continues it)"
        s += "  \(p.mode.rawValue)  \(summaries.count) question\(summaries.count == 1 ? "" : "s")"
        if !summaries.isEmpty { s += ", voters " + summaries.map { String($0.voters) }.joined(separator: "/") }
        if let t = p.title, !t.isEmpty { s += "  " + Exporter.neutralized(t) }
        return s
    }

    /// The results of each question (or of `question` alone), as the end of a run prints them.
    static func results(_ p: PollRecord, store: ClickerStore, question: Int?) throws -> String {
        let summaries = try store.summary(poll: p.id).filter { question == nil || $0.question.number == question }
        var lines = ["vote \(voteID(p)), started \(Exporter.timestamp(p.createdAt).prefix(19))Z, "
                     + (p.closedAt == nil ? "open" : "closed")]
        if summaries.isEmpty { lines.append(question.map { "  no question \($0) in this poll" } ?? "  no question") }
        for s in summaries {
            var head = "question \(s.question.number)"
            if let t = s.question.definition?.title, !t.isEmpty { head += " (\(t))" }
            lines.append(head + ": \(s.voters) voters, \(s.changes) changed their answer")
            let r = Exporter.results(s)
            if let counts = Exporter.optionCounts(r) {
                let total = max(1, counts.reduce(0, +))
                for (i, n) in counts.enumerated() {
                    lines.append("  \(Answer.choice(UInt8(min(i, 7))))  \(String(repeating: "#", count: n * 40 / total)) \(n)")
                }
            } else if case .trueFalse = r {
                for (a, n) in s.answers.sorted(by: { $0.key.description < $1.key.description }) { lines.append("  \(a)  \(n)") }
            }
            for l in r.lines() { lines.append("  " + l) }
            let rejected = s.rejections.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            if !rejected.isEmpty { lines.append("  rejected: " + rejected.map { "\($0.key)=\($0.value)" }.joined(separator: " ")) }
        }
        return lines.joined(separator: "\n")
    }
}

/// `clicker-tally polls`: every poll of the database, oldest first.
struct Polls: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List every poll in the database, read directly (no daemon needed).",
        discussion: "Then: clicker-tally results --poll VOTE-ID, clicker-tally export --poll VOTE-ID [DIRECTORY].")

    @Option(help: "Database file (default: clicker.sqlite in $STATE_DIRECTORY, else $XDG_STATE_HOME/clicker, else $HOME/.local/state/clicker).")
    var db: String?

    func run() async throws {
        let store = try StoreArguments.open(db)
        let polls: [PollRecord]
        do { polls = try store.polls().sorted { $0.createdAt < $1.createdAt } } catch {
            throw Failure("cannot read the database: \(error)")
        }
        guard !polls.isEmpty else { return print("no polls in \(store.path)") }
        for p in polls {
            do { print(try StoreListing.line(p, store: store)) } catch { throw Failure("cannot read the database: \(error)") }
        }
    }
}
