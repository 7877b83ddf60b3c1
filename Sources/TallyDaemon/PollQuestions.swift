import ClickerStore
import ClickerTally
import ClickerWire
import Foundation

/// The operator's actions on questions: open again, close (an anonymous question keeps only its
/// totals), next.
extension PollController {
    /// Opens the current question again (after a close).
    public func openQuestion() throws {
        guard !isOpen else { throw PollError.questionAlreadyOpen(Int(question)) }
        // An anonymous question forgets its voters when it closes: reopening it would count again
        // voters who already voted.
        if options.roster == nil { throw PollError.questionSealed(Int(question)) }
        try storeAction { try $0.openQuestion(poll: $1, number: Int(question), at: clock.date) }
        if !pipeline.tally.openQuestions.contains(question), !pipeline.tally.reopen(question: question) {
            pipeline.tally.open(spec)
        }
        isOpen = true
        closedAt = nil
        resetPublished()
        beaconChanged()
        version &+= 1
    }

    /// Asks a new ad-hoc question while none is open: the next number, defined by `adHoc` (its number
    /// is ignored). Refused while a question is open (`nextQuestion` closes it first) and while the
    /// question set has questions left.
    public func openQuestion(_ adHoc: QuestionSpec) throws {
        guard !isOpen else { throw PollError.questionAlreadyOpen(Int(question)) }
        try nextQuestion(adHoc)
    }

    /// The question being asked (open or closed last).
    public var spec: QuestionSpec { pipeline.tally.question(question)?.spec ?? options.firstSpec }

    /// Closes the current question: later ballots for it are rejected (`otherQuestion`). In an
    /// anonymous poll only its totals remain, in the database and in memory.
    public func closeQuestion() throws {
        guard isOpen else { throw PollError.noOpenQuestion }
        flush()
        if options.roster == nil, let e = storageError {
            throw PollError.storage("counting has stopped, the database cannot be written (\(e)): the question stays open")
        }
        // An anonymous question keeps the totals the live tally shows.
        let totals = options.roster == nil ? liveTotals(question) : nil
        let now = clock.date
        try storeAction { try $0.closeQuestion(poll: $1, number: Int(question), at: now, totals: totals) }
        pipeline.tally.close(question: question)
        pipeline.forgetClosedQuestions()
        if let totals { seal(question, totals) }
        isOpen = false
        closedAt = now
        resetPublished()
        beaconChanged()
        version &+= 1
    }

    /// Closes the current question (if open) and opens the next one: the set's next question, or
    /// `adHoc` (its number is ignored), or without a set the current question's kind, options and
    /// option texts (a numeric question: its range) again, without its title or correct answers (they
    /// belong to the question asked). After the set's last question only an ad-hoc question opens;
    /// after that one, the same kind again.
    public func nextQuestion(_ adHoc: QuestionSpec? = nil) throws {
        guard question < UInt8.max else { throw PollError.lastQuestion }
        let next = question + 1
        let set = options.questionSet
        var upcoming: QuestionSpec
        if let adHoc {
            if Int(next) <= set.count { throw PollError.questionSetNotFinished(next: Int(next), count: set.count) }
            upcoming = adHoc
        } else if Int(next) <= set.count {
            upcoming = set[Int(next) - 1]
        } else if !set.isEmpty, Int(question) == set.count {
            throw PollError.endOfQuestionSet(count: set.count)
        } else {
            // Ad hoc (or past the set, after an ad-hoc question): the current kind, options and option
            // texts again; not its title or correct answers.
            let current = spec
            upcoming = QuestionSpec(number: next, options: current.options, kinds: current.kinds,
                                    optionTexts: current.optionTexts, numeric: current.numeric)
        }
        upcoming.number = next
        if isOpen { try closeQuestion() }
        let now = clock.date
        try storeAction { try $0.openQuestion(poll: $1, number: Int(next), definition: QuestionDefinition(upcoming), at: now) }
        pipeline.tally.open(upcoming)
        question = next
        isOpen = true
        openedAt = now
        closedAt = nil
        acceptedRate.reset()
        resetPublished()
        beaconChanged()
        version &+= 1
    }

    /// The totals of a question as the live tally counts them.
    func liveTotals(_ q: UInt8) -> QuestionTotals {
        let r = results(question: q, ballots: false)
        var counts = [Int](repeating: 0, count: 4)
        for (answer, n) in pipeline.tally.question(q)?.counts ?? [:] {
            guard case .choice(let option) = answer else { continue }
            let i = Int(option)
            if i >= counts.count { counts += [Int](repeating: 0, count: i + 1 - counts.count) }
            counts[i] += n
        }
        return QuestionTotals(pollId: pollID ?? 0, question: Int(q), voters: r.voters, changes: r.changes,
                              gattVerified: r.gattVerified, counts: counts,
                              answers: AnswerTotal.list(pipeline.tally.question(q)?.counts ?? [:]))
    }

    /// Keeps only the totals of a closed anonymous question, and forgets its voters.
    func seal(_ q: UInt8, _ totals: QuestionTotals) {
        sealed[q] = totals
        pipeline.tally.forgetVoters(question: q)
        committed[q] = nil
    }
}
