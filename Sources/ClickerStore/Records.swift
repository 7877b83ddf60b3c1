import ClickerWire
import Foundation
import GRDB

/// Whether a poll's exports may name individual voters.
public enum PollMode: String, Sendable, Hashable, Codable, CaseIterable {
    /// Votes are counted but never exported per voter (summary only).
    case anonymous
    /// Voters are enrolled on a roster; exports carry one row per ballot.
    case roster
}

/// Whether a question accepts ballots.
public enum QuestionState: String, Sendable, Hashable, Codable, CaseIterable {
    case open
    case closed
}

/// Which of a voter's ballots for a question counts.
public enum CountingRule: String, Sendable, Hashable, Codable, CaseIterable {
    /// The highest sequence counts.
    case latestWins
    /// The lowest sequence counts; later ballots change nothing.
    case firstResponseOnly
}

/// Records whose dates are seconds since 1970 in REAL columns. GRDB 7 asks these two functions (a
/// static property of the same name is silently ignored, and the dates become text).
public protocol SecondsSince1970: FetchableRecord, EncodableRecord {}

extension SecondsSince1970 {
    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy { .timeIntervalSince1970 }
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy { .timeIntervalSince1970 }
}

/// A poll: one session of questions sharing a vote ID and join code.
public struct PollRecord: Sendable, Hashable, Identifiable, Codable, FetchableRecord, PersistableRecord, SecondsSince1970 {
    public static let databaseTableName = "poll"

    /// Row ID assigned by the store.
    public var id: Int64
    /// The poll's vote ID as carried on the air (opaque bytes).
    public var voteID: Data
    /// The join code shown to students, kept so that `--resume` can continue the open poll and so that
    /// a code is never used twice. The database file is 0600; exports never carry it.
    public var joinCode: String?
    public var mode: PollMode
    /// Which ballot of a voter counts.
    public var rule: CountingRule
    public var title: String?
    public var createdAt: Date
    /// Nil while the poll is the open (resumable) poll.
    public var closedAt: Date?
    /// The 32-byte seed of the poll's beacon key pair (docs/PROTOCOL.md §11.2, version 4), which the
    /// join code's secret commits to, so that `--resume` signs with the same key. Nil for a poll
    /// created before version 4 or with a join code given by hand, and once the poll is closed.
    public var beaconSeed: Data?

    enum CodingKeys: String, CodingKey {
        case id, mode, rule, title
        case voteID = "vote_id", joinCode = "join_code", createdAt = "created_at", closedAt = "closed_at"
        case beaconSeed = "beacon_seed"
    }

    public init(id: Int64, voteID: Data, joinCode: String?, mode: PollMode, rule: CountingRule = .latestWins,
                title: String?, createdAt: Date, closedAt: Date?, beaconSeed: Data? = nil) {
        self.beaconSeed = beaconSeed
        self.id = id
        self.voteID = voteID
        self.joinCode = joinCode
        self.mode = mode
        self.rule = rule
        self.title = title
        self.createdAt = createdAt
        self.closedAt = closedAt
    }
}

/// What a question offers, stored with it so that `--resume` asks the same question: its answer
/// kinds and options, and what the screen and the gradebook say about it.
public struct QuestionDefinition: Sendable, Hashable {
    /// The scale and range of a numeric question, in wire units (a ballot's value means
    /// `value / 10^decimals`).
    public struct Numeric: Sendable, Hashable {
        public var decimals: Int
        public var lowest: Int16
        public var highest: Int16

        public init(decimals: Int, lowest: Int16, highest: Int16) {
            self.decimals = decimals
            self.lowest = lowest
            self.highest = highest
        }
    }

    /// The answer kinds accepted (ClickerWire's kinds, stored by their wire kind byte).
    public var kinds: [Answer.Kind]
    /// Options offered (letters A…).
    public var options: Int
    /// The options' texts, when the question has them.
    public var optionTexts: [String]?
    /// The question's title, when it has one.
    public var title: String?
    /// A numeric question's scale and range; nil for any 16-bit value.
    public var numeric: Numeric?
    /// The correct answers of a graded question (stored in ClickerWire's answer encoding, as ballots
    /// are); empty when ungraded.
    public var correct: [Answer]
    /// Points a correct answer scores.
    public var points: Double?

    public init(kinds: [Answer.Kind], options: Int, optionTexts: [String]? = nil, title: String? = nil,
                numeric: Numeric? = nil, correct: [Answer] = [], points: Double? = nil) {
        self.kinds = kinds
        self.options = options
        self.optionTexts = optionTexts
        self.title = title
        self.numeric = numeric
        self.correct = correct
        self.points = points
    }

    /// A single-choice question with `options` letters.
    public static func choice(options: Int) -> QuestionDefinition { QuestionDefinition(kinds: [.choice], options: options) }
}

/// A question of a poll, numbered from 1.
public struct QuestionRecord: Sendable, Hashable, Codable, FetchableRecord, PersistableRecord, DefinitionColumns, SecondsSince1970 {
    public static let databaseTableName = "question"

    public var poll: Int64
    public var number: Int
    public var state: QuestionState
    /// When the question was first opened.
    public var openedAt: Date
    /// When the question was last closed; nil while open.
    public var closedAt: Date?
    /// Wire kind bytes of `definition.kinds`; nil for a question stored before definitions were kept.
    var answerKinds: [UInt8]?
    var options: Int?
    var optionTexts: [String]?
    var title: String?
    var numericDecimals: Int?
    var numericLowest: Int16?
    var numericHighest: Int16?
    /// Correct answers, each as the store writes a ballot's answer (`AnswerColumn.swift`), JSON.
    var correctAnswers: [Answer]?
    var points: Double?

    enum CodingKeys: String, CodingKey {
        case number, state, options, title, points
        case poll = "poll_id", openedAt = "opened_at", closedAt = "closed_at", answerKinds = "answer_kinds",
             optionTexts = "option_texts", numericDecimals = "numeric_decimals", numericLowest = "numeric_lowest",
             numericHighest = "numeric_highest", correctAnswers = "correct_answers"
    }

    public init(poll: Int64, number: Int, state: QuestionState, openedAt: Date, closedAt: Date?,
                definition: QuestionDefinition? = nil) {
        self.poll = poll
        self.number = number
        self.state = state
        self.openedAt = openedAt
        self.closedAt = closedAt
        self.definition = definition
    }

    /// What the question offers; nil when it was stored by a version that did not keep it.
    public var definition: QuestionDefinition? {
        get { storedDefinition }
        set { storedDefinition = newValue }
    }
}

/// One accepted ballot: a voter's answer with a given sequence number for one question.
///
/// A voter who changes their answer sends a new ballot with a higher sequence; the store keeps every
/// ballot, keyed by (poll, question, voter, sequence). Hearing the same ballot again only widens
/// `firstHeard…lastHeard` and can set `gattVerified`.
public struct BallotRecord: Sendable, Hashable, Codable, FetchableRecord, PersistableRecord, SecondsSince1970 {
    public static let databaseTableName = "ballot"

    public var poll: Int64
    public var question: Int
    /// The voter's ID (opaque bytes).
    public var voter: Data
    /// The answer (stored in ClickerWire's answer encoding: see `AnswerColumn.swift`).
    public var answer: Answer
    public var sequence: UInt32
    /// The radio address the ballot was heard from (as printed, e.g. `00:AA:01:00:00:01`).
    public var address: String
    public var firstHeard: Date
    public var lastHeard: Date
    /// True once the ballot was read over GATT, signed by the key bound to its voter (it then outranks
    /// unverified ballots of the voter).
    public var gattVerified: Bool

    enum CodingKeys: String, CodingKey {
        case question, voter, answer, sequence, address
        case poll = "poll_id", firstHeard = "first_heard", lastHeard = "last_heard", gattVerified = "gatt_verified"
    }

    public init(poll: Int64, question: Int, voter: Data, answer: Answer, sequence: UInt32, address: String,
                firstHeard: Date, lastHeard: Date, gattVerified: Bool) {
        self.poll = poll
        self.question = question
        self.voter = voter
        self.answer = answer
        self.sequence = sequence
        self.address = address
        self.firstHeard = firstHeard
        self.lastHeard = lastHeard
        self.gattVerified = gattVerified
    }
}

/// A count of rejected reports for one reason. `question` 0 means "while no question was open".
public struct RejectionCount: Sendable, Hashable, Codable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "rejection"

    public var poll: Int64
    public var question: Int
    /// A short machine-readable reason, e.g. `bad-tag`, `wrong-vote-id`, `replay`.
    public var reason: String
    public var count: Int

    enum CodingKeys: String, CodingKey {
        case question, reason, count
        case poll = "poll_id"
    }

    public init(poll: Int64, question: Int, reason: String, count: Int) {
        self.poll = poll
        self.question = question
        self.reason = reason
        self.count = count
    }
}

/// Everything needed to rebuild the tally of the open poll after a restart.
public struct ResumeState: Sendable, Hashable {
    public var poll: PollRecord
    /// Ordered by number.
    public var questions: [QuestionRecord]
    /// Ordered by question, voter, sequence.
    public var ballots: [BallotRecord]
    public var rejections: [RejectionCount]
    /// Totals of the questions already sealed (closed questions of an anonymous poll), by question.
    public var totals: [QuestionTotals] = []
    /// The poll's voter key bindings (trust on first use).
    public var voterKeys: [VoterKeyRecord] = []
    /// The question set the poll follows (question 1 first); empty when asked ad hoc.
    public var plan: [QuestionDefinition] = []
}

/// The totals of a closed question of an anonymous poll: all that is kept of it once it closes
/// (its per-voter ballots are deleted in the same transaction).
public struct QuestionTotals: Codable, Sendable, Hashable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "question_total"
    public static let databaseColumnDecodingStrategy = DatabaseColumnDecodingStrategy.convertFromSnakeCase
    public static let databaseColumnEncodingStrategy = DatabaseColumnEncodingStrategy.convertToSnakeCase

    public var pollId: Int64
    public var question: Int
    public var voters: Int
    public var changes: Int
    public var gattVerified: Int
    /// Count per answer index (stored as JSON).
    public var counts: [Int]
    /// The counted answers of every kind, without voter IDs: each answer once with its number of
    /// ballots, in answer order (stored as JSON), so that a closed multi-select, numeric or ranked
    /// question still has its results. Nil for totals kept before they were stored.
    public var answers: [AnswerTotal]?

    public init(pollId: Int64, question: Int, voters: Int, changes: Int, gattVerified: Int, counts: [Int],
                answers: [AnswerTotal]? = nil) {
        self.pollId = pollId
        self.question = question
        self.voters = voters
        self.changes = changes
        self.gattVerified = gattVerified
        self.counts = counts
        self.answers = answers
    }

    /// The counted answers: from ``answers``, else the single choices of ``counts``.
    public var answerCounts: [Answer: Int] {
        if let answers { return AnswerTotal.table(answers) }
        var table: [Answer: Int] = [:]
        for (i, n) in counts.enumerated() where n > 0 && i < Answer.maxOptions { table[.choice(UInt8(i))] = n }
        return table
    }
}

/// One answer and how many counted ballots carry it (no voter ID).
public struct AnswerTotal: Codable, Sendable, Hashable {
    public var answer: Answer
    public var count: Int

    public init(answer: Answer, count: Int) {
        self.answer = answer
        self.count = count
    }

    /// From a count table, in answer order (the order says nothing about who voted when).
    public static func list(_ table: [Answer: Int]) -> [AnswerTotal] {
        table.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map { AnswerTotal(answer: $0.key, count: $0.value) }
    }

    public static func table(_ list: [AnswerTotal]) -> [Answer: Int] {
        var table: [Answer: Int] = [:]
        for t in list where t.count > 0 { table[t.answer, default: 0] += t.count }
        return table
    }
}

/// Per-question summary, computed from the stored ballots (or, for a closed anonymous question, its totals).
public struct QuestionSummary: Sendable, Hashable {
    public var question: QuestionRecord
    /// Counted answers (each voter's ballot chosen by the poll's `CountingRule`), indexed by answer;
    /// at least 4 entries (A–D).
    public var counts: [Int]
    /// Distinct voters with at least one ballot.
    public var voters: Int
    /// Voters whose counted answer was replaced by a different answer at least once (as the live tally counts).
    public var changes: Int
    /// Ballots confirmed by a GATT read (current ballots only).
    public var gattVerified: Int
    /// Rejected reports for this question, by reason.
    public var rejections: [String: Int]
    /// Every counted answer, of any kind, and its ballots (what results by kind are computed from).
    public var answers: [Answer: Int] = [:]
}

/// Errors of the store (database errors from SQLite are passed through as GRDB `DatabaseError`).
public enum StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    case noStateDirectory
    case cannotCreateDirectory(path: String, errno: Int32)
    case cannotCreateFile(path: String, errno: Int32)
    case unknownPoll(Int64)
    case unknownQuestion(poll: Int64, number: Int)
    case invalidValue(String)
    /// A closed question of an anonymous poll: only its totals remain, so it cannot take ballots again.
    case sealedQuestion(poll: Int64, number: Int)
    /// A roster change that was refused as a whole.
    case roster(RosterConflict)
    /// An explicit database path whose directory does not exist (only the default one is created).
    case noDirectory(path: String, directory: String)
    /// Another process holds the database's lock (its process ID and name, when it wrote them).
    case inUse(path: String, holder: String?)
    case cannotLock(path: String, errno: Int32)
    /// Every name an export of this poll could take in the directory is in use.
    case exportNamesTaken(directory: String, stem: String)
    /// SQLite's quick check found the file damaged (or not a database); nothing was written into it.
    case damaged(path: String, problems: [String])

    public var description: String {
        switch self {
        case .noStateDirectory: "no state directory: set STATE_DIRECTORY, XDG_STATE_HOME or HOME"
        case let .cannotCreateDirectory(p, e): "cannot create directory \(p): \(String(cString: strerror(e)))"
        case let .cannotCreateFile(p, e): "cannot create file \(p): \(String(cString: strerror(e)))"
        case let .unknownPoll(id): "unknown poll \(id)"
        case let .unknownQuestion(p, n): "unknown question \(n) of poll \(p)"
        case let .invalidValue(what): "invalid value: \(what)"
        case .roster(let conflict): conflict.description
        case let .noDirectory(p, d):
            "cannot use the database \(p): the directory \(d) does not exist (only the default location is created; "
                + "create it first, or leave out --db)"
        case let .inUse(p, holder):
            "the database \(p) is in use by another tally (\(holder.map { "process " + $0 } ?? "another process")): "
                + "stop that one first, or give this one another --db"
        case let .cannotLock(p, e): "cannot lock \(p): \(String(cString: strerror(e)))"
        case let .damaged(p, problems):
            "the database \(p) is damaged (SQLite's quick check: \(problems.joined(separator: "; "))); nothing was written "
                + "into it. Keep it for recovery (`sqlite3 \(p) .recover`), and start with another database: --db NEW-FILE"
        case let .exportNamesTaken(d, stem): "\(d) already holds \(ExportNames.maxAttempts) exports named \(stem)…: export elsewhere"
        case let .sealedQuestion(p, n):
            "question \(n) of anonymous poll \(p) is closed for good: its per-voter ballots were discarded when it closed, only its totals are kept"
        }
    }
}
