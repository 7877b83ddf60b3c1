import ClickerWire

/// Scores of a roster poll: each student, per question and in total, for participation and for
/// correctness. Pure.
///
/// The rules:
/// - **Participation.** A student took part in a question when a ballot of theirs counts for it
///   (the tally's counted answer; a ballot rejected as not offered never counts). Every question
///   of the poll counts, graded or not: the participation score is the number of questions
///   answered, out of the number asked.
/// - **Correctness.** A question is graded when it has correct answers. An answer is correct when
///   it equals one of them, exactly:
///   - single choice and true/false: the same option or value;
///   - multi-select: exactly the same set of options (no partial credit: `A+C` is not `A`);
///   - numeric: exactly the same wire value, so in the question's decimals (`3.5` with 1 decimal is
///     35; a question that accepts a band lists each value of it among its correct answers);
///   - ranked: exactly the same order over the same options (`B>A` is neither `B>A>C` nor `A>B`).
///   A lone letter given as the correct answer of a multi-select or ranked question means that
///   option alone. A correct answer scores the question's points (1 when it declares none); a wrong
///   answer or none scores 0. The correctness score is the sum, out of the graded questions' points.
public struct Gradebook: Sendable, Hashable {
    /// One question's standing in the gradebook.
    public struct Question: Sendable, Hashable {
        public var spec: QuestionSpec
        /// Whether it has correct answers.
        public var graded: Bool { !spec.correct.isEmpty }
        /// Points a correct answer scores (graded questions), 1 when the question declares none.
        public var pointsPossible: Double { graded ? max(0, spec.points ?? 1) : 0 }
    }

    /// One student's answer to one question, and what it scored.
    public struct Score: Sendable, Hashable {
        /// The counted answer; nil when the student did not answer.
        public var answer: Answer?
        /// Whether the answer is correct; nil for an ungraded question.
        public var correct: Bool?
        /// Points scored: the question's points when correct, else 0; nil for an ungraded question.
        public var points: Double?

        public var answered: Bool { answer != nil }
    }

    /// One enrolled student's row.
    public struct Student: Sendable, Hashable {
        public var entry: RosterEntry
        /// One score per question, in the order of ``Gradebook/questions``.
        public var scores: [Score]
        /// Questions answered.
        public var answered: Int { scores.reduce(0) { $0 + ($1.answered ? 1 : 0) } }
        /// Points scored over the graded questions.
        public var points: Double { scores.reduce(0) { $0 + ($1.points ?? 0) } }
    }

    /// The poll's questions, by number.
    public let questions: [Question]
    /// Every enrolled student, in roster order (those who never answered included).
    public let students: [Student]

    /// Questions asked (the participation score's maximum).
    public var questionsAsked: Int { questions.count }
    /// The correctness score's maximum: the graded questions' points.
    public var pointsPossible: Double { questions.reduce(0) { $0 + $1.pointsPossible } }
    /// Whether any question has correct answers.
    public var graded: Bool { questions.contains { $0.graded } }

    /// Scores `answers[q][s]`, the counted answer of student `s` (roster order) to question `q`
    /// (`specs` order; sorted here by number). A missing entry is no answer.
    public init(roster: Roster, questions specs: [QuestionSpec], answers: [[Answer?]]) {
        let order = specs.indices.sorted { specs[$0].number < specs[$1].number }
        questions = order.map { Question(spec: specs[$0]) }
        students = roster.entries.enumerated().map { s, entry in
            Student(entry: entry, scores: order.map { q in
                let answer = q < answers.count && s < answers[q].count ? answers[q][s] : nil
                return Self.score(answer, for: specs[q])
            })
        }
    }

    /// The gradebook of a roster poll's tally; `keyring` built from the roster's keys.
    public init(roster: Roster, tally: Tally, keyring: PollKeyring) {
        let numbers = tally.questions.keys.sorted()
        var specs: [QuestionSpec] = []
        var answers: [[Answer?]] = []
        for n in numbers {
            guard let q = tally.question(n), let results = tally.results(question: n) else { continue }
            specs.append(q.spec)
            answers.append(roster.answers(results, keyring: keyring).map(\.answer))
        }
        self.init(roster: roster, questions: specs, answers: answers)
    }

    /// What `answer` scores on `spec` (see the rules above).
    public static func score(_ answer: Answer?, for spec: QuestionSpec) -> Score {
        guard !spec.correct.isEmpty else { return Score(answer: answer, correct: nil, points: nil) }
        guard let answer else { return Score(answer: nil, correct: false, points: 0) }
        let correct = isCorrect(answer, for: spec)
        return Score(answer: answer, correct: correct, points: correct ? max(0, spec.points ?? 1) : 0)
    }

    /// Whether `answer` is one of `spec`'s correct answers, compared exactly (see the rules above).
    public static func isCorrect(_ answer: Answer, for spec: QuestionSpec) -> Bool {
        spec.correct.contains { normalized($0, for: spec) == answer }
    }

    /// A lone letter given as the correct answer of a question that takes only sets or only
    /// rankings, as that question's answer naming that option alone.
    static func normalized(_ correct: Answer, for spec: QuestionSpec) -> Answer {
        guard case .choice(let i) = correct, !spec.kinds.contains(.choice) else { return correct }
        if spec.kinds.contains(.multiSelect) { return .multiSelect(1 << i) }
        if spec.kinds.contains(.ranking), let r = Ranking(order: [i]) { return .ranking(r) }
        return correct
    }
}
