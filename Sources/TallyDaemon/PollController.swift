import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import Logging

/// Runs one poll: turns advertisement reports from any `CentralTransport` into committed, tallied,
/// GATT-confirmed ballots, and answers the operator (keys, D-Bus, CLI). `newPoll()` replaces the
/// poll with a fresh one (new join code) without restarting.
///
/// Every accepted ballot is committed to the store inside the same actor turn that tallied it,
/// before any reader (view, `results()`, D-Bus) can observe it.
public actor PollController {
    public internal(set) var options: PollOptions
    /// The current poll's join code (shown on screen; never exported, logged or sent on D-Bus except
    /// by the instructors' `JoinCode` method).
    public internal(set) var joinCode: JoinCode
    var pipeline: IngestPipeline
    let store: ClickerStore?
    let logger: Logger
    var pollID: Int64?

    public internal(set) var question: UInt8
    public internal(set) var isOpen: Bool
    var openedAt: Date
    var closedAt: Date?
    /// GATT reads asked for, and key bindings not yet committed.
    var verification = VerificationState()
    /// Sequence of each voter's counted ballot as last committed, per question: a re-sent ballot with
    /// another sequence and the same answer changes no count but must still be stored.
    var committed: [UInt8: [VoterKey: UInt16]] = [:]
    /// Rejected reports by the question that was current when they arrived, then by reason.
    var rejected: [UInt8: [String: Int]] = [:]
    /// Totals of the closed questions of an anonymous poll, whose per-voter state is gone.
    var sealed: [UInt8: QuestionTotals] = [:]
    /// Ballots tallied but not yet committed (only after a storage error).
    var unsaved: [BallotRecord] = []
    var pendingRejections: [PendingRejection: Int] = [:]
    /// Accepted ballots per slot of the last five seconds (votes per second), trimmed as it records.
    private var acceptedRate = RateWindow(window: .seconds(5))
    /// Wall clock of the operator's side (votes per second); injected by tests.
    private let clock: @Sendable () -> Date
    var gattQueue: AsyncStream<VerificationState.Request>.Continuation?
    public private(set) var radio = RadioStatus(adapter: "-", state: .starting)
    private var radioErrors = 0
    public internal(set) var storageError: String?
    /// GATT reads that verified the ballot read (ok), and reads that failed or verified nothing.
    public internal(set) var gattReads = (ok: 0, failed: 0)
    var gattUnsupported = false
    /// Increments on every change a view could show, and tells `changeFeed` so.
    public internal(set) var version = 0 { didSet { changeFeed.signal() } }
    /// Notified on every change of `version`: the views and the D-Bus signal wait on it.
    public nonisolated let changeFeed = ChangeFeed()
    /// The radio clock's latest reading (from reports), used to time GATT results on the same clock.
    var radioNow = RadioInstant.zero
    /// The live counts of the open question, moved in epochs; every live consumer reads them.
    private var publisher: CountPublisher
    /// Whether live counts of an open question are shown; roster polls start with them hidden.
    public private(set) var countsShown: Bool

    struct PendingRejection: Hashable {
        var question: UInt8
        var reason: String
    }

    /// Starts a new poll (`.fresh`: `options.joinCode` must not be in `store`; the open poll there is
    /// closed), or continues the open poll of `store` (`.resume`).
    public init(options: PollOptions, store: ClickerStore?, start: PollStart = .fresh, now: Date = Date(),
                logger: Logger = Logger(label: "clicker.tally"), clock: @escaping @Sendable () -> Date = { Date() }) throws {
        var options = options
        self.clock = clock
        let opening: Opening
        switch start {
        case .fresh:
            opening = try Self.fresh(options: options, store: store, now: now)
        case .resume(let maxAge, let stated):
            (options, opening) = try Self.resuming(options, store: store, maxAge: maxAge, stated: stated, now: now,
                                                   logger: logger)
        }
        self.options = options
        self.store = store
        self.logger = logger
        joinCode = options.joinCode
        pollID = opening.pollID
        question = opening.question
        isOpen = opening.isOpen
        openedAt = opening.openedAt
        closedAt = opening.closedAt
        committed = opening.committed
        rejected = opening.rejected
        sealed = opening.sealed
        pipeline = IngestPipeline(keyring: Self.keyring(options), tally: opening.tally)
        countsShown = options.roster == nil
        publisher = CountPublisher(rule: options.publishRule,
                                   start: Self.exactCounts(opening.tally, sealed: opening.sealed[opening.question],
                                                           question: opening.question, options: options.options),
                                   at: now)
    }

    // MARK: Radio

    /// Consumes `central` until cancelled or the radio fails for good. GATT confirmations run
    /// alongside, at most `maxConcurrentReads` at a time.
    public func run(central: any CentralTransport) async throws {
        let (requests, continuation) = AsyncStream<VerificationState.Request>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        gattQueue = continuation
        verification.shuttingDown = false
        defer { continuation.finish() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [weak self] in
                for await s in central.status() { await self?.setRadio(s) }
            }
            if options.confirmByGATT {
                let limit = max(1, options.maxConcurrentReads)
                group.addTask { [weak self] in
                    await withTaskGroup(of: Void.self) { reads in
                        var inFlight = 0
                        for await r in requests {
                            if inFlight >= limit { await reads.next(); inFlight -= 1 }
                            // Shutting down: queued reads are dropped, no connection is made for them.
                            if Task.isCancelled { break }
                            reads.addTask { await self?.confirm(r, central: central) }
                            inFlight += 1
                        }
                    }
                }
            }
            for try await report in central.advertisements(companyID: BallotFormat.companyID) {
                ingest(report)
            }
            verification.shuttingDown = true
            group.cancelAll()
        }
        verification.shuttingDown = true
        flush()
    }

    func setRadio(_ s: RadioStatus) {
        if s.lastError != nil, s.lastError != radio.lastError { radioErrors += 1 }
        radio = s
        version &+= 1
    }

    /// Tallies one report and commits what it changed.
    public func ingest(_ report: AdvertisementReport) {
        if report.timestamp > radioNow { radioNow = report.timestamp }
        let r = pipeline.ingest(report)
        accept(r, address: report.address)
    }

    /// Commits what a result counted. A ballot read over GATT is stored as verified when the tally
    /// counts it verified (only the ballot read back, never another one heard before it).
    func accept(_ r: IngestResult, address: DeviceAddress, readOverGATT: Bool = false) {
        let gattVerified = readOverGATT && r.ballot.map { $0.mode == .anonymous && isCountedAndVerified($0) } ?? false
        switch r.outcome {
        case .new, .changed:
            guard let b = r.ballot else { return }
            commit([record(b, address: address, gattVerified: gattVerified)])
            acceptedRate.record(at: clock())
            if b.question == question { publisher.note(VoterKey(mode: b.mode, voterID: b.voterID)) }
            version &+= 1
        case .rejected(let reason):
            // Counted once per report, repeats included, under the question current now.
            rejected[question, default: [:]][reason.rawValue, default: 0] += 1
            pendingRejections[PendingRejection(question: question, reason: reason.rawValue), default: 0] += 1
            if pendingRejections.values.reduce(0, +) >= 256 || !verification.newBindings.isEmpty { commit([]) }
            version &+= 1
        case .unregistered:
            version &+= 1
        case .repeated:
            guard let b = r.ballot else { return }
            let key = VoterKey(mode: b.mode, voterID: b.voterID)
            // The same answer again: stored when its sequence became the counted one (or it was verified).
            if gattVerified || b.sequence != committed[b.question]?[key] {
                commit([record(b, address: address, gattVerified: gattVerified)])
            }
        }
        if !readOverGATT { requestRead(after: r, address: address) }
    }

    private func record(_ b: Ballot, address: DeviceAddress, gattVerified: Bool) -> BallotRecord {
        let now = Date()
        // Anonymous polls keep no address (the store enforces it too).
        return BallotRecord(poll: pollID ?? 0, question: Int(b.question),
                            voter: VoterKey(mode: b.mode, voterID: b.voterID).storeBytes,
                            answer: b.answer, sequence: UInt32(b.sequence),
                            address: options.roster == nil ? "" : address.description,
                            firstHeard: now, lastHeard: now, gattVerified: gattVerified)
    }

    /// Commits ballots (and pending rejection counters) in one transaction. On failure they are kept
    /// and retried with the next commit; the error shows in the view.
    func commit(_ ballots: [BallotRecord]) {
        guard let store, let pollID else { verification.newBindings.removeAll(); return }
        let all = unsaved + ballots
        let rejections = pendingRejections.map {
            RejectionCount(poll: pollID, question: Int($0.key.question), reason: $0.key.reason, count: $0.value)
        }
        do {
            try store.record(all, rejections: rejections, voterKeys: verification.newBindings)
            verification.newBindings.removeAll()
            for b in all {
                guard let key = VoterKey(storeBytes: b.voter), let q = UInt8(exactly: b.question),
                      let seq = UInt16(exactly: b.sequence) else { continue }
                committed[q, default: [:]][key] = seq
            }
            unsaved.removeAll()
            pendingRejections.removeAll()
            if storageError != nil { storageError = nil; version &+= 1 }
        } catch {
            unsaved = Self.latestPerVoter(all)
            storageError = "\(error)"
            logger.error("cannot commit \(all.count) ballots: \(error)")
            version &+= 1
        }
    }

    /// Ballots kept while the store fails: only each voter's highest sequence per question (what a
    /// retry must store to count), so a long outage holds one record per voter, not one per ballot.
    static func latestPerVoter(_ records: [BallotRecord]) -> [BallotRecord] {
        var best: [BallotSlot: Int] = [:]
        for (i, b) in records.enumerated() {
            let k = BallotSlot(question: b.question, voter: b.voter)
            if let j = best[k], records[j].sequence > b.sequence
                || (records[j].sequence == b.sequence && (records[j].gattVerified || !b.gattVerified)) { continue }
            best[k] = i
        }
        return best.values.sorted().map { records[$0] }
    }

    struct BallotSlot: Hashable { var question: Int; var voter: Data }

    /// Commits everything pending (rejection counters, ballots after a storage error).
    public func flush() { commit([]) }

    // MARK: Operator actions

    /// Opens the current question again (after a close).
    public func openQuestion() throws {
        guard !isOpen else { throw PollError.questionAlreadyOpen(Int(question)) }
        // An anonymous question forgets its voters when it closes: reopening it would count again
        // voters who already voted.
        if options.roster == nil { throw PollError.questionSealed(Int(question)) }
        try storeAction { try $0.openQuestion(poll: $1, number: Int(question)) }
        if !pipeline.tally.openQuestions.contains(question), !pipeline.tally.reopen(question: question) {
            pipeline.tally.open(.choice(question, options: options.options))
        }
        isOpen = true
        closedAt = nil
        resetPublished()
        version &+= 1
    }

    /// Closes the current question: later ballots for it are rejected (`otherQuestion`). In an
    /// anonymous poll only its totals remain, in the database and in memory.
    public func closeQuestion() throws {
        guard isOpen else { throw PollError.noOpenQuestion }
        flush()
        if options.roster == nil, !unsaved.isEmpty {
            throw PollError.storage("votes not yet saved (\(storageError ?? "database error")): the question stays open")
        }
        // An anonymous question keeps the totals the live tally shows.
        let totals = options.roster == nil ? liveTotals(question) : nil
        try storeAction { try $0.closeQuestion(poll: $1, number: Int(question), totals: totals) }
        pipeline.tally.close(question: question)
        pipeline.forgetClosedQuestions()
        if let totals { seal(question, totals) }
        isOpen = false
        closedAt = Date()
        resetPublished()
        version &+= 1
    }

    /// Closes the current question (if open) and opens the next one.
    public func nextQuestion() throws {
        guard question < UInt8.max else { throw PollError.lastQuestion }
        if isOpen { try closeQuestion() }
        let next = question + 1
        try storeAction { try $0.openQuestion(poll: $1, number: Int(next), definition: options.questionDefinition) }
        pipeline.tally.open(.choice(next, options: options.options))
        question = next
        isOpen = true
        openedAt = Date()
        closedAt = nil
        acceptedRate.reset()
        resetPublished()
        version &+= 1
    }

    /// The totals of a question as the live tally counts them.
    private func liveTotals(_ q: UInt8) -> QuestionTotals {
        let r = results(question: q, ballots: false)
        var counts = [Int](repeating: 0, count: 4)
        for (answer, n) in pipeline.tally.question(q)?.counts ?? [:] {
            guard case .choice(let option) = answer else { continue }
            let i = Int(option)
            if i >= counts.count { counts += [Int](repeating: 0, count: i + 1 - counts.count) }
            counts[i] += n
        }
        return QuestionTotals(pollId: pollID ?? 0, question: Int(q), voters: r.voters, changes: r.changes,
                              gattVerified: r.gattVerified, counts: counts)
    }

    /// Keeps only the totals of a closed anonymous question, and forgets its voters.
    private func seal(_ q: UInt8, _ totals: QuestionTotals) {
        sealed[q] = totals
        pipeline.tally.forgetVoters(question: q)
        committed[q] = nil
    }

    private func storeAction(_ body: (ClickerStore, Int64) throws -> Void) throws {
        guard let store, let pollID else { return }
        do { try body(store, pollID) } catch { throw PollError.storage("\(error)") }
    }

    /// Writes the poll's CSV and JSON exports into `directory`; returns the file paths.
    public func export(to directory: String) throws -> [String] {
        flush()
        guard let store, let pollID else { throw PollError.storage("no database: run without --no-store to export") }
        do {
            let roster = options.roster.map { [(suffix: "roster.csv", contents: rosterCSV($0))] } ?? []
            return try store.export(poll: pollID, to: directory, adding: roster)
        } catch { throw PollError.storage("\(error)") }
    }

    /// One row per enrolled student, one column per question: the counted answer, or empty.
    func rosterCSV(_ roster: Roster) -> String {
        let numbers = pipeline.tally.questions.keys.sorted()
        var columns: [[Answer?]] = []
        for q in numbers {
            guard let r = pipeline.tally.results(question: q) else { continue }
            columns.append(roster.answers(r, keyring: pipeline.keyring).map(\.answer))
        }
        var rows = [["name", "student_id"] + numbers.map { "q\($0)" }]
        for (i, e) in roster.entries.enumerated() {
            rows.append([e.name, e.studentID] + columns.map { $0[i]?.description ?? "" })
        }
        return Exporter.csv(rows)
    }

    // MARK: Reading

    /// The counts every live consumer shows: while the question is open, hidden unless shown, and
    /// moved only at epochs of `options.publishRule`; once it is closed, exact.
    public func liveCounts(now: Date = Date()) -> LiveCounts {
        let tally = pipeline.tally, q = question, n = options.options, totals = sealed[q]
        guard isOpen else { return Self.exactCounts(tally, sealed: totals, question: q, options: n) }
        var live = publisher.read(at: now) { Self.exactCounts(tally, sealed: totals, question: q, options: n) }
        if !countsShown {
            live.counts = [:]
            live.hidden = true
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
                                             options: options.options), at: Date())
    }

    /// The exact counts of a question: from the tally, or from its totals once an anonymous
    /// question is sealed (its voters are forgotten).
    static func exactCounts(_ tally: Tally, sealed: QuestionTotals?, question q: UInt8, options: Int) -> LiveCounts {
        var counts: [String: Int] = [:]
        for i in 0..<options { counts[Answer.choice(UInt8(i)).description] = 0 }
        if let t = sealed {
            for (i, n) in t.counts.enumerated() where n > 0 {
                counts[Answer.optionLabel(i), default: 0] += n
            }
            return LiveCounts(counts: counts, voters: t.voters, changes: t.changes)
        }
        let r = tally.results(question: q)
        for (answer, n) in r?.countTable ?? [:] { counts[answer.description] = n }
        return LiveCounts(counts: counts, voters: r?.voters ?? 0, changes: r?.changedVoters ?? 0)
    }

    /// Accepted ballots per second over the last five seconds.
    public func votesPerSecond(now: Date? = nil) -> Double {
        acceptedRate.perSecond(at: now ?? clock())
    }

    /// Entries held per voter and per event, for tests, logs and the soak benchmark.
    public var footprint: PollFootprint {
        PollFootprint(rateWindow: acceptedRate.storage, unsaved: unsaved.count,
                      verificationRequests: verification.requested.count,
                      committed: committed.values.reduce(0) { $0 + $1.count },
                      tallyVoters: pipeline.tally.questions.values.reduce(0) { $0 + $1.voters.count + $1.unregistered.count },
                      pendingRejections: pendingRejections.count, ingest: pipeline.footprint)
    }

    /// The ingest pipeline's counters (reports, cache hits, verifications).
    public var ingestStatistics: IngestStats { pipeline.stats }

    /// Flood alert from the ingest pipeline, if any.
    public var floodAlert: Bool { pipeline.flood.alert }

    /// Time since the current question opened (frozen when closed).
    public func elapsed(now: Date = Date()) -> Duration {
        .seconds((closedAt ?? now).timeIntervalSince(openedAt))
    }

    /// Radio errors seen since start.
    public var radioErrorCount: Int { radioErrors }
}

extension VoterKey {
    /// Stored form: mode byte, then the voter ID big-endian.
    var storeBytes: Data {
        Data([mode.rawValue, UInt8(voterID >> 24), UInt8((voterID >> 16) & 0xFF), UInt8((voterID >> 8) & 0xFF),
              UInt8(voterID & 0xFF)])
    }

    init?(storeBytes d: Data) {
        let b = [UInt8](d)
        guard b.count == 5, let mode = BallotMode(rawValue: b[0]) else { return nil }
        self.init(mode: mode, voterID: UInt32(b[1]) << 24 | UInt32(b[2]) << 16 | UInt32(b[3]) << 8 | UInt32(b[4]))
    }
}

extension Answer {
    /// The label of a count column (an option index of a sealed question's totals): `A`…`H`, else the index.
    static func optionLabel(_ i: Int) -> String {
        i >= 0 && i < Answer.maxOptions ? Answer.choice(UInt8(i)).description : String(i)
    }
}
