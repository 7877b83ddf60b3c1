import ClickerStore
import ClickerTally
import ClickerWire

/// What the controller reports: results per question (D-Bus `Results`, `--json`, the views).
extension PollController {
    /// Results of `question` (default: the current one). `ballots: false` leaves out the per-voter
    /// rows (the live view needs only the counts). Anonymous polls list per-voter rows (voter ID,
    /// answer, sequence; never an address) only while the question is open; a closed anonymous
    /// question has only totals.
    public func results(question q: UInt8? = nil, ballots withRows: Bool = true) -> PollResults {
        let q = q ?? question
        let open = q == question && isOpen
        let rejected = self.rejected[q] ?? [:]
        if let t = sealed[q] {
            var counts: [String: Int] = [:]
            for i in 0..<options.options { counts[Answer.choice(UInt8(i)).description] = 0 }
            for (i, n) in t.counts.enumerated() where n > 0 {
                counts[Answer.optionLabel(i), default: 0] += n
            }
            return PollResults(voteID: Int(joinCode.voteID), question: Int(q), open: open, counts: counts,
                               voters: t.voters, changes: t.changes, unregistered: 0, gattVerified: t.gattVerified,
                               rejected: rejected, ballots: [])
        }
        let tally = pipeline.tally
        let r = tally.results(question: q)
        var counts: [String: Int] = [:]
        for (answer, n) in r?.countTable ?? [:] { counts[answer.description] = n }
        if r == nil { for i in 0..<options.options { counts[Answer.choice(UInt8(i)).description] = 0 } }
        let voters = tally.question(q)?.voters ?? [:]
        let anonymous = options.roster == nil
        // Read over GATT and verified (roster ballots are verified by their tag, and never read).
        let verified = anonymous ? r?.verifiedVoters ?? 0 : 0
        let listed = withRows && (!anonymous || open) ? voters : [:]
        let rows = listed.sorted { $0.key < $1.key }.map { key, v in
            PollResults.BallotRow(voter: key.hex, answer: v.answer.description, sequence: Int(v.sequence),
                                  address: anonymous ? nil : v.address.description,
                                  gattVerified: anonymous && v.verified, student: student(key))
        }
        return PollResults(voteID: Int(joinCode.voteID), question: Int(q), open: open,
                           counts: counts, voters: r?.voters ?? 0, changes: r?.changedVoters ?? 0,
                           unregistered: r?.unregisteredVoters ?? 0, gattVerified: verified, rejected: rejected,
                           ballots: rows)
    }

    /// "Name (student ID)" of a roster voter.
    func student(_ key: VoterKey) -> String? {
        guard key.mode == .roster, let roster = options.roster,
              let i = pipeline.keyring.rosterIndex(ofVoter: key.voterID), i < roster.entries.count else { return nil }
        return "\(roster.entries[i].name) (\(roster.entries[i].studentID))"
    }
}
