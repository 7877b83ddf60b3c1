import ClickerTally
import ClickerWire

/// Reads the correct answer of a question as the instructor writes it: `C` (single), `A+C` (multi),
/// `true` (true/false), `9.81` (numeric, in the question's decimals), `B>A>C` (ranked).
enum CorrectAnswer {
    /// Why an answer is not one the question offers.
    struct Why: Error, ExpressibleByStringInterpolation {
        var text: String
        init(_ text: String) { self.text = text }
        init(stringLiteral value: String) { text = value }
    }

    static func parse(_ text: String, kind: QuestionKind, options: Int, numeric: NumericRange?) -> Result<Answer, Why> {
        let t = String(text.trimmingWhitespace())
        func letters(_ parts: [Substring]) -> Result<[UInt8], Why> {
            var seen: [UInt8] = []
            for p in parts {
                let s = p.trimmingWhitespace()
                guard s.count == 1, let c = s.first, case .choice(let i)? = Answer.letter(c) else {
                    return .failure("'\(s)' is not an option letter")
                }
                guard Int(i) < options else { return .failure("'\(s)' is not one of the options \(offered(options))") }
                guard !seen.contains(i) else { return .failure("'\(s)' appears twice in '\(t)'") }
                seen.append(i)
            }
            return seen.isEmpty ? .failure("'\(t)' names no option") : .success(seen)
        }
        switch kind {
        case .single:
            return letters([Substring(t)]).map { .choice($0[0]) }
        case .multi:
            return letters(t.split(separator: "+", omittingEmptySubsequences: false)).map { ls in
                .multiSelect(ls.reduce(0) { $0 | 1 << $1 })
            }
        case .ranked:
            return letters(t.split(separator: ">", omittingEmptySubsequences: false)).flatMap { ls in
                Ranking(order: ls).map { .success(.ranking($0)) } ?? .failure("'\(t)' is not a ranking")
            }
        case .truefalse:
            switch t.lowercased() {
            case "true": return .success(.trueFalse(true))
            case "false": return .success(.trueFalse(false))
            default: return .failure("'\(t)' is neither true nor false")
            }
        case .numeric:
            let range = numeric ?? NumericRange()
            switch NumericText.wire(t, decimals: range.decimals) {
            case .failure(let e): return .failure(Why(e.description))
            case .success(let v):
                guard range.contains(v) else {
                    return .failure(Why("\(t) is outside the range \(NumericText.text(range.lowest, decimals: range.decimals))"
                                        + "..\(NumericText.text(range.highest, decimals: range.decimals))"))
                }
                return .success(.numeric(v))
            }
        }
    }

    /// "A to D".
    static func offered(_ options: Int) -> String {
        "A to \(Answer.choice(UInt8(max(1, min(options, 8)) - 1)))"
    }
}
