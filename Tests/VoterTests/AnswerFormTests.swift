import ClickerSim
import ClickerTransport
import ClickerWire
import Voter
import XCTest

/// `clicker-vote --kind … --options …`: answers the question does not offer are refused with what it
/// takes, and the voter and the tally agree on what is offered.
final class AnswerFormTests: XCTestCase {
    func refusal(_ form: AnswerForm, _ text: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            let a = try form.answer(text)
            XCTFail("\(text) was accepted as \(a)", file: file, line: line)
            return ""
        } catch { return error.description }
    }

    func testSingleChoiceTakesOneOfItsLetters() throws {
        let form = AnswerForm(kind: .single, options: 4)
        XCTAssertEqual(try form.answer(" c "), .choice(2))
        XCTAssertEqual(refusal(form, "E"), "option E is not offered; this question takes one letter, A to D")
        XCTAssertEqual(refusal(form, "true"), "'true' does not answer this question; this question takes one letter, A to D")
        XCTAssertEqual(refusal(form, "A+C"), "'A+C' does not answer this question; this question takes one letter, A to D")
        XCTAssertEqual(refusal(form, "3"), "'3' does not answer this question; this question takes one letter, A to D")
        // A decimal: this question takes no number at all, so the hint about --decimals stays out.
        XCTAssertEqual(refusal(form, "9.81"), "'9.81' does not answer this question; this question takes one letter, A to D")
        XCTAssertEqual(refusal(form, "Q"), "'Q' is not an option letter; this question takes one letter, A to D")
        XCTAssertEqual(refusal(form, "x"), "'x' is not an option letter; this question takes one letter, A to D",
                       "the letters this question offers, not the eight the wire allows")
        XCTAssertEqual(refusal(AnswerForm(kind: .truefalse), "maybe"), "'maybe' does not answer this question; this question takes true or false")
        XCTAssertEqual(refusal(AnswerForm(kind: .single, options: 1), "B"), "option B is not offered; this question takes one letter, A")
    }

    func testMultiSelectTakesASetOfItsLettersAndNoRepeats() throws {
        let form = AnswerForm(kind: .multi, options: 5)
        XCTAssertEqual(try form.answer("A+C"), .multiSelect(0b101))
        XCTAssertEqual(try form.answer("E"), .multiSelect(0b10000), "one letter is that option alone")
        XCTAssertEqual(try form.answer("D+"), .multiSelect(0b1000))
        XCTAssertEqual(refusal(form, "A+A"),
                       "option A appears twice; this question takes one or more different letters from A to E, joined by +, like A+C")
        XCTAssertEqual(refusal(form, "A+F+G"),
                       "options F, G are not offered; this question takes one or more different letters from A to E, joined by +, like A+C")
        XCTAssertEqual(refusal(form, "B>A"),
                       "'B>A' does not answer this question; this question takes one or more different letters from A to E, joined by +, like A+C")
    }

    func testTrueFalse() throws {
        let form = AnswerForm(kind: .truefalse)
        XCTAssertEqual(try form.answer("TRUE"), .trueFalse(true))
        XCTAssertEqual(try form.answer("no"), .trueFalse(false))
        XCTAssertEqual(refusal(form, "A"), "'A' does not answer this question; this question takes true or false")
        XCTAssertEqual(refusal(form, "1"), "'1' does not answer this question; this question takes true or false")
    }

    func testNumericReadsDecimalsAndKeepsToTheRange() throws {
        let range = try AnswerForm.range(parsing: "0..10", decimals: 1)
        XCTAssertEqual(range, 0...100)
        let form = AnswerForm(kind: .numeric, decimals: 1, range: range)
        XCTAssertEqual(try form.answer("3.5"), .numeric(35), "3.5 with one decimal is 35 on the wire")
        XCTAssertEqual(try form.answer("7"), .numeric(70))
        XCTAssertEqual(try form.answer("10.0"), .numeric(100))
        XCTAssertEqual(refusal(form, "10.1"), "10.1 is out of range; this question takes a number with at most 1 decimal from 0.0 to 10.0")
        XCTAssertEqual(refusal(form, "-0.5"), "-0.5 is out of range; this question takes a number with at most 1 decimal from 0.0 to 10.0")
        XCTAssertEqual(refusal(form, "3.25"), "'3.25' has more than 1 decimal; this question takes a number with at most 1 decimal from 0.0 to 10.0")
        XCTAssertEqual(refusal(form, "B"), "'B' is not a number (digits, an optional minus and decimal point, like -2.5); this question takes a number with at most 1 decimal from 0.0 to 10.0")
        XCTAssertEqual(refusal(form, "3."), "'3.' is not a number (digits, an optional minus and decimal point, like -2.5); this question takes a number with at most 1 decimal from 0.0 to 10.0")

        let whole = AnswerForm(kind: .numeric, range: try AnswerForm.range(parsing: "-5..5", decimals: 0))
        XCTAssertEqual(try whole.answer("-5"), .numeric(-5))
        XCTAssertEqual(refusal(whole, "3.5"), "'3.5' is not a whole number; this question takes a whole number from -5 to 5")
        XCTAssertEqual(refusal(whole, "6"), "6 is out of range; this question takes a whole number from -5 to 5")
        // Without a range: any 16-bit wire value, in the question's decimals.
        let any = AnswerForm(kind: .numeric, decimals: 2)
        XCTAssertEqual(try any.answer("-327.68"), .numeric(-32768))
        XCTAssertEqual(refusal(any, "327.68"),
                       "'327.68' does not fit the 16 bits a ballot carries (-327.68 to 327.67 with 2 decimals); this question takes a number with at most 2 decimals from -327.68 to 327.67")
    }

    func testRankedTakesPartialOrdersOfItsLetters() throws {
        let form = AnswerForm(kind: .ranked, options: 4)
        XCTAssertEqual(try form.answer("C>A"), .ranking(try XCTUnwrap(Ranking(order: [2, 0]))))
        XCTAssertEqual(try form.answer("D"), .ranking(try XCTUnwrap(Ranking(order: [3]))), "one letter ranks that option alone")
        XCTAssertEqual(refusal(form, "C>A>C"),
                       "option C appears twice; this question takes different letters from A to D in order of preference, like C>A (rank as many as you like)")
        XCTAssertEqual(refusal(form, "A>E"),
                       "option E is not offered; this question takes different letters from A to D in order of preference, like C>A (rank as many as you like)")
        XCTAssertEqual(refusal(form, "A+B"),
                       "'A+B' does not answer this question; this question takes different letters from A to D in order of preference, like C>A (rank as many as you like)")
    }

    func testRangeTextErrors() {
        func message(_ text: String, _ decimals: Int) -> String {
            do { _ = try AnswerForm.range(parsing: text, decimals: decimals); return "accepted" } catch { return error.description }
        }
        XCTAssertEqual(message("10", 0), "'10' is not a range LOW..HIGH, like 0..100 or -2.5..2.5; --range takes LOW..HIGH, like 0..10 or -5..5")
        XCTAssertEqual(message("5..1", 0), "'5..1' is empty: its low end is above its high end; --range takes LOW..HIGH, like 0..10 or -5..5")
        XCTAssertEqual(message("0..1.5", 0), "'1.5' has more than 0 decimals; --range takes LOW..HIGH, like 0..10 or -5..5")
        XCTAssertEqual(try AnswerForm.range(parsing: "-1.5..2.25", decimals: 2), -150...225)
    }

    /// Whatever the voter accepts is offered by the tally's own check, and whatever that check offers
    /// the voter accepts (typed as the answer prints), for every well-formed answer and every form.
    /// A voter that skipped the check, or refused more than the tally does, fails here.
    func testTheVoterAcceptsExactlyWhatTheTallyOffers() throws {
        var answers: [Answer] = (0..<8).map { .choice(UInt8($0)) } + [.trueFalse(true), .trueFalse(false)]
        answers += (1...255).map { .multiSelect(UInt8($0)) }
        answers += [-32768, -51, -50, -1, 0, 1, 35, 100, 101, 32767].map { .numeric($0) }
        var rng = SplitMix64(seed: 14)
        for _ in 0..<400 {
            let order = Array([UInt8](0..<8).shuffled(using: &rng).prefix(Int.random(in: 1...8, using: &rng)))
            answers.append(.ranking(try XCTUnwrap(Ranking(order: order))))
        }
        var forms: [AnswerForm] = []
        for kind in [AnswerForm.Kind.single, .multi, .ranked] { for n in 1...8 { forms.append(AnswerForm(kind: kind, options: n)) } }
        forms += [AnswerForm(kind: .truefalse), AnswerForm(kind: .numeric, range: -50...100), AnswerForm(kind: .numeric)]
        var accepted = 0
        for form in forms {
            for a in answers {
                // A lone letter answers a multi-select or a ranking as that option alone (tested above).
                if case .choice = a, form.kind == .multi || form.kind == .ranked { continue }
                let offered = a.isOffered(kinds: [form.kind.answerKind], options: form.options,
                                          range: form.kind == .numeric ? form.range : nil)
                let typed = try? form.answer(a.description)
                XCTAssertEqual(typed != nil, offered, "\(form.kind) \(form.options): \(a)")
                if let typed { XCTAssertEqual(typed, a); accepted += 1 }
            }
        }
        XCTAssertGreaterThan(accepted, 1000)
    }
}

/// The `--simulate` room answers the open question's kind: every answer it would cast (first and
/// changed) is one the question offers, and each kind's answers vary over the room.
final class ClassroomKindTests: XCTestCase {
    func testTheRoomAnswersEveryKindWithOfferedAnswers() {
        var rng = SplitMix64(seed: 7)
        let room = Classroom(count: 300, options: 4, using: &rng)
        let cases: [(Answer.Kind, Int, ClosedRange<Int16>)] = [
            (.choice, 3, 0...100), (.multiSelect, 5, 0...100), (.trueFalse, 2, 0...100), (.numeric, 4, -50...250), (.ranking, 5, 0...100),
        ]
        for (kind, options, range) in cases {
            let asked = room.answering(kind, options: options, range: range, using: &rng)
            XCTAssertEqual(asked.students.count, room.students.count)
            XCTAssertEqual(asked.students.map(\.thinkTime), room.students.map(\.thinkTime), "same timing")
            let cast = asked.students.flatMap { [$0.answer] + ($0.change.map { [$0.to] } ?? []) }
            for a in cast {
                XCTAssertTrue(a.isOffered(kinds: [kind], options: options, range: range), "\(kind): \(a) not offered")
            }
            XCTAssertGreaterThan(Set(cast).count, 1, "\(kind): the room does not all answer alike")
        }
    }
}
