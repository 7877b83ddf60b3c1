import ArgumentParser
import ClickerCommandLine
import ClickerQuestions
import ClickerTally
import ClickerWire
import Foundation

/// An ad-hoc question on the command line: `--kind`, `--options`, `--title`, `--range`, `--decimals`.
struct QuestionArguments: ParsableArguments {
    @Option(help: ArgumentHelp("Kind of question: single (default), multi, truefalse, numeric or ranked.", valueName: "kind"))
    var kind: String?

    @Option(name: .customLong("options"),
            help: ArgumentHelp("Options offered: their number, 2-8 (default 4; --resume: the open poll's), or their texts separated by commas (\"Paris,Rome,Oslo\").",
                               valueName: "n|texts"))
    var optionsGiven: String?

    @Option(help: ArgumentHelp("The question's title.", valueName: "text"))
    var title: String?

    @Option(parsing: .unconditional,
            help: ArgumentHelp("A numeric question's range, in the students' units: LOW..HIGH, e.g. 0..100 or -2.5..2.5.", valueName: "low..high"))
    var range: String?

    @Option(help: ArgumentHelp("Digits after the decimal point of a numeric question's answers, 0-4 (default: the range's).", valueName: "n"))
    var decimals: Int?

    /// Whether any of these flags was given.
    var given: Bool { kind != nil || optionsGiven != nil || title != nil || range != nil || decimals != nil }

    /// `--options` as entries: one count, or the texts.
    var optionEntries: [String] {
        guard let o = optionsGiven else { return [] }
        if Int(o.trimmingCharacters(in: .whitespaces)) != nil { return [o] }
        return o.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    }

    /// `--options N`, when a count was given.
    var optionCount: Int? { optionsGiven.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }

    /// The question these flags define (number `number`); without `--kind` a single choice.
    func spec(number: UInt8) throws -> QuestionSpec {
        let kind = self.kind ?? "single"
        var entries = optionEntries
        if entries.isEmpty, ["single", "multi", "ranked"].contains(kind.lowercased()) { entries = ["4"] }
        do {
            return try AdHocQuestion.spec(number: number, kind: kind, options: entries, title: title, range: range,
                                          decimals: decimals)
        } catch {
            throw ValidationError("\(error)")
        }
    }

    /// What D-Bus takes for this question: kind, options (texts, a count, or a numeric range) and title.
    func busArguments() throws -> (kind: String, options: [String], title: String) {
        let spec = try spec(number: 1)
        guard let kind = QuestionKind(spec) else { throw ValidationError("not a question kind") }
        var options = spec.optionTexts.isEmpty ? [String(spec.options)] : spec.optionTexts
        switch kind {
        case .truefalse: options = []
        case .numeric:
            options = spec.numeric.map { r in
                [NumericText.text(r.lowest, decimals: r.decimals) + ".." + NumericText.text(r.highest, decimals: r.decimals)]
            } ?? []
        default: break
        }
        return (kind.rawValue, options, spec.title ?? "")
    }
}

/// Reads a question set file (`--questions`); errors name the file's line and field.
func readQuestionSet(_ path: String) throws -> [QuestionSpec] {
    let text: String
    do { text = try TextFile.read(path, limit: QuestionFile.maxBytes) } catch {
        throw Failure("cannot read the question file \(path): \(error)")
    }
    do { return try QuestionFile.parse(text, file: path) } catch { throw Failure(error.description) }
}
