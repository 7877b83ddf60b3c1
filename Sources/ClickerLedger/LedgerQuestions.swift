import ClickerTally
import ClickerWire
import PostgresClient

/// A question's answers as the ledger keeps them: what a receiver needs to count it (the number of
/// options, the kinds accepted, a numeric question's range). Titles and option texts stay with the
/// instructor's tally.
enum LedgerQuestions {
    static func parameters(_ spec: QuestionSpec, poll: Int64) -> [PostgresValue] {
        [.int(poll), .int(Int64(spec.number)), .int(Int64(spec.options)),
         .text(spec.kinds.map(\.rawValue).sorted().map(String.init).joined(separator: ",")),
         spec.numeric.map { .int(Int64($0.lowest)) } ?? .null, spec.numeric.map { .int(Int64($0.highest)) } ?? .null]
    }

    /// What of `spec` the ledger keeps (and a receiver counts by).
    static func counted(_ spec: QuestionSpec) -> QuestionSpec {
        QuestionSpec(number: spec.number, options: spec.options, kinds: spec.kinds,
                     numeric: spec.numeric.map { NumericRange(lowest: $0.lowest, highest: $0.highest) })
    }

    /// "question 2 with 4 options, answers choice and numeric, numbers 1…10" (wire values), for an error message.
    static func described(_ spec: QuestionSpec) -> String {
        let kinds = spec.kinds.sorted { $0.rawValue < $1.rawValue }.map { "\($0)" }
        let answers = kinds.count > 1 ? kinds.dropLast().joined(separator: ", ") + " and " + (kinds.last ?? "") : kinds.first ?? "none"
        let range = spec.numeric.map { ", numbers \($0.lowest)…\($0.highest)" } ?? ""
        return "question \(spec.number) with \(spec.options) option\(spec.options == 1 ? "" : "s"), answers \(answers)\(range)"
    }

    static func spec(_ row: PostgresRow) throws(PostgresError) -> QuestionSpec {
        guard let number = UInt8(exactly: try row.int(0)), let options = Int(exactly: try row.int(1)) else {
            throw PostgresError(.badValue, "a question row out of range")
        }
        var kinds = Set<Answer.Kind>()
        for part in try row.text(2).split(separator: ",") {
            guard let raw = UInt8(part), let kind = Answer.Kind(rawValue: raw) else {
                throw PostgresError(.badValue, "question \(number) has an unknown answer kind \(part.prefix(8))")
            }
            kinds.insert(kind)
        }
        var numeric: NumericRange?
        if row.values.count > 4, row.values[3] != nil, row.values[4] != nil {
            guard let low = Int16(exactly: try row.int(3)), let high = Int16(exactly: try row.int(4)) else {
                throw PostgresError(.badValue, "question \(number) has a numeric range out of 16 bits")
            }
            numeric = NumericRange(lowest: low, highest: high)
        }
        return QuestionSpec(number: number, options: options, kinds: kinds, numeric: numeric)
    }
}

extension BallotLedger {
    /// Closes `question` of `poll` (the instructor's role; a receiver's may not): from now on the
    /// ledger takes none of its ballots, from any writer, and receivers stop counting it when they
    /// next look (``closedQuestions(poll:)``). Returns false if it was closed already; throws
    /// `unknownQuestion` for a question not registered.
    @discardableResult
    public func closeQuestion(poll: Int64, question: UInt8) throws(LedgerError) -> Bool {
        let key: [PostgresValue] = [.int(poll), .int(Int64(question))]
        let closed = try Self.mapped {
            // The close is news for whoever follows the poll's counts (`ledger watch` marks it).
            try db.execute("""
                WITH c AS (UPDATE questions SET closed_at = now() WHERE poll_id = $1 AND question = $2 AND closed_at IS NULL
                           RETURNING poll_id)
                SELECT pg_notify('\(LedgerSchema.channel)', poll_id::text) FROM c
                """, key).rows.count
        }
        if closed > 0 { return true }
        guard try closedQuestions(poll: poll).contains(question) else { throw .unknownQuestion(poll: poll, question: question) }
        return false
    }

    /// The questions of `poll` closed in the ledger.
    public func closedQuestions(poll: Int64) throws(LedgerError) -> Set<UInt8> {
        try Self.mapped {
            Set(try db.execute("SELECT question FROM questions WHERE poll_id = $1 AND closed_at IS NOT NULL", [.int(poll)])
                .rows.compactMap { UInt8(exactly: try $0.int(0)) })
        }
    }

    /// The questions registered for `poll`, in order, with the answers each offers.
    public func questions(poll: Int64) throws(LedgerError) -> [QuestionSpec] {
        try Self.mapped {
            try db.execute("""
                SELECT question, options, kinds, numeric_lowest, numeric_highest FROM questions
                WHERE poll_id = $1 ORDER BY question
                """, [.int(poll)]).rows.map(LedgerQuestions.spec)
        }
    }
}
