import ClickerStore
import ClickerTally
import ClickerWire

/// Grading a roster poll.
extension PollController {
    /// The gradebook of a roster poll (nil for an anonymous poll): every enrolled student's counted
    /// answers, scored against each question's correct answers and points as `stored` defines them
    /// (the store's question records; the tally's own definition for a question stored without one).
    func gradebook(stored: [QuestionRecord]) -> Gradebook? {
        guard let roster = options.roster else { return nil }
        var defined: [UInt8: QuestionSpec] = [:]
        for r in stored {
            guard let n = UInt8(exactly: r.number), let d = r.definition else { continue }
            defined[n] = QuestionSpec(number: n, definition: d)
        }
        let tally = pipeline.tally
        let numbers = Set(tally.questions.keys).union(defined.keys).sorted()
        var specs: [QuestionSpec] = []
        var answers: [[Answer?]] = []
        for n in numbers {
            guard let spec = defined[n] ?? tally.question(n)?.spec else { continue }
            specs.append(spec)
            answers.append(tally.results(question: n).map { roster.answers($0, keyring: pipeline.keyring).map(\.answer) } ?? [])
        }
        return Gradebook(roster: roster, questions: specs, answers: answers)
    }
}
