import ClickerWire

/// Answers the student gave to questions that are no longer open (docs/PROTOCOL.md §11.10, "No frame
/// erases an answer"). A STATE frame that closes the question, closes the poll or opens another one
/// takes the answer off the air but does not erase it: when a STATE describes its question again (same
/// number, kind, options and text digest), the answer goes on the air again as a new ballot. A question
/// of its number described otherwise does not send it: the student answers that one; the kept answer
/// stays unless it does not fit (another kind, too few options), and is dropped when the student
/// answers a question of its number again.
///
/// Before this, a single STATE frame "question closed" followed by the tally's own "question open"
/// erased every answer the tally had not acknowledged yet, and the voter showed the question unanswered.
/// A forger with the join code can still close a question on the voters' screens for as long as it
/// sends (legacy frames, docs/SECURITY.md), but the answers come back with the tally's next STATE. An
/// answer given to a false question is kept for the false question's description, and goes out if the
/// tally opens a question described the same (no text, same kind and options); the voter then shows it
/// as sending, and the student can change it.
/// At most one answer per question number: 256 at most.
struct KeptAnswers: Sendable {
    private var answers: [UInt8: (question: BeaconQuestion, answer: Answer)] = [:]

    /// Keeps `answer`, given to `question`, in place of any answer kept for its number.
    mutating func keep(_ answer: Answer, for question: BeaconQuestion) {
        answers[question.number] = (question, answer)
    }

    /// The answer kept for `question` if it was given to a question described the same: it is on the air
    /// again and no longer kept. An answer kept for its number that does not fit `question` is dropped.
    mutating func take(for question: BeaconQuestion) -> Answer? {
        guard let k = answers[question.number] else { return nil }
        if k.question == question {
            answers[question.number] = nil
            return k.answer
        }
        if !BeaconFollower.offers(question, k.answer) { answers[question.number] = nil }
        return nil
    }

    /// The student answered a question of this number: the answer kept for it is replaced.
    mutating func drop(_ number: UInt8) { answers[number] = nil }

    var count: Int { answers.count }
}

extension BeaconFollower {
    /// The answer of the current question leaves the air (its question closed or gave way): kept.
    mutating func keepAnswer() {
        if let a = answer, let q = question { kept.keep(a, for: q.beacon) }
        answer = nil
    }
}
