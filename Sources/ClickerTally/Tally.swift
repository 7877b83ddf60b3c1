import ClickerTransport
import ClickerWire

/// What to do when a voter sends a later ballot for the same question.
public enum ChangePolicy: String, Sendable, Hashable, CaseIterable {
    /// The ballot with the highest sequence counts (default).
    case latestWins
    /// The ballot with the lowest sequence counts; later ones are counted as `changeIgnored`.
    case firstResponseOnly
}

/// Identifies a voter within a poll: roster and anonymous voter IDs are separate spaces.
public struct VoterKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var mode: BallotMode
    public var voterID: UInt32
    public init(mode: BallotMode, voterID: UInt32) {
        self.mode = mode
        self.voterID = voterID
    }
    public static func < (a: Self, b: Self) -> Bool { (a.mode.rawValue, a.voterID) < (b.mode.rawValue, b.voterID) }
    /// The voter ID in its one text form (`IDText.voter`); the mode is not part of it.
    public var description: String { IDText.voter(voterID) }
}

/// One voter's standing on one question.
public struct VoterRecord: Sendable, Hashable {
    /// The answer that counts.
    public var answer: Answer
    /// Its sequence number.
    public var sequence: UInt16
    /// Lowest and highest sequence heard from this voter for this question.
    public var lowestSequence: UInt16
    public var highestSequence: UInt16
    /// Earliest and latest authentic report from this voter for this question.
    public var firstHeard: RadioInstant
    public var lastHeard: RadioInstant
    /// Address of the device when the counted ballot was (last) heard.
    public var address: DeviceAddress
    /// Whether the counted ballot is verified: a roster-mode ballot, or an anonymous one read over GATT
    /// and signed by the key bound to this voter ID. Only a verified ballot can replace a verified one.
    public var verified: Bool
    /// Whether the voter changed their answer: a ballot with a higher sequence and a different answer
    /// replaced the counted one at least once. This is what `changes` counts everywhere (results,
    /// live counts, `--json`, the export): not stale, ignored or rejected ballots, not a repeat cast
    /// (higher sequence, same answer), not a lower or equal sequence that replaced the counted ballot.
    /// The store recomputes it from the ballots it kept (every ballot it keeps was counted when it
    /// arrived), so a restart and the export give the same figure.
    public var changed: Bool = false
}

/// What recording one authentic ballot did.
public enum RecordOutcome: Sendable, Hashable {
    /// First ballot from this voter for this question.
    case new
    /// Replaced the voter's earlier answer.
    case changed(from: Answer)
    /// The ballot already counted, heard again (idempotent).
    case repeated
    /// Authentic, but from an anonymous device in a roster poll: kept apart, not in the totals.
    case unregistered
    /// Not counted.
    case rejected(Rejection)

    /// Whether the ballot was not counted.
    public var isRejection: Bool {
        if case .rejected = self { return true }
        return false
    }

    /// Whether the totals may have changed.
    public var changesTotals: Bool {
        switch self {
        case .new, .changed: true
        default: false
        }
    }
}

/// The votes on one question.
public struct QuestionTally: Sendable {
    public let spec: QuestionSpec
    /// Counted voters and their answers.
    public private(set) var voters: [VoterKey: VoterRecord] = [:]
    /// Anonymous-mode ballots in a roster poll, kept apart.
    public private(set) var unregistered: [VoterKey: VoterRecord] = [:]
    /// Counted ballots per answer (answers with no votes are absent).
    public private(set) var counts: [Answer: Int] = [:]
    /// Earliest and latest authentic report for this question (counted or not).
    public private(set) var firstHeard: RadioInstant?
    public private(set) var lastHeard: RadioInstant?
    /// A ranked question's instant-runoff count (``InstantRunoff/Grouped``), moved as each ballot is
    /// counted, replaced or removed, so that reading the rounds costs no count; nil for other kinds.
    private var runoff: InstantRunoff.Grouped?

    init(spec: QuestionSpec) {
        self.spec = spec
        if ResultKind(kinds: spec.kinds) == .ranked {
            var grouped = InstantRunoff.Grouped(options: spec.options)
            // Counted once (no ballots yet) and kept from now on: each ballot then updates it in place.
            _ = grouped.currentCount()
            runoff = grouped
        }
    }

    /// The instant-runoff count of a ranked question's counted ballots (the kept count; identical to
    /// a count from scratch); nil for other kinds.
    public var rankedCount: InstantRunoff? { runoff?.count() }

    /// Moves the kept instant-runoff count from `removed` to `added` (either may be nil).
    @inline(__always)
    mutating func moveRunoff(from removed: Answer?, to added: Answer?) {
        guard runoff != nil else { return }
        if let removed, case .ranking(let r) = removed, removed.fits(options: spec.options) { runoff?.remove(r) }
        if let added, case .ranking(let r) = added, added.fits(options: spec.options) { runoff?.add(r) }
    }

    /// Puts `previous` back as `key`'s counted record (nil: not counted), moving the counts with it.
    mutating func restore(_ key: VoterKey, to previous: VoterRecord?) {
        let removed = voters[key]?.answer
        let added = previous?.answer
        voters[key] = previous
        guard removed != added else { return }
        if let r = removed {
            let n = (counts[r] ?? 0) - 1
            counts[r] = n > 0 ? n : nil
        }
        if let a = added { counts[a, default: 0] += 1 }
        moveRunoff(from: removed, to: added)
    }

    /// Number of counted voters.
    public var voterCount: Int { voters.count }
    /// Number of voters who changed their answer (see ``VoterRecord/changed``).
    public var changedVoters: Int { voters.values.reduce(0) { $0 + ($1.changed ? 1 : 0) } }
    /// Number of counted voters whose counted ballot is verified.
    public var verifiedVoters: Int { voters.values.reduce(0) { $0 + ($1.verified ? 1 : 0) } }
    /// Count for one answer.
    public func count(of answer: Answer) -> Int { counts[answer] ?? 0 }

    @inline(__always)
    mutating func heard(_ t: RadioInstant) {
        if let f = firstHeard { if t < f { firstHeard = t } } else { firstHeard = t }
        if let l = lastHeard { if t > l { lastHeard = t } } else { lastHeard = t }
    }

    /// Applies one authentic ballot under `policy` (see ``Tally/record(_:from:at:proof:)`` for the rule).
    @inline(__always)
    mutating func apply(_ b: Ballot, key: VoterKey, address: DeviceAddress, at t: RadioInstant,
                        policy: ChangePolicy, apart: Bool, verified: Bool, mismatch: Bool,
                        limits: Tally.Limits, unregisteredKept: Int, previous: inout VoterRecord?) -> RecordOutcome {
        heard(t)
        if apart {
            // The table apart holds at most what is left of the poll's allowance.
            let room = max(0, limits.unregistered - unregisteredKept) + unregistered.count
            var kept: VoterRecord?  // not the counted record: the caller looked that up
            let (outcome, _, _) = Self.merge(&unregistered, b, key: key, address: address, at: t, policy: policy,
                                             verified: verified, mismatch: mismatch, limit: room, previous: &kept)
            return outcome == .rejected(.voterLimit) ? outcome : .unregistered
        }
        let (outcome, removed, added) = Self.merge(&voters, b, key: key, address: address, at: t, policy: policy,
                                                   verified: verified, mismatch: mismatch, limit: limits.votersPerQuestion,
                                                   previous: &previous)
        if let r = removed {
            let n = (counts[r] ?? 0) - 1
            counts[r] = n > 0 ? n : nil
        }
        if let a = added { counts[a, default: 0] += 1 }
        if removed != nil || added != nil { moveRunoff(from: removed, to: added) }
        return outcome
    }

    /// The usual rule between two ballots of the same status: the outcome for `b` against the counted
    /// record `r`, and whether `b` takes its place.
    @inline(__always)
    static func usual(_ b: Ballot, against r: VoterRecord, policy: ChangePolicy) -> (RecordOutcome, Bool) {
        if b.sequence == r.sequence {
            // Same sequence, another answer: the first counted ballot stands.
            return b.answer == r.answer ? (.repeated, false) : (.rejected(.conflictingSequence), false)
        }
        if (b.sequence > r.sequence) == (policy == .latestWins) {
            return (b.answer == r.answer ? .repeated : .changed(from: r.answer), true)
        }
        return (.rejected(policy == .latestWins ? .staleSequence : .changeIgnored), false)
    }

    /// Returns the outcome and the answer whose count goes down / up; `previous` is set to `key`'s record
    /// as it was. The key is hashed once for a voter already in the table (a repeat, the common case).
    @inline(__always)
    static func merge(_ table: inout [VoterKey: VoterRecord], _ b: Ballot, key: VoterKey, address: DeviceAddress,
                      at t: RadioInstant, policy: ChangePolicy, verified: Bool,
                      mismatch: Bool, limit: Int, previous: inout VoterRecord?) -> (RecordOutcome, Answer?, Answer?) {
        guard let i = table.index(forKey: key) else {
            previous = nil
            if mismatch { return (.rejected(.keyMismatch), nil, nil) }
            // A full table takes no new voter: the voters it holds keep their ballots.
            if table.count >= limit { return (.rejected(.voterLimit), nil, nil) }
            table[key] = VoterRecord(answer: b.answer, sequence: b.sequence, lowestSequence: b.sequence,
                                     highestSequence: b.sequence, firstHeard: t, lastHeard: t, address: address,
                                     verified: verified)
            return (.new, nil, b.answer)
        }
        var r = table.values[i]
        previous = r
        if t < r.firstHeard { r.firstHeard = t }
        if t > r.lastHeard { r.lastHeard = t }
        if b.sequence < r.lowestSequence { r.lowestSequence = b.sequence }
        if b.sequence > r.highestSequence { r.highestSequence = b.sequence }
        var (outcome, replace) = usual(b, against: r, policy: policy)
        if verified && !r.verified {
            // A verified ballot beats an unverified one, whatever the sequences.
            outcome = b.answer == r.answer ? .repeated : .changed(from: r.answer)
            replace = true
        } else if !verified && r.verified && replace && !mismatch {
            // An unverified ballot never replaces a verified one (when it loses anyway, the usual reason
            // stands; the verified ballot heard again is a repeat).
            outcome = .rejected(.unverifiedChange)
            replace = false
        }
        // A signed ballot whose key is not the bound one never counts (when it loses anyway, the usual
        // reason stands). `unverifiedChange` is for advertisements, `keyMismatch` for such reads.
        if mismatch, !outcome.isRejection {
            outcome = .rejected(.keyMismatch)
            replace = false
        }
        var removed: Answer?
        var added: Answer?
        if replace {
            if r.answer != b.answer {
                removed = r.answer
                added = b.answer
                // The voter changed their answer only when a later ballot (higher sequence) replaced
                // it: not a verified ballot outranking an unverified copy with its own or a higher
                // sequence, nor, in first-response-only polls, an earlier response heard late.
                if b.sequence > r.sequence { r.changed = true }
            }
            r.answer = b.answer
            r.sequence = b.sequence
            r.address = address
            r.verified = verified
        }
        table.values[i] = r
        return (outcome, removed, added)
    }
}

/// The tally of one poll: questions, their votes, and every rejection by reason. Pure and
/// deterministic; time comes from the reports.
public struct Tally: Sendable {
    /// How many voters the tally keeps (docs/SECURITY.md, "Bounded memory"): voter IDs are free to make
    /// up in an anonymous poll, and anonymous ballots are kept apart in a roster poll, a few hundred
    /// bytes each with what the poll keeps beside them. A ballot of a new voter beyond a limit is
    /// rejected as `voterLimit`; a voter already held is never dropped, so no accepted ballot is lost.
    public struct Limits: Sendable, Hashable {
        /// Counted voters per question: 65,536, 65 times the largest room the project measures (1,000).
        /// Made-up voters reach it after 45 minutes of one radio sending 24 ballots a second, or 23 s
        /// at the most a scanner hears on one channel (2,800 a second), which drowns real voters anyway.
        public var votersPerQuestion: Int
        /// Devices kept apart as unregistered over the whole poll (roster polls; they are not counted).
        public var unregistered: Int

        public init(votersPerQuestion: Int = 1 << 16, unregistered: Int = 4096) {
            self.votersPerQuestion = votersPerQuestion
            self.unregistered = unregistered
        }
    }

    public var limits = Limits()
    /// Devices kept apart as unregistered, over every question.
    public private(set) var unregisteredKept = 0
    /// The poll's vote ID.
    public let voteID: UInt16
    public var policy: ChangePolicy
    /// A roster poll counts only roster-mode ballots; anonymous ones are kept apart as unregistered.
    public var rosterOnly: Bool
    /// Question number → its tally (a flat table: the hot path avoids dictionary accessors).
    var slots: [QuestionTally?] = Array(repeating: nil, count: 256)
    /// One question's tally, or nil.
    public func question(_ number: UInt8) -> QuestionTally? { slots[Int(number)] }

    /// The known questions by number.
    public var questions: [UInt8: QuestionTally] {
        var d: [UInt8: QuestionTally] = [:]
        for (i, q) in slots.enumerated() { if let q { d[UInt8(i)] = q } }
        return d
    }
    /// Questions that accept ballots now.
    public private(set) var openQuestions: Set<UInt8> = []
    /// Reports not counted, by reason (wire-level reasons included when reported via ``reject(_:)``).
    public private(set) var rejections: [Rejection: Int] = [:]
    /// Reports that changed nothing because the same ballot was already counted.
    public private(set) var repeats = 0
    /// Anonymous voter ID → public key, bound by the first verified GATT read (trust on first use).
    public private(set) var bindings = KeyBindings()

    public init(voteID: UInt16, policy: ChangePolicy = .latestWins, rosterOnly: Bool = false) {
        self.voteID = voteID
        self.policy = policy
        self.rosterOnly = rosterOnly
    }

    /// Adds a question (replacing nothing if it exists) and opens it.
    public mutating func open(_ spec: QuestionSpec) {
        if slots[Int(spec.number)] == nil { slots[Int(spec.number)] = QuestionTally(spec: spec) }
        openQuestions.insert(spec.number)
    }

    /// Re-opens a known question. Returns false if there is no such question.
    @discardableResult
    public mutating func reopen(question: UInt8) -> Bool {
        guard slots[Int(question)] != nil else { return false }
        openQuestions.insert(question)
        return true
    }

    /// Stops accepting ballots for a question; later ones are `otherQuestion`.
    public mutating func close(question: UInt8) { openQuestions.remove(question) }

    /// Drops the per-voter records of a question (an anonymous poll keeps only totals once a
    /// question closes); the question stays known, with no votes.
    public mutating func forgetVoters(question: UInt8) {
        guard let q = slots[Int(question)] else { return }
        unregisteredKept -= q.unregistered.count
        slots[Int(question)] = QuestionTally(spec: q.spec)
    }

    /// Counts a report that was rejected before reaching the tally.
    public mutating func reject(_ reason: Rejection) { rejections[reason, default: 0] += 1 }

    /// Total rejections.
    public var rejectionCount: Int { rejections.values.reduce(0, +) }

    /// Records one authentic ballot heard from `address` at `time`, obtained as `proof` says.
    ///
    /// The rule, per voter and question (PROTOCOL.md, "Takeover rule"):
    /// - A ballot is verified when it is roster-mode (its tag needs the student's own key), or when it
    ///   was read over GATT signed by the key bound to its voter ID in this poll, or by any key if none
    ///   is bound yet; that key is then bound (trust on first use). Another key: `keyMismatch`.
    /// - A verified ballot beats an unverified one, whatever the sequences. Between two of the same
    ///   status the usual rule holds: latest wins keeps the higher sequence, first-response-only the
    ///   lower (a later one is `changeIgnored`); same sequence with another answer is
    ///   `conflictingSequence`, the first counted ballot stands.
    /// - An unverified ballot that would otherwise replace a verified one is `unverifiedChange`.
    /// - Checks run in this order: other question, answer not offered, stale sequence, conflicting
    ///   sequence, change ignored, then `unverifiedChange` for an advertisement or `keyMismatch` for a
    ///   read signed by another key (one ballot is never both).
    @inline(__always)
    public mutating func record(_ ballot: Ballot, from address: DeviceAddress, at time: RadioInstant,
                                proof: BallotProof = .advertised) -> RecordOutcome {
        var previous: VoterRecord?
        return record(ballot, from: address, at: time, proof: proof, previous: &previous)
    }

    /// ``record(_:from:at:proof:)``, also giving the voter's counted record for the ballot's question as
    /// it was before (``counted(_:)`` before recording), found by the same lookup that records it.
    @inline(__always)
    mutating func record(_ ballot: Ballot, from address: DeviceAddress, at time: RadioInstant,
                         proof: BallotProof, previous: inout VoterRecord?) -> RecordOutcome {
        // Only the counted table's own lookup (``QuestionTally/merge``) gives `previous` without hashing
        // the key again; every other way out looks it up.
        guard ballot.voteID == voteID else {
            previous = counted(ballot)
            rejections[.otherVoteID, default: 0] += 1
            return .rejected(.otherVoteID)
        }
        guard openQuestions.contains(ballot.question) else {
            previous = counted(ballot)
            rejections[.otherQuestion, default: 0] += 1
            return .rejected(.otherQuestion)
        }
        let key = VoterKey(mode: ballot.mode, voterID: ballot.voterID)
        let apart = rosterOnly && ballot.mode == .anonymous
        let q = Int(ballot.question)
        guard let offered = slots[q]?.spec.offers(ballot.answer) else {
            rejections[.otherQuestion, default: 0] += 1
            return .rejected(.otherQuestion)
        }
        if apart || !offered { previous = counted(ballot) }
        var verified = ballot.mode == .roster
        var mismatch = false
        var firstKey: VoterPublicKey?
        if ballot.mode == .anonymous, case .signed(let pk) = proof {
            switch bindings.check(pk, voterID: ballot.voterID) {
            case .unbound: verified = true; firstKey = pk
            case .bound: verified = true
            case .mismatch: mismatch = true
            }
        }
        let outcome: RecordOutcome
        if offered {
            let apartBefore = apart ? slots[q]?.unregistered.count ?? 0 : 0
            outcome = slots[q]?.apply(ballot, key: key, address: address, at: time, policy: policy, apart: apart,
                                      verified: verified, mismatch: mismatch, limits: limits,
                                      unregisteredKept: unregisteredKept, previous: &previous)
                ?? .rejected(.otherQuestion)
            if apart { unregisteredKept += (slots[q]?.unregistered.count ?? 0) - apartBefore }
        } else {
            outcome = .rejected(.answerNotOffered)
        }
        switch outcome {
        case .rejected(let r): rejections[r, default: 0] += 1
        case .repeated: repeats += 1
        default: break
        }
        if let firstKey, !apart, !outcome.isRejection { bindings.bind(firstKey, voterID: ballot.voterID) }
        return outcome
    }

    /// Counts a ballot that another receiver of this poll heard and counted (the shared ledger's),
    /// by the rule of ``record(_:from:at:proof:)`` for an advertised ballot: a roster ballot is
    /// verified by its mode, an anonymous one is not (a signature it was read with elsewhere is not
    /// here to check). What the rule refuses, and repeats, are not counted as rejections or repeats:
    /// they are this tally's own ballots coming back, or older than what it heard itself, not
    /// anything a student sent. `previous`: the voter's counted record before.
    public mutating func merge(_ ballot: Ballot, from address: DeviceAddress, at time: RadioInstant,
                               previous: inout VoterRecord?) -> RecordOutcome {
        let (rejectionsBefore, repeatsBefore) = (rejections, repeats)
        let outcome = record(ballot, from: address, at: time, proof: .advertised, previous: &previous)
        switch outcome {
        case .rejected: rejections = rejectionsBefore
        case .repeated: repeats = repeatsBefore
        default: break
        }
        return outcome
    }

    /// Restores a binding kept with the poll (a resume binds keys before replaying ballots).
    public mutating func restore(binding key: VoterPublicKey, voterID: UInt32) {
        bindings.bind(key, voterID: voterID)
    }

    /// The counted record of `ballot`'s voter for its question, if any.
    @inline(__always)
    public func counted(_ ballot: Ballot) -> VoterRecord? {
        slots[Int(ballot.question)]?.voters[VoterKey(mode: ballot.mode, voterID: ballot.voterID)]
    }

    /// Undoes a ballot that was counted but could not be saved: `voter`'s counted record for
    /// `question` becomes `previous` again (``IngestResult/previous``), and the counts with it. What
    /// is shown, exported and acknowledged then is what was saved.
    public mutating func restore(question: UInt8, voter: VoterKey, to previous: VoterRecord?) {
        slots[Int(question)]?.restore(voter, to: previous)
    }

    /// The counted record of `voter` for `question`, if any.
    public func counted(question: UInt8, voter: VoterKey) -> VoterRecord? {
        slots[Int(question)]?.voters[voter]
    }

    /// A snapshot of one question's results, or nil for an unknown question.
    public func results(question: UInt8) -> QuestionResults? {
        guard let q = slots[Int(question)] else { return nil }
        return QuestionResults(q)
    }
}
