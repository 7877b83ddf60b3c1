import ClickerWire
import Foundation
import GRDB

/// The columns a question definition is stored in, shared by the questions asked (`question`) and
/// the question set a poll follows (`question_plan`).
protocol DefinitionColumns {
    var answerKinds: [UInt8]? { get set }
    var options: Int? { get set }
    var optionTexts: [String]? { get set }
    var title: String? { get set }
    var numericDecimals: Int? { get set }
    var numericLowest: Int16? { get set }
    var numericHighest: Int16? { get set }
    var correctAnswers: [Answer]? { get set }
    var points: Double? { get set }
}

extension DefinitionColumns {
    /// The definition these columns hold; nil when they hold none (a question stored before
    /// definitions were kept).
    var storedDefinition: QuestionDefinition? {
        get {
            guard let answerKinds, let options else { return nil }
            let kinds = answerKinds.compactMap(Answer.Kind.init(rawValue:))
            guard kinds.count == answerKinds.count else { return nil }
            var numeric: QuestionDefinition.Numeric?
            if let numericDecimals, let numericLowest, let numericHighest {
                numeric = .init(decimals: numericDecimals, lowest: numericLowest, highest: numericHighest)
            }
            return QuestionDefinition(kinds: kinds, options: options, optionTexts: optionTexts, title: title,
                                      numeric: numeric, correct: correctAnswers ?? [], points: points)
        }
        set {
            answerKinds = newValue?.kinds.map(\.rawValue)
            options = newValue?.options
            optionTexts = newValue?.optionTexts
            title = newValue?.title
            numericDecimals = newValue?.numeric?.decimals
            numericLowest = newValue?.numeric?.lowest
            numericHighest = newValue?.numeric?.highest
            correctAnswers = newValue.flatMap { $0.correct.isEmpty ? nil : $0.correct }
            points = newValue?.points
        }
    }
}

/// A question of the set a poll follows (`clicker-tally --questions`), kept with the poll from its
/// start so that `--resume` goes on with the same set.
struct PlannedQuestion: Codable, FetchableRecord, PersistableRecord, DefinitionColumns {
    static let databaseTableName = "question_plan"

    var poll: Int64
    var number: Int
    var answerKinds: [UInt8]?
    var options: Int?
    var optionTexts: [String]?
    var title: String?
    var numericDecimals: Int?
    var numericLowest: Int16?
    var numericHighest: Int16?
    var correctAnswers: [Answer]?
    var points: Double?

    enum CodingKeys: String, CodingKey {
        case number, options, title, points
        case poll = "poll_id", answerKinds = "answer_kinds", optionTexts = "option_texts",
             numericDecimals = "numeric_decimals", numericLowest = "numeric_lowest", numericHighest = "numeric_highest",
             correctAnswers = "correct_answers"
    }

    init(poll: Int64, number: Int, definition: QuestionDefinition) {
        self.poll = poll
        self.number = number
        storedDefinition = definition
    }
}

extension ClickerStore {
    /// The question set of `poll`, in order (question 1 first); empty when its questions are asked ad hoc.
    package func plan(poll: Int64) throws -> [QuestionDefinition] {
        try pool.read { db in try Self.plan(db, poll: poll) }
    }

    static func plan(_ db: Database, poll: Int64) throws -> [QuestionDefinition] {
        try PlannedQuestion.filter(Column("poll_id") == poll).order(Column("number")).fetchAll(db).compactMap(\.storedDefinition)
    }

    /// Keeps `definitions` as the question set of `poll` (questions 1…n), replacing any set it had.
    public func savePlan(poll: Int64, _ definitions: [QuestionDefinition]) throws {
        try pool.write { db in
            try Self.requirePoll(db, poll)
            try PlannedQuestion.filter(Column("poll_id") == poll).deleteAll(db)
            for (i, d) in definitions.enumerated() { try PlannedQuestion(poll: poll, number: i + 1, definition: d).insert(db) }
        }
    }

    /// The question set's table.
    static func registerPlanMigration(_ m: inout DatabaseMigrator) {
        m.registerMigration("question-plan") { db in
            try db.create(table: PlannedQuestion.databaseTableName) { t in
                t.column("poll_id", .integer).notNull().references("poll", onDelete: .cascade)
                t.column("number", .integer).notNull()
                t.column("answer_kinds", .text)
                t.column("options", .integer)
                t.column("option_texts", .text)
                t.column("title", .text)
                t.column("numeric_decimals", .integer)
                t.column("numeric_lowest", .integer)
                t.column("numeric_highest", .integer)
                t.column("correct_answers", .text)
                t.column("points", .double)
                t.primaryKey(["poll_id", "number"])
            }
        }
    }
}
