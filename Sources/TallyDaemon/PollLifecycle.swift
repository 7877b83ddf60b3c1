import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import Logging

/// Starting, resuming and replacing polls.
extension PollController {
    /// The per-poll state a controller starts from.
    struct Opening {
        var pollID: Int64?
        var tally: Tally
        var question: UInt8
        var isOpen: Bool
        var openedAt: Date
        var closedAt: Date?
        /// When the poll was created (stored with it).
        var createdAt: Date
        var committed: [UInt8: [VoterKey: UInt16]] = [:]
        var rejected: [UInt8: [String: Int]] = [:]
        var sealed: [UInt8: QuestionTotals] = [:]
    }

    /// A join code no poll in `store` has used (a random one; without a store any random one).
    public static func unusedJoinCode(store: ClickerStore?) throws -> JoinCode {
        while true {
            let code = JoinCode.random()
            do {
                if try store?.poll(joinCode: code.description) == nil { return code }
            } catch { throw PollError.storage("\(error)") }
        }
    }

    /// A join code no poll in `store` has used whose secret commits to a fresh beacon key pair
    /// (docs/PROTOCOL.md §2 and §11.2, version 4), and the key pair. One scrypt per try: call it off the actor.
    public static func unusedAnchoredJoinCode(store: ClickerStore?) throws -> (JoinCode, BeaconSigner) {
        while true {
            let signer = BeaconSigner.random()
            let code = BeaconAnchor.joinCode(voteID: UInt16.random(in: 1000...9999), publicKey: signer.publicKey)
            do {
                if try store?.poll(joinCode: code.description) == nil { return (code, signer) }
            } catch { throw PollError.storage("\(error)") }
        }
    }

    nonisolated static func anchoredJoinCode(store: ClickerStore?) async throws -> (JoinCode, BeaconSigner) {
        try unusedAnchoredJoinCode(store: store)
    }

    /// The keys of a poll. Key derivation is costly (scrypt derives the poll secret S, once per poll
    /// start or resume), so callers on the actor run it from a nonisolated async context (off the actor).
    static func keyring(_ options: PollOptions) -> PollKeyring {
        PollKeyring(secret: PollSecret(deriving: options.joinCode), roster: options.roster?.rosterKeys ?? [])
    }

    nonisolated static func derivedKeyring(_ options: PollOptions) async -> PollKeyring { keyring(options) }

    /// Creates a new poll with `options.joinCode` in `store` (refused when the code was used before),
    /// after closing the open poll there.
    static func fresh(options: PollOptions, store: ClickerStore?, now: Date) throws -> Opening {
        let code = options.joinCode
        if !options.questionSet.isEmpty, !options.questionSet.indices.contains(Int(options.firstQuestion) - 1) {
            throw PollError.notInQuestionSet(question: Int(options.firstQuestion), count: options.questionSet.count)
        }
        do {
            if let used = try store?.poll(joinCode: code.description) {
                throw PollError.joinCodeUsed(voteID: code.voteID, poll: used.id)
            }
            // Closed by its ID alone, its rows not loaded: an unreadable row of a roster poll does not
            // hold up a new poll, and is kept as it is. An anonymous poll's open questions are sealed
            // into totals, which reads their ballots: an unreadable one refuses the new poll, naming
            // --db, and nothing is written.
            if let open = try store?.openPollID() {
                do { try store?.closePoll(open, at: now) } catch {
                    throw PollError.storage("the open poll \(open) cannot be closed (\(error)): the database is damaged; "
                                            + "start with another database: --db NEW-FILE")
                }
            }
            let poll = try store?.createPoll(
                voteID: Data([UInt8(code.voteID >> 8), UInt8(code.voteID & 0xFF)]), joinCode: code.description,
                mode: options.roster == nil ? .anonymous : .roster, rule: CountingRule(options.policy),
                title: options.title, at: now, beaconSeed: options.beaconSigner.map { Data($0.seed) })
            let first = options.firstSpec
            if let id = poll?.id {
                if !options.questionSet.isEmpty { try store?.savePlan(poll: id, options.questionSet.map(QuestionDefinition.init)) }
                try store?.openQuestion(poll: id, number: Int(first.number), definition: QuestionDefinition(first), at: now)
            }
            var tally = Tally(voteID: code.voteID, policy: options.policy, rosterOnly: options.roster != nil)
            tally.open(first)
            return Opening(pollID: poll?.id, tally: tally, question: options.firstQuestion, isOpen: true,
                           openedAt: now, closedAt: nil, createdAt: poll?.createdAt ?? now)
        } catch let e as PollError {
            throw e
        } catch {
            throw PollError.storage("\(error)")
        }
    }

    /// The open poll of `store`, if it may be resumed.
    static func openPoll(store: ClickerStore?, maxAge: Duration, now: Date) throws -> ResumeState {
        guard let store else { throw PollError.resumeNeedsStore }
        let state: ResumeState?
        do { state = try store.resume() } catch {
            throw PollError.storage("cannot read the open poll (\(error)): start a new poll (leave out --resume), "
                                    + "or use another database with --db")
        }
        guard let s = state else { throw PollError.nothingToResume }
        let age = now.timeIntervalSince(s.poll.createdAt)
        guard age <= Double(maxAge.components.seconds) else {
            throw PollError.pollTooOld(age: .seconds(Int64(age)), limit: maxAge)
        }
        return s
    }

    /// The open poll of `store` continued (`start` a `.resume`), as a service does when it starts
    /// again: nil when there is none, or none that `start` may take (too old, another mode, or
    /// contradicted by what the command line states), which the log says; the caller then starts a
    /// new poll, which closes the open one. Any other failure (an unreadable poll) is thrown.
    public static func continuing(options: PollOptions, store: ClickerStore, start: PollStart,
                                  logger: Logger) throws -> PollController? {
        do {
            return try PollController(options: options, store: store, start: start, logger: logger)
        } catch PollError.nothingToResume {
            return nil
        } catch let e as PollError {
            switch e {
            case .pollTooOld, .resumeModeMismatch, .resumeContradicts:
                logger.notice("the open poll cannot be continued (\(e)): it is closed and a new poll starts")
                return nil
            default:
                throw e
            }
        }
    }

    /// The open poll of `store`, as stored: its join code, counting rule, mode (a roster poll takes
    /// the stored roster when `options` has none) and the current question's definition replace
    /// what `options` says. What the command line `stated` must agree with the stored poll.
    static func resuming(_ given: PollOptions, store: ClickerStore?, maxAge: Duration, stated: ResumeFlags,
                         now: Date, logger: Logger) throws -> (PollOptions, Opening) {
        let s = try openPoll(store: store, maxAge: maxAge, now: now)
        guard let code = s.poll.joinCode.flatMap({ try? JoinCode(parsing: $0) }) else {
            throw PollError.storage("the open poll \(s.poll.id) has no readable join code")
        }
        let isRoster = s.poll.mode == .roster
        if stated.roster == true, !isRoster { throw PollError.resumeModeMismatch(openIsRoster: false) }
        let policy = ChangePolicy(s.poll.rule)
        if let p = stated.policy, p != policy {
            throw PollError.resumeContradicts(flag: p == .firstResponseOnly ? "--first-response-only" : "latest-wins counting",
                                              stored: "counts \(policy == .latestWins ? "each voter's latest answer" : "each voter's first answer")")
        }
        let current = s.questions.last
        if let q = stated.question, let n = current?.number, Int(q) != n {
            throw PollError.resumeContradicts(flag: "--question \(q)", stored: "is at question \(n)")
        }
        let stored = current?.definition
        if let n = stated.options, let d = stored, d.options != n {
            throw PollError.resumeContradicts(flag: "--options \(n)", stored: "offers \(d.options) answers")
        }
        if let k = stated.kind, let d = stored, d.kinds != [k] {
            throw PollError.resumeContradicts(flag: "--kind", stored: "asks another kind of question")
        }
        let plan = s.plan.enumerated().map { QuestionSpec(number: UInt8(clamping: $0.offset + 1), definition: $0.element) }
        if let set = stated.questionSet, set != plan {
            throw PollError.resumeContradicts(flag: "--questions", stored: plan.isEmpty ? "asks its questions ad hoc"
                                                : "follows another question set (\(plan.count) questions)")
        }
        var options = given
        options.joinCode = code
        // The key the code commits to; none for a poll created before version 4 (tagged frames only).
        options.beaconSigner = s.poll.beaconSeed.flatMap { BeaconSigner(seed: $0) }
        if options.beaconSigner == nil {
            logger.notice("the open poll has no beacon key (created before protocol version 4): its beacon is not signed, and students with the join code can forge it")
        }
        options.policy = policy
        options.questionSet = plan
        if isRoster, options.roster == nil {
            guard let store, let roster = try RosterBook.load(from: store) else {
                throw PollError.storage("the open poll is a roster poll, but the database holds no roster: import it "
                                        + "with `clicker-tally roster import FILE.csv`")
            }
            options.roster = roster
        }
        guard isRoster == (options.roster != nil) else { throw PollError.resumeModeMismatch(openIsRoster: isRoster) }
        logger.info("resumed poll \(s.poll.id) (vote \(IDText.vote(code.voteID))) with \(s.ballots.count) stored ballots")
        return (options, resumed(s, options: options, now: now))
    }

    /// Rebuilds the tally of a stored poll: ballots are replayed in the order they were counted in
    /// (see `ClickerStore.summarize`), closed anonymous questions come back as totals only.
    static func resumed(_ s: ResumeState, options: PollOptions, now: Date) -> Opening {
        var tally = Tally(voteID: options.joinCode.voteID, policy: options.policy, rosterOnly: options.roster != nil)
        let current = s.questions.last
        let question = UInt8(clamping: current?.number ?? Int(options.firstQuestion))
        for q in s.questions { tally.open(QuestionSpec(q, optionsIfUndefined: options.options)) }
        if s.questions.isEmpty { tally.open(options.firstSpec) }
        var o = Opening(tally: tally, question: question, isOpen: current.map { $0.state == .open } ?? true,
                        openedAt: current?.openedAt ?? now, closedAt: current?.closedAt, createdAt: s.poll.createdAt)
        o.pollID = s.poll.id
        for k in s.voterKeys {
            guard let voter = VoterKey(storeBytes: k.voter), let pk = VoterPublicKey(k.publicKey) else { continue }
            o.tally.restore(binding: pk, voterID: voter.voterID)
        }
        replay(s.ballots, into: &o)
        for q in s.questions where q.state == .closed { o.tally.close(question: UInt8(clamping: q.number)) }
        for t in s.totals { if let q = UInt8(exactly: t.question) { o.sealed[q] = t } }
        for r in s.rejections {
            guard let q = UInt8(exactly: r.question) else { continue }
            o.rejected[q, default: [:]][r.reason, default: 0] += r.count
        }
        return o
    }

    /// Replays stored ballots in the order they were counted in: unverified before GATT-verified ones
    /// (bound keys restored first), then ascending sequence for latest-wins, descending for
    /// first-response-only.
    static func replay(_ ballots: [BallotRecord], into o: inout Opening) {
        let latest = o.tally.policy == .latestWins
        let ordered = ballots.sorted { a, b in
            if a.question != b.question { return a.question < b.question }
            if a.voter != b.voter { return a.voter.lexicographicallyPrecedes(b.voter) }
            if a.gattVerified != b.gattVerified { return !a.gattVerified }
            return latest ? a.sequence < b.sequence : a.sequence > b.sequence
        }
        for b in ordered {
            let answer = b.answer
            guard let key = VoterKey(storeBytes: b.voter),
                  let seq = UInt16(exactly: b.sequence), let q = UInt8(exactly: b.question) else { continue }
            let ballot = Ballot(mode: key.mode, voteID: o.tally.voteID, question: q, voterID: key.voterID,
                                sequence: seq, answer: answer)
            let bound = o.tally.bindings[key.voterID]
            let proof: BallotProof = b.gattVerified && key.mode == .anonymous ? bound.map { .signed($0) } ?? .advertised : .advertised
            _ = o.tally.record(ballot, from: DeviceAddress(b.address) ?? DeviceAddress(rawValue: 0), at: .zero, proof: proof)
            if let counted = o.tally.question(q)?.voters[key]?.sequence { o.committed[q, default: [:]][key] = counted }
        }
    }

    /// Ends the current poll (committed and closed in the database; an anonymous poll keeps only
    /// totals) and starts a new one with a fresh join code, or `joinCode` if given and never used.
    /// Returns the new poll's vote ID.
    @discardableResult
    public func newPoll(joinCode requested: JoinCode? = nil) async throws -> UInt16 {
        var next = options
        if let requested {
            next.joinCode = requested
            next.beaconSigner = nil
        } else {
            let (code, signer) = try await Self.anchoredJoinCode(store: store)
            next.joinCode = code
            next.beaconSigner = signer
        }
        let keyring = await Self.derivedKeyring(next)
        flush()
        if let e = storageError {
            throw PollError.storage("counting has stopped, the database cannot be written (\(e)); "
                                    + "a new poll starts once it can")
        }
        let opening = try Self.fresh(options: next, store: store, now: clock.date)
        options = next
        joinCode = next.joinCode
        pipeline = IngestPipeline(keyring: keyring, tally: opening.tally, policy: pipeline.policy)
        pollID = opening.pollID
        question = opening.question
        isOpen = true
        openedAt = opening.openedAt
        closedAt = nil
        verification = VerificationState(shuttingDown: verification.shuttingDown)
        committed = [:]
        rejections = RejectionLedger()
        sealed = [:]
        pollCreatedAt = opening.createdAt
        renewBeacon(secret: keyring.secret, signer: next.beaconSigner)
        resetPublished()
        version &+= 1
        logger.info("new poll \(pollID.map(String.init) ?? "-") (vote \(IDText.vote(next.joinCode.voteID)))")
        return next.joinCode.voteID
    }
}

/// What the command line said about the poll that `--resume` continues: nil where it said nothing
/// (the stored poll decides). Anything said must agree with the stored poll.
public struct ResumeFlags: Sendable, Hashable {
    /// `--options N`.
    public var options: Int?
    /// `--roster` (true), or nothing.
    public var roster: Bool?
    /// `--first-response-only`, or nothing.
    public var policy: ChangePolicy?
    /// `--question N`.
    public var question: UInt8?
    /// `--kind K`.
    public var kind: Answer.Kind?
    /// `--questions FILE`: the set it holds.
    public var questionSet: [QuestionSpec]?

    public init(options: Int? = nil, roster: Bool? = nil, policy: ChangePolicy? = nil, question: UInt8? = nil,
                kind: Answer.Kind? = nil, questionSet: [QuestionSpec]? = nil) {
        self.options = options
        self.roster = roster
        self.policy = policy
        self.question = question
        self.kind = kind
        self.questionSet = questionSet
    }
}

extension CountingRule {
    init(_ policy: ChangePolicy) {
        switch policy {
        case .latestWins: self = .latestWins
        case .firstResponseOnly: self = .firstResponseOnly
        }
    }
}

extension ChangePolicy {
    init(_ rule: CountingRule) {
        switch rule {
        case .latestWins: self = .latestWins
        case .firstResponseOnly: self = .firstResponseOnly
        }
    }
}
