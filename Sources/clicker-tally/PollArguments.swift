import ArgumentParser
import ClickerCommandLine
import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import PrivateFiles
import TallyDaemon

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

    @Option(help: ArgumentHelp("A question set: a YAML file of questions (docs/GUIDE.md, \"Question sets\"); `n` opens the next. --resume: the open poll's.",
                               valueName: "file"))
    var questions: String?

    @OptionGroup var question: QuestionArguments

    /// Options of the first question (the simulated room answers among them).
    var options: Int { (try? question.spec(number: 1).options) ?? 4 }

    @Flag(help: "Count only a voter's first answer (default: the latest answer wins).")
    var firstResponseOnly = false

    @Flag(inversion: .prefixedNo, help: "Read anonymous ballots back over GATT and verify their signature, so an unverified copy cannot replace a verified vote (off: changes unverified).")
    var gattConfirm = true

    @Flag(inversion: .prefixedNo, help: "Broadcast the poll's beacon (question, interval, acknowledgements; PROTOCOL.md §11.11) while scanning (off: voters need --question N). Default: on where the radio can broadcast while it scans; a Bluetooth 4 controller under BlueZ cannot, and the screen then says the beacon is off (docs/GUIDE.md, Radios and backends).")
    var beacon: Bool?

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
        // `--kind`, `--options N` and `--questions` are checked against the open poll (`start`); these
        // only define a new question, which a resume does not ask.
        if resume, question.title != nil || question.range != nil || question.decimals != nil
            || (question.optionsGiven != nil && question.optionCount == nil) {
            throw ValidationError("--resume continues the open question as the database holds it (its title, option "
                                  + "texts, range and decimals): leave out --title, --range, --decimals and option texts")
        }
        guard resumeLimit > 0, resumeLimit <= 24 * 7 else { throw ValidationError("--resume-limit is above 0, up to 168 hours") }
    }

    /// The question set of `--questions`, read once for the whole start (`pollOptions` and `start`
    /// take it), on a queue of its own: file reads stay off the cooperative pool.
    func questionSet() async throws -> [QuestionSpec]? {
        guard let path = questions else { return nil }
        return try await BlockingWorker(label: "clicker.question-file").run { try readQuestionSet(path) }
    }

    /// A new poll, or `--resume`; `questionSet` is what `questionSet()` read.
    func start(questionSet: [QuestionSpec]?) -> PollStart {
        guard resume else { return .fresh }
        // What was said is checked against the open poll; what was not is taken from it.
        return .resume(maxAge: .seconds(Int64(resumeLimit * 3600)),
                       stated: ResumeFlags(options: question.optionsGiven.map { _ in options }, roster: roster ? true : nil,
                                           policy: firstResponseOnly ? .firstResponseOnly : nil,
                                           question: questionGiven.map { _ in firstQuestion },
                                           kind: question.kind == nil ? nil : (try? question.spec(number: 1))?.kinds.first,
                                           questionSet: questionSet))
    }

    /// The poll's options; `questionSet` is what `questionSet()` read.
    func pollOptions(store: ClickerStore?, questionSet: [QuestionSpec]?, radio: RadioKind) throws -> PollOptions {
        // With --resume the controller takes the open poll's code instead.
        // A code given by hand commits to no beacon key: that poll's beacon is tagged only.
        let given = try joinCode.map { try JoinCode(parsing: $0) }
        let anchored = given == nil ? try PollController.unusedAnchoredJoinCode(store: store) : nil
        guard let code = given ?? anchored?.0 else { throw Failure("no join code") }
        var students: Roster?
        if roster {
            guard let store, let r = try RosterBook.load(from: store) else {
                throw Failure("no roster: import one first with `clicker-tally roster import FILE.csv`")
            }
            students = r
        }
        var options = PollOptions(joinCode: code, roster: students, policy: firstResponseOnly ? .firstResponseOnly : .latestWins,
                                  options: self.options, firstQuestion: firstQuestion, confirmByGATT: gattConfirm)
        options.beacon = beacon.map { $0 ? .always : .off } ?? .whenPossible
        options.beaconSigner = anchored?.1
        if let questionSet {
            options.questionSet = questionSet
        } else {
            options.adHoc = try question.spec(number: firstQuestion)
        }
        return options
    }

    /// What to say of the poll left open in `store` (a crash, a run or a daemon that did not end it), which
    /// the new poll closes; nil with --resume, which continues it. Read before the new poll is made.
    func previousPollNote(in store: ClickerStore?) -> String? {
        guard !resume, let open = (try? store?.resume()) ?? nil else { return nil }
        return StoreListing.previousPollNote(open, db: db)
    }

    func openStore() throws -> ClickerStore? {
        noStore ? nil : try ClickerStore(path: db, durability: .normal, exclusive: true)
    }
}

