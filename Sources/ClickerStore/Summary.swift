import ClickerWire
import Foundation
import GRDB

extension ClickerStore {
    /// Computes summaries from records (ballots in any order), by the same rule the live tally uses:
    ///
    /// - every stored ballot was counted when it arrived (stale, ignored, conflicting and unverified
    ///   changes are never stored), so taking a voter's ballots in the rule's order replays the order
    ///   they were counted in: in an anonymous poll unverified ballots before GATT-verified ones (a
    ///   verified ballot outranks unverified ones whatever the sequences: PROTOCOL.md, takeover rule;
    ///   roster ballots are all verified by their tag), then ascending sequence for `latestWins`,
    ///   descending for `firstResponseOnly`;
    /// - the counted ballot is the last in that order;
    /// - a voter "changed" their answer when, in that order, a ballot with a higher sequence and a
    ///   different answer replaced the one before it (ClickerTally's `VoterRecord.changed`).
    ///
    /// A question with `totals` (a sealed anonymous question) is summarised from them alone.
    public static func summarize(questions: [QuestionRecord], ballots: [BallotRecord], rejections: [RejectionCount],
                                 rule: CountingRule = .latestWins, mode: PollMode = .anonymous,
                                 totals: [QuestionTotals] = []) -> [QuestionSummary] {
        var byQuestion: [Int: [Data: [BallotRecord]]] = [:]
        for b in ballots { byQuestion[b.question, default: [:]][b.voter, default: []].append(b) }
        var sealed: [Int: QuestionTotals] = [:]
        for t in totals { sealed[t.question] = t }
        return questions.sorted { $0.number < $1.number }.map { q in
            var rej: [String: Int] = [:]
            for r in rejections where r.question == q.number { rej[r.reason, default: 0] += r.count }
            if let t = sealed[q.number] {
                var counts = t.counts
                if counts.count < 4 { counts += [Int](repeating: 0, count: 4 - counts.count) }
                return QuestionSummary(question: q, counts: counts, voters: t.voters, changes: t.changes,
                                       gattVerified: t.gattVerified, rejections: rej, answers: t.answerCounts)
            }
            let c = count(byQuestion[q.number] ?? [:], rule: rule, mode: mode)
            return QuestionSummary(question: q, counts: c.counts, voters: c.voters, changes: c.changes,
                                   gattVerified: c.gattVerified, rejections: rej, answers: c.answers)
        }
    }

    /// Counts of one question's ballots, grouped by voter.
    static func count(_ voters: [Data: [BallotRecord]], rule: CountingRule, mode: PollMode)
        -> (counts: [Int], voters: Int, changes: Int, gattVerified: Int, answers: [Answer: Int]) {
        var counts = [Int](repeating: 0, count: 4)
        var answers: [Answer: Int] = [:]
        var changes = 0
        var verified = 0
        for (_, list) in voters {
            let rank: (BallotRecord) -> Bool = { mode == .anonymous && $0.gattVerified }
            let ordered = list.sorted { a, b in
                if rank(a) != rank(b) { return !rank(a) }
                return rule == .latestWins ? a.sequence < b.sequence : a.sequence > b.sequence
            }
            if zip(ordered, ordered.dropFirst()).contains(where: { $1.sequence > $0.sequence && $1.answer != $0.answer }) {
                changes += 1
            }
            guard let current = ordered.last else { continue }
            answers[current.answer, default: 0] += 1
            if current.gattVerified { verified += 1 }
            // The count columns are the options of single choices; other kinds have none.
            guard case .choice(let option) = current.answer else { continue }
            let i = Int(option)
            if i >= counts.count { counts.append(contentsOf: [Int](repeating: 0, count: i + 1 - counts.count)) }
            counts[i] += 1
        }
        return (counts, voters.count, changes, verified, answers)
    }

    /// Seals question `number` of an anonymous poll: stores its totals (`given`, else counted from
    /// its ballots) and deletes its per-voter ballots. Runs inside the caller's transaction.
    static func seal(_ db: Database, poll: Int64, number: Int, totals given: QuestionTotals? = nil) throws {
        let rule = try String.fetchOne(db, sql: "SELECT rule FROM poll WHERE id = ?", arguments: [poll])
            .flatMap(CountingRule.init(rawValue:)) ?? .latestWins
        var byVoter: [Data: [BallotRecord]] = [:]
        for b in try fetchBallots(db, poll: poll, question: number) { byVoter[b.voter, default: []].append(b) }
        if try QuestionTotals.exists(db, key: ["poll_id": poll, "question": number]), byVoter.isEmpty { return }
        var totals: QuestionTotals
        if let given {
            totals = given
            totals.pollId = poll
            totals.question = number
        } else {
            let c = count(byVoter, rule: rule, mode: try isAnonymous(db, poll) ? .anonymous : .roster)
            totals = QuestionTotals(pollId: poll, question: number, voters: c.voters, changes: c.changes,
                                    gattVerified: c.gattVerified, counts: c.counts, answers: AnswerTotal.list(c.answers))
        }
        try totals.insert(db, onConflict: .replace)
        try db.execute(sql: "DELETE FROM ballot WHERE poll_id = ? AND question = ?", arguments: [poll, number])
    }
}
