import ClickerTally

/// Grading a roster poll.
extension PollController {
    /// The gradebook of a roster poll (nil for an anonymous poll): every enrolled student's counted
    /// answer to each question the tally holds, scored against that question's correct answers and
    /// points. The tally holds every question of the poll: each is opened from its stored
    /// definition (`QuestionSpec(_:optionsIfUndefined:)` on resume), and a roster poll never forgets
    /// a question's voters.
    func gradebook() -> Gradebook? {
        options.roster.map { Gradebook(roster: $0, tally: pipeline.tally, keyring: pipeline.keyring) }
    }
}
