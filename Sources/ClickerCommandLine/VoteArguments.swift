import ArgumentParser
import ClickerWire
import Voter

/// What `clicker-vote` is told about the vote: the join code, the answer, the question's number and,
/// optionally, the question's kind and what it offers. Its own group so that the command a page tells
/// students to type can be checked against the very parser that reads it.
public struct VoteArguments: ParsableArguments, Sendable {
    @Argument(help: "The join code on the instructor's screen, e.g. 4821-ABCDE-FGHJK.")
    public var joinCode: String

    @Argument(help: "Your answer: A-H, true/false, a multi-select like A+C, a ranking like C>A>B, or a number. Without --question it is cast when a question it answers opens; either way the voter follows the tally's beacon and reads further answers from standard input.")
    public var answer: String?

    @Option(name: .customLong("question"),
            help: "Question number, for a tally that does not beacon (needs an answer). Without it the question comes from the tally's beacon.")
    public var questionOption: UInt8?

    /// The question voted on when not following the beacon.
    public var question: UInt8 { questionOption ?? 1 }

    /// Whether the voter follows the tally's beacon (docs/PROTOCOL.md §11.10): `--question` was not
    /// given. An answer given with it is the first answer, cast when a question it answers opens.
    public var followsBeacon: Bool { questionOption == nil }

    @Flag(help: "Roster mode: sign with this device's enrolled key (see `clicker-vote enroll`).")
    public var roster = false

    @Option(help: ArgumentHelp("The question's kind: single, multi, truefalse, numeric or ranked. An answer it does not offer is refused before anything is advertised.",
                               valueName: "kind"))
    public var kind: AnswerForm.Kind?

    @Option(help: "Options the question offers (letters A…, 2-8; with --kind single, multi or ranked; default 4).")
    public var options: Int?

    @Option(parsing: .unconditional,
            help: ArgumentHelp("Numbers the question takes, e.g. 0..10 or -5..5 (with --kind numeric; in its decimals).", valueName: "LOW..HIGH"))
    public var range: String?

    @Option(help: "Digits after the decimal point a numeric question takes (0-4; with --kind numeric; default: those of --range, else 0).")
    public var decimals: Int?

    public init() {}

    public func validate() throws {
        do { _ = try JoinCode(parsing: joinCode) } catch { throw ValidationError(quoting: "join code: \(error)") }
        let parse = try parser()
        guard let answer else {
            if questionOption != nil { throw ValidationError("give your answer after the join code, or leave out --question to follow the tally's beacon") }
            if kind != nil { throw ValidationError("--kind describes a question given with --question; the beacon says the question's kind") }
            return
        }
        do { _ = try parse(answer) } catch {
            // Following the beacon without --kind, a number with decimals is read in the open question's form.
            if followsBeacon, kind == nil, case AnswerParseError.decimalNeedsForm = error { return }
            throw ValidationError(quoting: "answer: \(error)")
        }
    }

    /// The question as --kind, --options, --range and --decimals describe it; nil without --kind.
    public func form() throws -> AnswerForm? {
        guard let kind else {
            if options != nil || range != nil || decimals != nil {
                throw ValidationError("--options, --range and --decimals describe a question: give its --kind too")
            }
            return nil
        }
        switch kind {
        case .single, .multi, .ranked:
            if range != nil || decimals != nil { throw ValidationError("--range and --decimals are for --kind numeric") }
            // As the tally: a question offers at least two options.
            if let options, !(2...Answer.maxOptions).contains(options) {
                throw ValidationError("--options must be 2 to 8: a question offers 2 to 8 options (A to H)")
            }
            return AnswerForm(kind: kind, options: options ?? 4)
        case .truefalse, .numeric:
            if options != nil { throw ValidationError("--options is for --kind single, multi or ranked") }
            if kind == .truefalse, range != nil || decimals != nil {
                throw ValidationError("--range and --decimals are for --kind numeric")
            }
            // As the tally's --range: without --decimals, the range's own decimals count (0.0..10.0 takes one).
            let places = decimals ?? range.map { NumericText.decimals(in: $0) } ?? 0
            guard (0...NumericText.maxDecimals).contains(places) else { throw ValidationError("--decimals must be 0 to 4") }
            var bounds: ClosedRange<Int16> = .min ... .max
            if let range {
                do { bounds = try AnswerForm.range(parsing: range, decimals: places) } catch {
                    throw ValidationError(quoting: "\(error)")
                }
            }
            return AnswerForm(kind: kind, decimals: places, range: bounds)
        }
    }

    /// Reads an answer: by the question's form when --kind is given, else any well-formed answer.
    public func parser() throws -> @Sendable (String) throws -> Answer {
        guard let form = try form() else { return { try Answer(parsing: $0) } }
        return { try form.answer($0) }
    }
}

extension AnswerForm.Kind: ExpressibleByArgument {}
