import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import Logging

/// How a poll is run.
public struct PollOptions: Sendable {
    public var joinCode: JoinCode
    /// The class list (roster mode): only its students are counted; anonymous ballots are kept
    /// apart as "unregistered". Nil for anonymous polls.
    public var roster: Roster?
    public var policy: ChangePolicy
    /// Answers offered per question (A…).
    public var options: Int
    /// The question opened when the poll starts.
    public var firstQuestion: UInt8
    /// Read each new ballot back over GATT and verify its full tag.
    public var confirmByGATT: Bool
    public var gattTimeout: Duration
    /// GATT reads in flight at once (controllers allow only a few connections).
    public var maxConcurrentReads: Int
    public var title: String?
    /// When live counts of an open question move (see `PublishRule`); final results are exact.
    public var publishRule = PublishRule()

    public init(joinCode: JoinCode, roster: Roster? = nil,
                policy: ChangePolicy = .latestWins, options: Int = 4, firstQuestion: UInt8 = 1,
                confirmByGATT: Bool = true, gattTimeout: Duration = .seconds(10), maxConcurrentReads: Int = 2,
                title: String? = nil) {
        self.joinCode = joinCode
        self.roster = roster
        self.policy = policy
        self.options = options
        self.firstQuestion = firstQuestion
        self.confirmByGATT = confirmByGATT
        self.gattTimeout = gattTimeout
        self.maxConcurrentReads = maxConcurrentReads
        self.title = title
    }
}

/// Writes a file readable by its owner only.
func writePrivate(_ path: String, _ text: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw PollError.storage("cannot write \(path): \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    let bytes = Array(text.utf8)
    guard bytes.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
        throw PollError.storage("cannot write \(path): \(String(cString: strerror(errno)))")
    }
}

/// Errors of poll control, worded for the person at the keyboard.
public enum PollError: Error, Sendable, Equatable, CustomStringConvertible {
    case questionAlreadyOpen(Int)
    case noOpenQuestion
    case lastQuestion
    case storage(String)

    public var description: String {
        switch self {
        case .questionAlreadyOpen(let q): "question \(q) is already open"
        case .noOpenQuestion: "no question is open"
        case .lastQuestion: "there is no question after 255"
        case .storage(let why): "storage: \(why)"
        }
    }
}

/// Runs one poll: turns advertisement reports from any `CentralTransport` into committed, tallied,
/// GATT-confirmed ballots, and answers the operator (keys, D-Bus, CLI).
///
/// Every accepted ballot is committed to the store inside the same actor turn that tallied it,
/// before any reader (view, `results()`, D-Bus) can observe it.
public actor PollController {
    public let options: PollOptions
    public nonisolated let joinCode: JoinCode
    private var pipeline: IngestPipeline
    private let store: ClickerStore?
    private let logger: Logger
    private let pollID: Int64?

    public private(set) var question: UInt8
    public private(set) var isOpen: Bool
    private var openedAt: Date
    private var closedAt: Date?
    /// Ballots read back over GATT and verified: voter → highest confirmed sequence, per question.
    private var confirmed: [UInt8: [VoterKey: UInt16]] = [:]
    /// Highest sequence committed per voter, per question: a re-sent ballot with a higher sequence
    /// and the same answer changes no count but must still be stored.
    private var committed: [UInt8: [VoterKey: UInt16]] = [:]
    /// Ballots tallied but not yet committed (only after a storage error).
    private var unsaved: [BallotRecord] = []
    private var pendingRejections: [Rejection: Int] = [:]
    private var acceptedTimes: [Date] = []
    private var gattQueue: AsyncStream<GATTRequest>.Continuation?
    public private(set) var radio = RadioStatus(adapter: "-", state: .starting)
    private var radioErrors = 0
    public private(set) var storageError: String?
    public private(set) var gattReads = (ok: 0, failed: 0)
    private var gattUnsupported = false
    /// Increments on every change a view could show.
    public private(set) var version = 0
    /// The radio clock's latest reading (from reports), used to time GATT results on the same clock.
    private var radioNow = RadioInstant.zero
    /// The live counts of the open question, moved in epochs; every live consumer reads them.
    private var publisher: CountPublisher
    /// Whether live counts of an open question are shown; roster polls start with them hidden.
    public private(set) var countsShown: Bool

    struct GATTRequest: Sendable {
        var address: DeviceAddress
        var voter: VoterKey
        var question: UInt8
        var sequence: UInt16
    }

    /// Starts a new poll, or resumes the open one found in `store` when its join code matches
    /// `options.joinCode` (or when `resume` is true and no join code was chosen by the user).
    public init(options: PollOptions, store: ClickerStore?, resume: Bool = false,
                logger: Logger = Logger(label: "clicker.tally")) throws {
        var options = options
        self.store = store
        self.logger = logger
        var restored: ResumeState?
        do {
            if let s = try store?.resume() {
                let stored = s.poll.joinCode.flatMap { try? JoinCode(parsing: $0) }
                if let stored, stored == options.joinCode || resume {
                    options.joinCode = stored
                    restored = s
                } else {
                    try store?.closePoll(s.poll.id)
                }
            }
        } catch {
            throw PollError.storage("\(error)")
        }
        self.options = options
        self.joinCode = options.joinCode
        var tally = Tally(voteID: options.joinCode.voteID, policy: options.policy, rosterOnly: options.roster != nil)
        let now = Date()
        if let s = restored {
            pollID = s.poll.id
            let current = s.questions.last
            question = UInt8(clamping: current?.number ?? Int(options.firstQuestion))
            isOpen = current?.state == .open
            openedAt = current?.openedAt ?? now
            closedAt = current?.closedAt
            for q in s.questions { tally.open(.choice(UInt8(clamping: q.number), options: options.options)) }
            Self.replay(s.ballots, into: &tally, confirmed: &confirmed, committed: &committed)
            for q in s.questions where q.state == .closed { tally.close(question: UInt8(clamping: q.number)) }
            if s.questions.isEmpty { tally.open(.choice(question, options: options.options)) }
            logger.info("resumed poll \(s.poll.id) (vote \(options.joinCode.voteID)) with \(s.ballots.count) stored ballots")
        } else {
            question = options.firstQuestion
            isOpen = true
            openedAt = now
            do {
                let poll = try store?.createPoll(
                    voteID: Data([UInt8(options.joinCode.voteID >> 8), UInt8(options.joinCode.voteID & 0xFF)]),
                    joinCode: options.joinCode.description, joinSecret: nil,
                    mode: options.roster == nil ? .anonymous : .roster, title: options.title)
                pollID = poll?.id
                if let id = pollID { try store?.openQuestion(poll: id, number: Int(question), at: now) }
            } catch {
                throw PollError.storage("\(error)")
            }
            tally.open(.choice(question, options: options.options))
        }
        pipeline = IngestPipeline(keyring: PollKeyring(joinCode: options.joinCode, roster: options.roster?.deviceKeys ?? []),
                                  tally: tally)
        countsShown = options.roster == nil
        publisher = CountPublisher(rule: options.publishRule,
                                   start: Self.exactCounts(tally, question: question, options: options.options), at: now)
    }

    /// Rebuilds the tally from stored ballots (any order gives the same tally).
    static func replay(_ ballots: [BallotRecord], into tally: inout Tally, confirmed: inout [UInt8: [VoterKey: UInt16]],
                       committed: inout [UInt8: [VoterKey: UInt16]]) {
        for b in ballots {
            guard let key = VoterKey(storeBytes: b.voter), let answer = Answer(storeValue: b.answer),
                  let seq = UInt16(exactly: b.sequence), let q = UInt8(exactly: b.question) else { continue }
            let ballot = Ballot(mode: key.mode, voteID: tally.voteID, question: q, voterID: key.voterID,
                                sequence: seq, answer: answer)
            _ = tally.record(ballot, from: DeviceAddress(b.address) ?? DeviceAddress(rawValue: 0), at: .zero)
            if b.gattVerified { confirmed[q, default: [:]][key] = max(confirmed[q]?[key] ?? 0, seq) }
            committed[q, default: [:]][key] = max(committed[q]?[key] ?? 0, seq)
        }
    }

    // MARK: Radio

    /// Consumes `central` until cancelled or the radio fails for good. GATT confirmations run
    /// alongside, at most `maxConcurrentReads` at a time.
    public func run(central: any CentralTransport) async throws {
        let (requests, continuation) = AsyncStream<GATTRequest>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        gattQueue = continuation
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
                            reads.addTask { await self?.confirm(r, central: central) }
                            inFlight += 1
                        }
                    }
                }
            }
            for try await report in central.advertisements(companyID: BallotFormat.companyID) {
                ingest(report)
            }
            group.cancelAll()
        }
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

    private func accept(_ r: IngestResult, address: DeviceAddress, gattVerified: Bool = false) {
        switch r.outcome {
        case .new, .changed:
            guard let b = r.ballot else { return }
            commit([record(b, address: address, gattVerified: gattVerified)])
            acceptedTimes.append(Date())
            if b.question == question { publisher.note(VoterKey(mode: b.mode, voterID: b.voterID)) }
            if !gattVerified, options.confirmByGATT {
                gattQueue?.yield(GATTRequest(address: address, voter: VoterKey(mode: b.mode, voterID: b.voterID),
                                             question: b.question, sequence: b.sequence))
            }
            version &+= 1
        case .rejected(let reason):
            pendingRejections[reason, default: 0] += 1
            if pendingRejections.values.reduce(0, +) >= 256 { commit([]) }
            version &+= 1
        case .unregistered:
            version &+= 1
        case .repeated:
            guard let b = r.ballot else { return }
            let key = VoterKey(mode: b.mode, voterID: b.voterID)
            if gattVerified || b.sequence > committed[b.question]?[key] ?? 0 {
                commit([record(b, address: address, gattVerified: gattVerified)])
            }
        }
    }

    private func record(_ b: Ballot, address: DeviceAddress, gattVerified: Bool) -> BallotRecord {
        let now = Date()
        return BallotRecord(poll: pollID ?? 0, question: Int(b.question),
                            voter: VoterKey(mode: b.mode, voterID: b.voterID).storeBytes,
                            answer: b.answer.storeValue, sequence: UInt32(b.sequence), address: address.description,
                            firstHeard: now, lastHeard: now, gattVerified: gattVerified)
    }

    /// Commits ballots (and pending rejection counters) in one transaction. On failure they are kept
    /// and retried with the next commit; the error shows in the view.
    private func commit(_ ballots: [BallotRecord]) {
        guard let store, let pollID else { return }
        let all = unsaved + ballots
        let rejections = pendingRejections.map {
            RejectionCount(poll: pollID, question: Int(question), reason: $0.key.rawValue, count: $0.value)
        }
        do {
            try store.record(all, rejections: rejections)
            for b in all {
                guard let key = VoterKey(storeBytes: b.voter), let q = UInt8(exactly: b.question),
                      let seq = UInt16(exactly: b.sequence) else { continue }
                if seq > committed[q]?[key] ?? 0 { committed[q, default: [:]][key] = seq }
            }
            unsaved.removeAll()
            pendingRejections.removeAll()
            if storageError != nil { storageError = nil; version &+= 1 }
        } catch {
            unsaved = all
            storageError = "\(error)"
            logger.error("cannot commit \(all.count) ballots: \(error)")
            version &+= 1
        }
    }

    /// Commits everything pending (rejection counters, ballots after a storage error).
    public func flush() { commit([]) }

    private func confirm(_ r: GATTRequest, central: any CentralTransport) async {
        // Skip when the radio cannot read, or a newer ballot of this voter was already confirmed.
        if gattUnsupported { return }
        if let have = confirmed[r.question]?[r.voter], have >= r.sequence { return }
        do {
            let value = try await central.readCharacteristic(
                device: r.address, service: BallotFormat.serviceUUID,
                characteristic: BallotFormat.ballotCharacteristicUUID, timeout: options.gattTimeout)
            let result = pipeline.ingestGATT(value, from: r.address, at: radioNow)
            if let b = result.ballot, b.voterID == r.voter.voterID, b.mode == r.voter.mode, b.question == r.question {
                gattReads.ok += 1
                confirmed[b.question, default: [:]][r.voter] = max(confirmed[b.question]?[r.voter] ?? 0, b.sequence)
                accept(result, address: r.address, gattVerified: true)
            } else {
                gattReads.failed += 1
                accept(result, address: r.address)
            }
        } catch TransportError.unsupported(let why) {
            // This radio cannot read GATT (raw HCI): stop asking, count from advertisements alone.
            if !gattUnsupported { logger.notice("GATT confirmation off: \(why)") }
            gattUnsupported = true
        } catch {
            gattReads.failed += 1
            logger.debug("GATT read of \(r.address) failed: \(error)")
        }
        version &+= 1
    }

    // MARK: Operator actions

    /// Opens the current question again (after a close).
    public func openQuestion() throws {
        guard !isOpen else { throw PollError.questionAlreadyOpen(Int(question)) }
        try storeAction { try $0.openQuestion(poll: $1, number: Int(question)) }
        if !pipeline.tally.openQuestions.contains(question), !pipeline.tally.reopen(question: question) {
            pipeline.tally.open(.choice(question, options: options.options))
        }
        isOpen = true
        closedAt = nil
        resetPublished()
        version &+= 1
    }

    /// Closes the current question: later ballots for it are rejected (`otherQuestion`).
    public func closeQuestion() throws {
        guard isOpen else { throw PollError.noOpenQuestion }
        flush()
        try storeAction { try $0.closeQuestion(poll: $1, number: Int(question)) }
        pipeline.tally.close(question: question)
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
        try storeAction { try $0.openQuestion(poll: $1, number: Int(next)) }
        pipeline.tally.open(.choice(next, options: options.options))
        question = next
        isOpen = true
        openedAt = Date()
        closedAt = nil
        acceptedTimes.removeAll()
        resetPublished()
        version &+= 1
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
            var files = try store.export(poll: pollID, to: directory)
            if let roster = options.roster {
                let path = directory + "/poll-\(pollID)-roster.csv"
                try writePrivate(path, rosterCSV(roster))
                files.append(path)
            }
            return files
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

    /// Results of `question` (default: the current one). `ballots: false` leaves out the per-voter
    /// rows (the live view needs only the counts).
    public func results(question q: UInt8? = nil, ballots withRows: Bool = true) -> PollResults {
        let q = q ?? question
        let tally = pipeline.tally
        let r = tally.results(question: q)
        var counts: [String: Int] = [:]
        for (answer, n) in r?.countTable ?? [:] { counts[answer.description] = n }
        if r == nil { for i in 0..<options.options { counts[Answer.choice(UInt8(i)).description] = 0 } }
        let voters = withRows ? (tally.questions[q]?.voters ?? [:]) : [:]
        let rows = voters.sorted { $0.key < $1.key }.map { key, v in
            PollResults.BallotRow(voter: key.hex, answer: v.answer.description, sequence: Int(v.sequence),
                                  address: v.address.description,
                                  gattVerified: (confirmed[q]?[key] ?? 0) >= v.sequence, student: student(key))
        }
        var rejected: [String: Int] = [:]
        for (reason, n) in tally.rejections { rejected[reason.rawValue] = n }
        return PollResults(voteID: Int(joinCode.voteID), question: Int(q), open: q == question && isOpen,
                           counts: counts, voters: r?.voters ?? 0, changes: r?.changedVoters ?? 0,
                           unregistered: r?.unregisteredVoters ?? 0, rejected: rejected, ballots: rows)
    }

    /// "Name (student ID)" of a roster voter.
    func student(_ key: VoterKey) -> String? {
        guard key.mode == .roster, let roster = options.roster,
              let i = pipeline.keyring.rosterIndex(ofVoter: key.voterID), i < roster.entries.count else { return nil }
        return "\(roster.entries[i].name) (\(roster.entries[i].studentID))"
    }

    /// The counts every live consumer shows: while the question is open, hidden unless shown, and
    /// moved only at epochs of `options.publishRule`; once it is closed, exact.
    public func liveCounts(now: Date = Date()) -> LiveCounts {
        let tally = pipeline.tally, q = question, n = options.options
        guard isOpen else { return Self.exactCounts(tally, question: q, options: n) }
        var live = publisher.read(at: now) { Self.exactCounts(tally, question: q, options: n) }
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

    private func resetPublished() {
        publisher.reset(to: Self.exactCounts(pipeline.tally, question: question, options: options.options), at: Date())
    }

    static func exactCounts(_ tally: Tally, question q: UInt8, options: Int) -> LiveCounts {
        let r = tally.results(question: q)
        var counts: [String: Int] = [:]
        for i in 0..<options { counts[Answer.choice(UInt8(i)).description] = 0 }
        for (answer, n) in r?.countTable ?? [:] { counts[answer.description] = n }
        return LiveCounts(counts: counts, voters: r?.voters ?? 0, changes: r?.changedVoters ?? 0)
    }

    /// Accepted ballots per second over the last five seconds.
    public func votesPerSecond(now: Date = Date()) -> Double {
        acceptedTimes.removeAll { now.timeIntervalSince($0) > 5 }
        return Double(acceptedTimes.count) / 5
    }

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
    /// Stored form: the choice index for single choices (0 = A), else kind << 16 | value.
    var storeValue: Int {
        if case .choice(let i) = self { return Int(i) }
        let (k, hi, lo) = wireBytes
        return Int(k) << 16 | Int(hi) << 8 | Int(lo)
    }

    init?(storeValue v: Int) {
        if v >= 0, v < 8 { self = .choice(UInt8(v)); return }
        guard v >= 0, v <= 0xFF_FFFF,
              let a = Answer(wire: UInt8(v >> 16), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)) else { return nil }
        self = a
    }
}
