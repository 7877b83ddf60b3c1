import ClickerTally
import ClickerWire

/// The command a student types to answer the open question, as the page shows it: `clicker-vote`,
/// `--roster` in a roster poll, the join code and an answer the question offers. The voter follows
/// the beacon (docs/PROTOCOL.md §11.10): it casts that answer for the open question, shows whether
/// it counted and goes on to the next question with the class, so the command names no question
/// and no kind. Pure.
public enum HowToVote {
    /// The command's arguments after `clicker-vote`, one per element, unquoted.
    public static func arguments(joinCode: String, roster: Bool, spec: QuestionSpec) -> [String] {
        var args: [String] = []
        if roster { args.append("--roster") }
        let answer = exampleAnswer(spec)
        // A negative number would read as an option: `--` ends them.
        if answer.hasPrefix("-") { args.append("--") }
        return args + [joinCode, answer]
    }

    /// The page's line: `Vote: clicker-vote …`, each argument quoted for a shell where it needs it
    /// (a ranking's `>` would redirect).
    public static func line(joinCode: String, roster: Bool, spec: QuestionSpec) -> String {
        "Vote: clicker-vote " + arguments(joinCode: joinCode, roster: roster, spec: spec).map(quoted).joined(separator: " ")
    }

    /// The kind of answer the question's results take.
    public static func kind(of spec: QuestionSpec) -> QuestionKind {
        switch ResultKind(kinds: spec.kinds) {
        case .choice: .single
        case .trueFalse: .truefalse
        case .multiSelect: .multi
        case .numeric: .numeric
        case .ranked: .ranked
        }
    }

    /// An answer the question offers, as a student types it: `A`, `true`, `A+C`, `B>A>C`, or for a
    /// numeric question a number inside its range in its units (a whole one when the range has one).
    public static func exampleAnswer(_ spec: QuestionSpec) -> String {
        let letters = (0..<UInt8(spec.options)).map { Answer.choice($0).description }
        switch kind(of: spec) {
        case .single: return "A"
        case .truefalse: return "true"
        case .multi: return letters.count > 2 ? "A+C" : letters.joined(separator: "+")
        case .ranked:
            return letters.count > 2 ? "B>A>C" : letters.reversed().joined(separator: ">")
        case .numeric:
            let range = spec.numeric ?? NumericRange()
            return number(in: Int(range.lowest)...Int(range.highest), decimals: range.decimals)
        }
    }

    /// A value in `range` (wire values) as typed: 42 when the range takes it, else the middle of the
    /// range's non-negative part (of the whole range when it has none), rounded to a whole unit when
    /// the range spans several.
    static func number(in range: ClosedRange<Int>, decimals: Int) -> String {
        var scale = 1
        for _ in 0..<decimals { scale *= 10 }
        let value: Int
        if range.contains(42 * scale) {
            value = 42 * scale
        } else {
            let low = range.upperBound >= 0 ? max(range.lowerBound, 0) : range.lowerBound
            let middle = low + (range.upperBound - low) / 2
            let whole = middle / scale * scale
            value = range.upperBound - low >= 2 * scale && range.contains(whole) ? whole : middle
        }
        if value % scale == 0 { return String(value / scale) }
        return NumericText.text(Int16(clamping: value), decimals: decimals)
    }

    /// `text` as a POSIX shell reads it back: as is when it is made of safe characters, else in
    /// single quotes.
    static func quoted(_ text: String) -> String {
        let safe = text.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "+-._:/=".unicodeScalars.contains($0)) }
        if safe && !text.isEmpty { return text }
        return "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
