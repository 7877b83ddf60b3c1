import ClickerStore
import ClickerTally
import ClickerWire
import Foundation

/// What the controller reports: results per question (D-Bus `Results`, `--json`, the views).
extension PollController {
    /// Results of `question` (default: the current one). `ballots: false` leaves out the per-voter
    /// rows (the live view needs only the counts). Anonymous polls list per-voter rows (voter ID,
    /// answer, sequence; never an address) only while the question is open; a closed anonymous
    /// question has only totals.
    public func results(question q: UInt8? = nil, ballots withRows: Bool = true) -> PollResults {
        let q = q ?? question
        let open = q == question && isOpen
        let rejected = rejections.counts(of: q)
        if let t = sealed[q] {
            var counts: [String: Int] = [:]
            let spec = spec(of: q)
            if spec.kinds.contains(.choice) {
                for i in 0..<spec.options { counts[Answer.choice(UInt8(i)).description] = 0 }
            }
            let answers = t.answerCounts
            for (answer, n) in answers { counts[answer.description, default: 0] += n }
            return PollResults(voteID: Int(joinCode.voteID), question: Int(q), open: open, counts: counts,
                               voters: t.voters, changes: t.changes, unregistered: 0, gattVerified: t.gattVerified,
                               rejected: rejected, ballots: [],
                               results: KindReport(KindResults(spec: spec, counts: answers)))
        }
        let tally = pipeline.tally
        let r = tally.results(question: q)
        var counts: [String: Int] = [:]
        for (answer, n) in r?.countTable ?? [:] { counts[answer.description] = n }
        if r == nil { for i in 0..<spec(of: q).options { counts[Answer.choice(UInt8(i)).description] = 0 } }
        let voters = tally.question(q)?.voters ?? [:]
        let anonymous = options.roster == nil
        // Read over GATT and verified (roster ballots are verified by their tag, and never read).
        let verified = anonymous ? r?.verifiedVoters ?? 0 : 0
        let listed = withRows && (!anonymous || open) ? voters : [:]
        let rows = listed.sorted { $0.key < $1.key }.map { key, v in
            PollResults.BallotRow(voter: IDText.voter(key.voterID), answer: v.answer.description, sequence: Int(v.sequence),
                                  address: anonymous ? nil : v.address.description,
                                  gattVerified: anonymous && v.verified, student: student(key))
        }
        return PollResults(voteID: Int(joinCode.voteID), question: Int(q), open: open,
                           counts: counts, voters: r?.voters ?? 0, changes: r?.changedVoters ?? 0,
                           unregistered: r?.unregisteredVoters ?? 0, gattVerified: verified, rejected: rejected,
                           ballots: rows,
                           results: KindReport(r?.byKind ?? KindResults(spec: spec(of: q), counts: [:])))
    }

    /// The questions this poll has asked, in order of number (the exit summary shows each).
    public var askedQuestions: [UInt8] {
        Set(pipeline.tally.questions.keys).union(sealed.keys).union([question]).sorted()
    }

    /// The question as the tally knows it; a single choice of the poll's options when it does not.
    func spec(of q: UInt8) -> QuestionSpec {
        pipeline.tally.question(q)?.spec ?? .choice(q, options: options.options)
    }

    /// "Name (student ID)" of a roster voter.
    func student(_ key: VoterKey) -> String? {
        guard key.mode == .roster, let roster = options.roster,
              let i = pipeline.keyring.rosterIndex(ofVoter: key.voterID), i < roster.entries.count else { return nil }
        return "\(roster.entries[i].name) (\(roster.entries[i].studentID))"
    }
}

/// The live figures: counts as published, rates, footprint and counters.
extension PollController {
    /// The counts every live consumer shows: while the question is open, hidden unless shown, and
    /// moved only at epochs of `options.publishRule`; once it is closed, exact.
    public func liveCounts(now: Date? = nil) -> LiveCounts {
        let now = now ?? clock.date
        let tally = pipeline.tally, q = question, n = spec.options, totals = sealed[q]
        guard isOpen else { return Self.exactCounts(tally, sealed: totals, question: q, options: n) }
        var live = publisher.read(at: now) { Self.exactCounts(tally, sealed: totals, question: q, options: n) }
        if !countsShown {
            live.counts = [:]
            live.rankedCount = nil
            live.hidden = true
            live.notYetShown = 0
        }
        return live
    }

    /// Shows or hides the live counts of open questions (the `h` key, D-Bus `ShowCounts`).
    public func setCountsShown(_ shown: Bool) {
        countsShown = shown
        version &+= 1
    }

    func resetPublished() {
        publisher.reset(to: Self.exactCounts(pipeline.tally, sealed: sealed[question], question: question,
                                             options: spec.options), at: clock.date)
    }

    /// The exact counts of a question: from the tally, or from its totals once an anonymous
    /// question is sealed (its voters are forgotten).
    static func exactCounts(_ tally: Tally, sealed: QuestionTotals?, question q: UInt8, options: Int) -> LiveCounts {
        var counts: [String: Int] = [:]
        for i in 0..<options { counts[Answer.choice(UInt8(i)).description] = 0 }
        if let t = sealed {
            for (answer, n) in t.answerCounts { counts[answer.description, default: 0] += n }
            return LiveCounts(counts: counts, voters: t.voters, changes: t.changes)
        }
        let r = tally.results(question: q)
        for (answer, n) in r?.countTable ?? [:] { counts[answer.description] = n }
        return LiveCounts(counts: counts, voters: r?.voters ?? 0, changes: r?.changedVoters ?? 0,
                          rankedCount: tally.question(q)?.rankedCount)
    }

    /// Accepted ballots per second over the last five seconds.
    public func votesPerSecond(now: Date? = nil) -> Double {
        acceptedRate.perSecond(at: now ?? clock.date)
    }

    /// Entries held per voter and per event, for tests, logs and the soak benchmark.
    public var footprint: PollFootprint {
        PollFootprint(rateWindow: acceptedRate.storage,
                      verificationRequests: verification.requested.count, readRetries: verification.retries.count,
                      committed: committed.values.reduce(0) { $0 + $1.count },
                      tallyVoters: pipeline.tally.questions.values.reduce(0) { $0 + $1.voters.count + $1.unregistered.count },
                      pendingRejections: rejections.pending.count, ingest: pipeline.footprint)
    }

    /// The ingest pipeline's counters (reports, cache hits, verifications).
    public var ingestStatistics: IngestStats { pipeline.stats }

    /// Flood alert from the ingest pipeline, if any.
    public var floodAlert: Bool { pipeline.flood.alert }

    /// Time since the current question opened (frozen when closed).
    public func elapsed(now: Date? = nil) -> Duration {
        .seconds((closedAt ?? now ?? clock.date).timeIntervalSince(openedAt))
    }

    /// Radio errors seen since start.
    public var radioErrorCount: Int { radioErrors }
}
