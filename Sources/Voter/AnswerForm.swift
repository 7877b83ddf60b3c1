import ClickerWire

/// The question as `clicker-vote --kind … --options …` describes it: turns a typed answer into one
/// the question offers, or refuses it with what the question takes. The last check is the tally's
/// own (``Answer/isOffered(kinds:options:range:)``), so the voter never advertises an answer the
/// tally would count as `answerNotOffered`. Pure.
public struct AnswerForm: Sendable, Hashable {
    /// The kinds a student names on the command line: the tally's own names.
    public typealias Kind = QuestionKind

    public let kind: Kind
    /// Options A… offered (single, multi, ranked): 1…8.
    public let options: Int
    /// Digits after the decimal point of a numeric question: 0…4.
    public let decimals: Int
    /// Wire values a numeric question takes (`value / 10^decimals` is the number).
    public let range: ClosedRange<Int16>

    /// A form for `kind`; `options` is clamped to 1…8, `decimals` to 0…4.
    public init(kind: Kind, options: Int = 4, decimals: Int = 0, range: ClosedRange<Int16> = .min ... .max) {
        self.kind = kind
        self.options = max(1, min(options, Answer.maxOptions))
        self.decimals = max(0, min(decimals, NumericText.maxDecimals))
        self.range = range
    }

    /// `LOW..HIGH` as typed (`-5..5`, `0..10.5`), in the question's decimals, as wire values.
    public static func range(parsing text: String, decimals: Int) throws(AnswerRefusal) -> ClosedRange<Int16> {
        switch NumericText.bounds(text, decimals: decimals) {
        case .success(let r): return r
        case .failure(let e): throw AnswerRefusal(reason: e.description, subject: "--range", takes: "LOW..HIGH, like 0..10 or -5..5")
        }
    }

    /// What the question takes, as the refusal says it.
    public var takes: String {
        let last = Answer.choice(UInt8(options - 1)).description
        let letters = options == 1 ? "A" : "A to \(last)"
        switch kind {
        case .single: return "one letter, \(letters)"
        case .multi: return "one or more different letters from \(letters), joined by +, like \(options > 2 ? "A+C" : "A+B")"
        case .truefalse: return "true or false"
        case .numeric:
            let low = NumericText.text(range.lowerBound, decimals: decimals)
            let high = NumericText.text(range.upperBound, decimals: decimals)
            let places = decimals == 0 ? "a whole number" : "a number with at most \(decimals) decimal\(decimals == 1 ? "" : "s")"
            return "\(places) from \(low) to \(high)"
        case .ranked:
            return "different letters from \(letters) in order of preference, like \(options > 2 ? "C>A" : "B>A") (rank as many as you like)"
        }
    }

    /// The answer `text` gives to this question. A single letter also answers a multi-select (that
    /// option alone) and a ranking (that option first, nothing else ranked); a number is read in the
    /// question's decimals (`3.5` with 1 decimal is sent as 35).
    public func answer(_ text: some StringProtocol) throws(AnswerRefusal) -> Answer {
        let shown = String(text).trimmingWhitespace()
        var answer: Answer
        if kind == .numeric {
            switch NumericText.wire(shown, decimals: decimals) {
            case .success(let v): answer = .numeric(v)
            case .failure(.tooManyDecimals(let t, decimals: 0)): throw AnswerRefusal(reason: "'\(t)' is not a whole number", takes: takes)
            case .failure(let e): throw AnswerRefusal(reason: e.description, takes: takes)
            }
        } else {
            do { answer = try Answer(parsing: shown) } catch {
                switch error {
                // A decimal typed for a question that takes no number: not a matter of --decimals.
                case .decimalNeedsForm: throw AnswerRefusal(reason: "'\(shown)' does not answer this question", takes: takes)
                // The letters this question offers are in `takes`, not the eight the wire allows.
                case .badLetter(let s) where kind.hasOptions: throw AnswerRefusal(reason: "'\(s)' is not an option letter", takes: takes)
                case .badLetter: throw AnswerRefusal(reason: "'\(shown)' does not answer this question", takes: takes)
                default: throw AnswerRefusal(reason: error.description, takes: takes)
                }
            }
            switch (kind, answer) {
            case (.multi, .choice(let i)): answer = .multiSelect(1 << i)
            case (.ranked, .choice(let i)): if let r = Ranking(order: [i]) { answer = .ranking(r) }
            default: break
            }
        }
        guard !answer.isOffered(kinds: [kind.answerKind], options: options, range: range) else { return answer }
        throw AnswerRefusal(reason: refusal(of: answer, typed: shown), takes: takes)
    }

    /// Why an answer that parsed is not offered.
    func refusal(of answer: Answer, typed: String) -> String {
        guard answer.kind == kind.answerKind else { return "'\(typed)' does not answer this question" }
        if case .numeric = answer { return "\(typed) is out of range" }
        let beyond = (0..<UInt8(Answer.maxOptions)).filter { Int($0) >= options && names(answer, $0) }
        let letters = beyond.map { Answer.choice($0).description }.joined(separator: ", ")
        return beyond.count == 1 ? "option \(letters) is not offered" : "options \(letters) are not offered"
    }

    /// Whether `answer` names option `i`.
    func names(_ answer: Answer, _ i: UInt8) -> Bool {
        switch answer {
        case .choice(let c): c == i
        case .multiSelect(let m): m & (1 << i) != 0
        case .ranking(let r): r.order.contains(i)
        case .trueFalse, .numeric: false
        }
    }
}

/// An answer the question does not offer: why, and what it takes.
public struct AnswerRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    public var reason: String
    /// What takes it: "this question", or the option given wrong.
    public var subject: String
    public var takes: String

    public init(reason: String, subject: String = "this question", takes: String) {
        self.reason = reason
        self.subject = subject
        self.takes = takes
    }

    public var description: String { "\(reason); \(subject) takes \(takes)" }
}
