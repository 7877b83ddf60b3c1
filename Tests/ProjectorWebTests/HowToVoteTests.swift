import ClickerCommandLine
import ClickerTally
import ClickerWire
import ProjectorPage
import Voter
import XCTest

/// The page's line on how to vote is the exact command a student types: read back by clicker-vote's
/// own argument parser (`VoteArguments`), it names the open question and its kind, and its answer is
/// one the question offers.
final class HowToVoteTests: XCTestCase {
    /// Each kind's line, as the page shows it.
    func testEachKindsLine() {
        let code = testCode.description
        let cases: [(QuestionSpec, Bool, String)] = [
            (.choice(1), false, "clicker-vote \(code) A"),
            (.choice(2), false, "clicker-vote --question 2 \(code) A"),
            (.choice(3, options: 5), true, "clicker-vote --roster --question 3 --kind single --options 5 \(code) A"),
            (QuestionSpec(number: 2, kinds: [.trueFalse]), false, "clicker-vote --question 2 --kind truefalse \(code) true"),
            (QuestionSpec(number: 4, options: 3, kinds: [.multiSelect]), false,
             "clicker-vote --question 4 --kind multi --options 3 \(code) A+C"),
            (QuestionSpec(number: 1, options: 2, kinds: [.multiSelect]), false, "clicker-vote --kind multi --options 2 \(code) A+B"),
            // `>` would redirect in a shell: quoted.
            (QuestionSpec(number: 5, options: 4, kinds: [.ranking]), false,
             "clicker-vote --question 5 --kind ranked --options 4 \(code) 'B>A>C'"),
            (QuestionSpec(number: 2, kinds: [.numeric]), false, "clicker-vote --question 2 --kind numeric \(code) 42"),
            // Two decimals, any value: 42 is sent as 4200 (42.00), not as 0.42.
            (QuestionSpec(number: 2, kinds: [.numeric], numeric: NumericRange(decimals: 2)), false,
             "clicker-vote --question 2 --kind numeric --decimals 2 \(code) 42"),
            (QuestionSpec(number: 6, kinds: [.numeric], numeric: NumericRange(decimals: 0, lowest: 1, highest: 5)), false,
             "clicker-vote --question 6 --kind numeric --range 1..5 \(code) 3"),
            (QuestionSpec(number: 6, kinds: [.numeric], numeric: NumericRange(decimals: 2, lowest: 0, highest: 100)), false,
             "clicker-vote --question 6 --kind numeric --range 0.00..1.00 --decimals 2 \(code) 0.50"),
            (QuestionSpec(number: 7, kinds: [.numeric], numeric: NumericRange(decimals: 1, lowest: -50, highest: 50)), false,
             "clicker-vote --question 7 --kind numeric --range -5.0..5.0 --decimals 1 \(code) 2"),
            // All negative: `--` keeps the answer from reading as an option.
            (QuestionSpec(number: 8, kinds: [.numeric], numeric: NumericRange(decimals: 0, lowest: -10, highest: -5)), false,
             "clicker-vote --question 8 --kind numeric --range -10..-5 -- \(code) -8"),
        ]
        for (spec, roster, expected) in cases {
            XCTAssertEqual(HowToVote.line(joinCode: code, roster: roster, spec: spec), "Vote: " + expected, "\(spec)")
        }
    }

    /// Every line, split as a shell splits it, parses with clicker-vote's argument parser into the
    /// question's number, its kind and range, and an answer the question offers.
    func testTheLineParsesWithClickerVotesParserAndItsAnswerIsOffered() throws {
        let specs: [QuestionSpec] = [
            .choice(1), .choice(9), .choice(3, options: 8), .choice(2, options: 2),
            QuestionSpec(number: 2, kinds: [.trueFalse]),
            QuestionSpec(number: 3, options: 2, kinds: [.multiSelect]),
            QuestionSpec(number: 3, options: 8, kinds: [.multiSelect]),
            QuestionSpec(number: 4, options: 2, kinds: [.ranking]),
            QuestionSpec(number: 4, options: 6, kinds: [.ranking]),
            QuestionSpec(number: 5, kinds: [.numeric]),
            QuestionSpec(number: 5, kinds: [.numeric], numeric: NumericRange(decimals: 2)),
            QuestionSpec(number: 5, kinds: [.numeric], numeric: NumericRange(decimals: 4)),
            QuestionSpec(number: 6, kinds: [.numeric], numeric: NumericRange(decimals: 0, lowest: 1, highest: 5)),
            QuestionSpec(number: 6, kinds: [.numeric], numeric: NumericRange(decimals: 2, lowest: 0, highest: 100)),
            QuestionSpec(number: 6, kinds: [.numeric], numeric: NumericRange(decimals: 1, lowest: -50, highest: 50)),
            QuestionSpec(number: 6, kinds: [.numeric], numeric: NumericRange(decimals: 0, lowest: -10, highest: -5)),
            QuestionSpec(number: 6, kinds: [.numeric], numeric: NumericRange(decimals: 3, lowest: 7, highest: 7)),
            QuestionSpec(number: 6, kinds: [.numeric], numeric: NumericRange(decimals: 0, lowest: 100, highest: 32767)),
        ]
        for spec in specs {
            for roster in [false, true] {
                let line = HowToVote.line(joinCode: testCode.description, roster: roster, spec: spec)
                let words = try XCTUnwrap(shellWords(line), line)
                XCTAssertEqual(Array(words.prefix(2)), ["Vote:", "clicker-vote"], line)
                XCTAssertEqual(Array(words.dropFirst(2)),
                               HowToVote.arguments(joinCode: testCode.description, roster: roster, spec: spec), line)
                let parsed: VoteArguments
                do { parsed = try VoteArguments.parse(Array(words.dropFirst(2))) } catch {
                    XCTFail("\(line): \(VoteArguments.message(for: error))")
                    continue
                }
                XCTAssertEqual(parsed.joinCode, testCode.description, line)
                XCTAssertEqual(parsed.question, spec.number, line)
                XCTAssertEqual(parsed.roster, roster, line)
                let answer = try parsed.parser()(try XCTUnwrap(parsed.answer, line))
                XCTAssertTrue(spec.offers(answer), "\(line): \(answer) not offered")
                // The form clicker-vote checks answers against is the question's own.
                if let form = try parsed.form() {
                    XCTAssertEqual(form.kind, HowToVote.kind(of: spec), line)
                    if form.kind.hasOptions { XCTAssertEqual(form.options, spec.options, line) }
                    if form.kind == .numeric {
                        let range = spec.numeric ?? NumericRange()
                        XCTAssertEqual(form.decimals, range.decimals, line)
                        XCTAssertEqual(form.range, range.lowest...range.highest, line)
                    }
                } else {
                    XCTAssertEqual(spec.kinds, [.choice], line)
                    XCTAssertEqual(spec.options, 4, line)
                }
            }
        }
    }

    /// Words as a POSIX shell splits them: blanks separate, single quotes keep everything, `'\''`
    /// puts a quote in. Nil for an unterminated quote or a character the shell would act on.
    func shellWords(_ line: String) -> [String]? {
        var words: [String] = []
        var word: String?
        var quoted = false
        for c in line {
            if quoted {
                if c == "'" { quoted = false } else { word = (word ?? "") + String(c) }
            } else if c == " " {
                if let w = word { words.append(w) }
                word = nil
            } else if c == "'" {
                quoted = true
                word = word ?? ""
            } else if "<>|&;$`\\\"*?()[]{}~#!".contains(c) {
                return nil
            } else {
                word = (word ?? "") + String(c)
            }
        }
        guard !quoted else { return nil }
        if let w = word { words.append(w) }
        return words
    }
}
