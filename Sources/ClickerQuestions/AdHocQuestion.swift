import ClickerTally
import ClickerWire

/// A question asked without a file: a kind, options and a title, as the command line
/// (`--kind --options --title --range --decimals`) and D-Bus (`OpenQuestion`, `NextQuestion`) give them.
public enum AdHocQuestion {
    /// Question `number` of `kind`. `options`: for single, multi and ranked, the option texts, or one
    /// entry holding their count (2 to 8, letters only); none for truefalse; for numeric, none or one
    /// entry holding the range `LOW..HIGH`. `range` and `decimals` (the command line's) are for
    /// numeric only; without `decimals` a range's own decimals count (`0.0..10.0` takes one).
    public static func spec(number: UInt8, kind kindName: String, options: [String], title: String?,
                            range: String? = nil, decimals: Int? = nil) throws(AdHocQuestionError) -> QuestionSpec {
        guard let kind = QuestionKind(rawValue: kindName.lowercased()) else { throw .unknownKind(kindName) }
        let title = title.map { String($0.trimmingWhitespace()) }.flatMap { $0.isEmpty ? nil : $0 }
        if let title, QuestionLimits.exceeds(title, QuestionLimits.titleCharacters) { throw .titleTooLong }
        var entries = options.map { String($0.trimmingWhitespace()) }
        if let i = entries.firstIndex(where: { QuestionLimits.exceeds($0, QuestionLimits.optionCharacters) }) {
            throw .optionTooLong(i + 1)
        }
        // One empty entry is no options (what `dbus-send array:string:` sends).
        if entries == [""] { entries = [] }
        switch kind {
        case .single, .multi, .ranked:
            guard range == nil, decimals == nil else { throw .notNumeric(kind) }
            var count = entries.count
            var texts = entries
            if entries.count == 1, let n = Int(entries[0]) { count = n; texts = [] }
            guard (2...Answer.maxOptions).contains(count) else { throw .optionCount(count) }
            if let i = texts.firstIndex(where: \.isEmpty) { throw .emptyOption(i + 1) }
            return QuestionSpec(number: number, options: count, kinds: [kind.answerKind], title: title, optionTexts: texts)
        case .truefalse:
            guard range == nil, decimals == nil else { throw .notNumeric(kind) }
            guard entries.isEmpty else { throw .noOptions(kind) }
            return QuestionSpec(number: number, options: 2, kinds: [.trueFalse], title: title)
        case .numeric:
            guard entries.count <= 1, !(entries.count == 1 && range != nil) else { throw .noOptions(kind) }
            if let d = decimals, !(0...4).contains(d) { throw .decimals(d) }
            let text = range ?? entries.first
            // A range's own decimals are held to the same limit: `NumericRange` would clamp them,
            // and store a range that is not the one written.
            if decimals == nil, let text, !(0...4).contains(NumericText.decimals(in: text)) {
                throw .rangeDecimals(text, NumericText.decimals(in: text))
            }
            var numeric = NumericRange(decimals: decimals ?? 0)
            if let text {
                switch NumericText.range(text, decimals: decimals ?? NumericText.decimals(in: text)) {
                case .success(let r): numeric = r
                case .failure(let e): throw .range(e)
                }
            }
            return QuestionSpec(number: number, options: 1, kinds: [.numeric], title: title, numeric: numeric)
        }
    }
}

/// Why an ad-hoc question was refused.
public enum AdHocQuestionError: Error, Sendable, Equatable, CustomStringConvertible {
    case unknownKind(String)
    case optionCount(Int)
    case emptyOption(Int)
    case noOptions(QuestionKind)
    case notNumeric(QuestionKind)
    case decimals(Int)
    case rangeDecimals(String, Int)
    case range(NumericTextError)
    case titleTooLong
    case optionTooLong(Int)

    public var description: String {
        switch self {
        case .unknownKind(let k): "'\(k)' is not a question kind: one of \(QuestionKind.names)"
        case .optionCount(let n): "\(n) options: a question offers 2 to \(Answer.maxOptions) (A to H)"
        case .emptyOption(let i): "option \(i) has no text"
        case .noOptions(let k):
            k == .truefalse ? "a truefalse question offers true and false: give it no options"
                : "a numeric question takes no options, only a range LOW..HIGH"
        case .notNumeric(let k): "a \(k.rawValue) question has no range or decimals: only a numeric question has"
        case .decimals(let d): "\(d) decimals: a numeric question has 0 to 4"
        case let .rangeDecimals(t, d):
            "range '\(t)' has \(d) decimals: a numeric question has 0 to 4 (the 16 bits a ballot carries)"
        case .range(let e): "range: \(e)"
        case .titleTooLong: "the title is longer than \(QuestionLimits.titleCharacters) characters"
        case .optionTooLong(let i): "option \(i) is longer than \(QuestionLimits.optionCharacters) characters"
        }
    }
}
