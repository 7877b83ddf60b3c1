import ClickerTally
import ClickerWire
import Yams

/// Reads a question set: a YAML file with one entry per question, numbered 1… in file order.
///
/// ```yaml
/// questions:
///   - title: Which planet is the largest?
///     kind: single
///     options: [Mercury, Venus, Jupiter, Mars]
///     correct: C
///     points: 1
/// ```
///
/// Pure: it parses text. Every error names the file's line and, inside a question, the question's
/// number and the field (``QuestionFileError``).
public enum QuestionFile {
    /// The fields a question may have.
    public static let fields = ["title", "kind", "options", "correct", "points", "range", "decimals"]
    /// At most this many questions (question numbers are 1…255).
    public static let maxQuestions = 255

    /// The questions of `text`, numbered 1…n; `file` names it in errors.
    public static func parse(_ text: String, file: String) throws(QuestionFileError) -> [QuestionSpec] {
        try checkBudget(text, file: file)
        let root: Node?
        do { root = try Yams.compose(yaml: text) } catch let e as YamlError {
            if case .duplicatedKeysInMapping(let keys, let context) = e,
               let n = question(withKeyOnLine: context.mark.line, before: e.line(in: text), in: text) {
                throw QuestionFileError(file: file, line: e.line(in: text),
                                        message: "question \(n): '\(keys.first ?? "?")': given twice (first on line \(context.mark.line))")
            }
            throw QuestionFileError(file: file, line: e.line(in: text), message: e.summary)
        } catch {
            throw QuestionFileError(file: file, line: 1, message: "\(error)")
        }
        guard let root, case .mapping(let top) = root else {
            throw QuestionFileError(file: file, line: root?.mark?.line ?? 1,
                                    message: "no questions: the file must hold 'questions:', a list of questions")
        }
        var list: Node?
        for (key, value) in top {
            guard key.string == "questions" else {
                throw QuestionFileError(file: file, line: key.mark?.line ?? 1,
                                        message: "'\(key.string ?? "?")' is not a field of a question file (only 'questions')")
            }
            list = value
        }
        guard let list else {
            throw QuestionFileError(file: file, line: root.mark?.line ?? 1, message: "'questions' is missing")
        }
        guard case .sequence(let entries) = list, !entries.isEmpty else {
            throw QuestionFileError(file: file, line: list.mark?.line ?? 1,
                                    message: "'questions' must be a list of questions (each starting with '- title:')")
        }
        guard entries.count <= maxQuestions else {
            throw QuestionFileError(file: file, line: list.mark?.line ?? 1,
                                    message: "'questions': \(entries.count) questions, at most \(maxQuestions)")
        }
        var specs: [QuestionSpec] = []
        for (i, entry) in entries.enumerated() {
            var reader = QuestionReader(file: file, number: i + 1)
            specs.append(try reader.read(entry))
        }
        return specs
    }
}

extension QuestionFile {
    /// The number of the question that has a key on line `keyLine`, read from the text before line
    /// `end` (where the duplicate key is, so that it parses): for naming the question of a key given twice.
    static func question(withKeyOnLine keyLine: Int, before end: Int, in text: String) -> Int? {
        let head = text.split(separator: "\n", omittingEmptySubsequences: false).prefix(max(0, end - 1)).joined(separator: "\n")
        guard let root = try? Yams.compose(yaml: head), case .sequence(let entries)? = root.mapping?["questions"] else { return nil }
        for (i, entry) in entries.enumerated() {
            guard case .mapping(let map) = entry else { continue }
            if map.contains(where: { $0.key.mark?.line == keyLine }) { return i + 1 }
        }
        return nil
    }
}

/// An error in a question file: `lecture.yaml:7: question 2: 'kind': 'multiple' is not one of …`.
public struct QuestionFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public var file: String
    /// 1-based line.
    public var line: Int
    /// What is wrong, starting with the question and field when there is one.
    public var message: String

    public var description: String { "\(file):\(line): \(message)" }
}

/// Reads one question of the file.
struct QuestionReader {
    let file: String
    let number: Int

    func fail(_ node: Node?, _ field: String?, _ why: String) -> QuestionFileError {
        QuestionFileError(file: file, line: node?.mark?.line ?? 1,
                          message: "question \(number): " + (field.map { "'\($0)': " } ?? "") + why)
    }

    /// A scalar's text, or an error naming the field.
    func text(_ node: Node, _ field: String) throws(QuestionFileError) -> String {
        guard case .scalar(let s) = node else { throw fail(node, field, "must be a single value, not a list or mapping") }
        return s.string
    }

    /// One text or a list of them.
    func texts(_ node: Node, _ field: String) throws(QuestionFileError) -> [(String, Node)] {
        switch node {
        case .scalar(let s): return [(s.string, node)]
        case .sequence(let seq):
            var out: [(String, Node)] = []
            for n in seq { out.append((try text(n, field), n)) }
            return out
        default: throw fail(node, field, "must be a value or a list of values")
        }
    }

    mutating func read(_ entry: Node) throws(QuestionFileError) -> QuestionSpec {
        guard case .mapping(let map) = entry else {
            throw fail(entry, nil, "must be a mapping of fields (title, kind, …), not a single value or list")
        }
        var given: [String: (key: Node, value: Node)] = [:]
        for (key, value) in map {
            let name = key.string ?? "?"
            guard QuestionFile.fields.contains(name) else {
                throw fail(key, nil, "'\(name)' is not a field of a question (\(QuestionFile.fields.joined(separator: ", ")))")
            }
            given[name] = (key, value)
        }
        guard let kindField = given["kind"] else { throw fail(entry, "kind", "missing: one of \(QuestionKind.names)") }
        let kindText = try text(kindField.value, "kind")
        guard let kind = QuestionKind(rawValue: kindText) else {
            throw fail(kindField.value, "kind", "'\(kindText)' is not one of \(QuestionKind.names)")
        }
        guard let titleField = given["title"] else { throw fail(entry, "title", "missing") }
        let title = String(try text(titleField.value, "title").trimmingWhitespace())
        guard !title.isEmpty else { throw fail(titleField.value, "title", "is empty") }
        guard !QuestionLimits.exceeds(title, QuestionLimits.titleCharacters) else {
            throw fail(titleField.value, "title", "longer than \(QuestionLimits.titleCharacters) characters")
        }

        var options = 1
        var optionTexts: [String] = []
        if let o = given["options"] {
            guard kind.hasOptions else {
                throw fail(o.key, "options", kind == .truefalse ? "a truefalse question offers true and false, no options"
                                                               : "a numeric question takes a number, no options")
            }
            guard case .sequence(let seq) = o.value else {
                throw fail(o.value, "options", "must be a list of option texts, like [Paris, Rome, Oslo]")
            }
            for n in seq {
                let t = String(try text(n, "options").trimmingWhitespace())
                guard !t.isEmpty else { throw fail(n, "options", "option \(optionTexts.count + 1) has no text") }
                guard !QuestionLimits.exceeds(t, QuestionLimits.optionCharacters) else {
                    throw fail(n, "options", "option \(optionTexts.count + 1) is longer than \(QuestionLimits.optionCharacters) characters")
                }
                optionTexts.append(t)
            }
            guard optionTexts.count <= Answer.maxOptions else {
                throw fail(o.value, "options", "\(optionTexts.count) options, at most \(Answer.maxOptions) (A to H)")
            }
            guard optionTexts.count >= 2 else {
                throw fail(o.value, "options", "\(optionTexts.count) option\(optionTexts.count == 1 ? "" : "s"), at least 2")
            }
            options = optionTexts.count
        } else if kind.hasOptions {
            throw fail(entry, "options", "missing: a \(kind.rawValue) question lists its option texts")
        } else if kind == .truefalse {
            options = 2
        }

        var numeric: NumericRange?
        if kind == .numeric {
            var decimals = 0
            if let d = given["decimals"] {
                let t = try text(d.value, "decimals")
                guard let n = Int(t), (0...4).contains(n) else { throw fail(d.value, "decimals", "'\(t)' is not 0 to 4") }
                decimals = n
            }
            numeric = NumericRange(decimals: decimals)
            if let r = given["range"] {
                switch NumericText.range(try text(r.value, "range"), decimals: decimals) {
                case .success(let range): numeric = range
                case .failure(let e): throw fail(r.value, "range", e.description)
                }
            }
        } else {
            for field in ["range", "decimals"] {
                if let f = given[field] { throw fail(f.key, field, "only a numeric question has a \(field)") }
            }
        }

        var correct: [Answer] = []
        if let c = given["correct"] {
            for (t, node) in try texts(c.value, "correct") {
                switch CorrectAnswer.parse(t, kind: kind, options: options, numeric: numeric) {
                case .success(let a): if !correct.contains(a) { correct.append(a) }
                case .failure(let why): throw fail(node, "correct", why.text)
                }
            }
        }
        var points: Double?
        if let p = given["points"] {
            let t = try text(p.value, "points")
            guard let v = Double(t), v.isFinite, v >= 0 else { throw fail(p.value, "points", "'\(t)' is not a number of points (0 or more)") }
            guard !correct.isEmpty else { throw fail(p.key, "points", "points need a correct answer ('correct')") }
            points = v
        }
        return QuestionSpec(number: UInt8(number), options: options, kinds: [kind.answerKind], title: title,
                            optionTexts: optionTexts, numeric: numeric, correct: correct, points: points)
    }
}

extension YamlError {
    /// The line the parser stopped at.
    func line(in text: String) -> Int {
        switch self {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): return mark.line
        case .duplicatedKeysInMapping(let keys, let context):
            return Self.secondOccurrence(of: keys.first ?? "", after: context.mark, in: text) ?? context.mark.line
        case .reader(_, let offset?, _, _):
            return text.prefix(offset).reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
        default: return 1
        }
    }

    /// The problem, without the libyaml wording's positions (the line is given before it).
    var summary: String {
        switch self {
        case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _):
            return "not valid YAML: \(problem)"
        case .duplicatedKeysInMapping(let keys, let context):
            let key = keys.first ?? "?"
            return "'\(key)' is given twice in one mapping (first on line \(context.mark.line))"
        case .reader(let problem, _, _, _): return "not readable text: \(problem)"
        default: return "\(self)"
        }
    }

    /// Where a duplicated key appears again: the next line at the same column that starts with it.
    static func secondOccurrence(of key: String, after mark: Mark, in text: String) -> Int? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard mark.line >= 1, mark.line <= lines.count else { return nil }
        for i in mark.line..<lines.count {
            let line = lines[i]
            guard line.count >= mark.column else { continue }
            let rest = line.dropFirst(mark.column - 1)
            let prefix = line.prefix(mark.column - 1)
            if rest.hasPrefix(key), rest.dropFirst(key.count).trimmingWhitespace().hasPrefix(":"),
               prefix.allSatisfy({ $0 == " " || $0 == "-" }) {
                return i + 1
            }
        }
        return nil
    }
}
