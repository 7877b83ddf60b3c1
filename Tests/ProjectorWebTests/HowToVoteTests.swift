import ClickerCommandLine
import ClickerTally
import ClickerWire
import ProjectorPage
import Voter
import XCTest

/// The page's line on how to vote is the exact command a student types: read back by clicker-vote's
/// own argument parser (`VoteArguments`), it follows the beacon (no --question, no --kind), and its
/// answer, read in the question's form, is one the question offers.
final class HowToVoteTests: XCTestCase {
    /// Each kind's line, as the page shows it.
    func testEachKindsLine() {
        let code = testCode.description
        let cases: [(QuestionSpec, Bool, String)] = [
            (.choice(1), false, "clicker-vote \(code) A"),
            (.choice(2), false, "clicker-vote \(code) A"),
            (.choice(3, options: 5), true, "clicker-vote --roster \(code) A"),
            (QuestionSpec(number: 2, kinds: [.trueFalse]), false, "clicker-vote \(code) true"),
            (QuestionSpec(number: 4, options: 3, kinds: [.multiSelect]), false, "clicker-vote \(code) A+C"),
            (QuestionSpec(number: 1, options: 2, kinds: [.multiSelect]), false, "clicker-vote \(code) A+B"),
            // `>` would redirect in a shell: quoted.
            (QuestionSpec(number: 5, options: 4, kinds: [.ranking]), false, "clicker-vote \(code) 'B>A>C'"),
            (QuestionSpec(number: 2, kinds: [.numeric]), false, "clicker-vote \(code) 42"),
            (QuestionSpec(number: 2, kinds: [.numeric], numeric: NumericRange(decimals: 2)), false, "clicker-vote \(code) 42"),
            (QuestionSpec(number: 6, kinds: [.numeric], numeric: NumericRange(decimals: 0, lowest: 1, highest: 5)), false,
             "clicker-vote \(code) 3"),
            (QuestionSpec(number: 6, kinds: [.numeric], numeric: NumericRange(decimals: 2, lowest: 0, highest: 100)), false,
             "clicker-vote \(code) 0.50"),
            (QuestionSpec(number: 7, kinds: [.numeric], numeric: NumericRange(decimals: 1, lowest: -50, highest: 50)), false,
             "clicker-vote \(code) 2"),
            // All negative: `--` keeps the answer from reading as an option.
            (QuestionSpec(number: 8, kinds: [.numeric], numeric: NumericRange(decimals: 0, lowest: -10, highest: -5)), false,
             "clicker-vote -- \(code) -8"),
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
                // The voter follows the beacon: no question, no kind; the answer is the question's.
                XCTAssertTrue(parsed.followsBeacon, line)
                XCTAssertNil(parsed.kind, line)
                XCTAssertEqual(parsed.roster, roster, line)
                let text = try XCTUnwrap(parsed.answer, line)
                let form = AnswerForm(kind: HowToVote.kind(of: spec), options: spec.options,
                                      decimals: spec.numeric?.decimals ?? 0,
                                      range: spec.numeric.map { $0.lowest...$0.highest } ?? .min ... .max)
                let answer = try form.answer(text)
                XCTAssertTrue(spec.offers(answer), "\(line): \(answer) not offered")
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
