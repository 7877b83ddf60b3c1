import ClickerStore
import ClickerTally
import ClickerWire

/// Grading a roster poll, and what a simulated room needs to answer the open question.
extension PollController {
    /// The gradebook of a roster poll (nil for an anonymous poll): every enrolled student's counted
    /// answers, scored against each question's correct answers and points.
    func gradebook() -> Gradebook? {
        guard let roster = options.roster else { return nil }
        return Gradebook(roster: roster, tally: pipeline.tally, keyring: pipeline.keyring)
    }

    /// The current question as the tally checks its ballots (kinds, options, range); nil before any.
    public var questionSpec: QuestionSpec? { pipeline.tally.question(question)?.spec }
}
