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
/// before any reader (view, `results()`, D-Bus) can observe it. The actor runs on a thread of its own
/// (`ThreadExecutor`), so those synchronous commits never block a thread of the cooperative pool.
public actor PollController {
    /// The thread every turn of this actor runs on.
    nonisolated let executor: ThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
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
    /// Rejected reports, the devices behind them, and the counts not yet committed.
    var rejections: RejectionLedger
    /// Totals of the closed questions of an anonymous poll, whose per-voter state is gone.
    var sealed: [UInt8: QuestionTotals] = [:]
    /// The projector page's address (`--web`), which the live view shows; nil without a page.
    public var projectorURL: String?
    public func setProjectorURL(_ url: String?) { projectorURL = url }
    /// When the poll was last exported (`e`, D-Bus `Export`); nil: never in this run.
    public internal(set) var exportedAt: Date?
    /// Accepted ballots per slot of the last five seconds (votes per second), trimmed as it records.
    var acceptedRate = RateWindow(window: .seconds(5))
    /// The poll's one clock: the beacon's timers and every wall time it records (``PollClock``).
    public nonisolated let clock: PollClock
    /// Where the beacon loop stands (``beaconSettled()``).
    nonisolated let beaconTurns: BeaconTurns
    var gattQueue: AsyncStream<VerificationState.Request>.Continuation?
    /// Advertisement reports taken in (tests drive a virtual air until the controller has taken every
    /// report it delivered and no read is left).
    var reportsHeard = 0
    /// Callers of `untilScanning()` waiting for the radio to scan.
    private var scanWaiters: [CheckedContinuation<Void, Never>] = []
    public private(set) var radio = RadioStatus(adapter: "-", state: .starting)
    var radioErrors = 0
    /// Whether the store takes writes: counting stops while it does not.
    var storage = StorageHealth()
    /// Why counting has stopped: the store's error while commits fail (nil while they succeed).
    public var storageError: String? { storage.error }
    /// The first storage error of this run, kept after counting resumed: the run then failed.
    public var storageFailure: String? { storage.firstFailure }
    /// Ballots counted but undone because they could not be saved (each counts when heard again).
    public var notSaved: Int { storage.notSaved }
    /// GATT reads that verified the ballot read (ok), and reads that failed or verified nothing.
    public var gattReads: (ok: Int, failed: Int) { verification.results }
    /// Increments on every change a view could show, and tells `changeFeed` so.
    public internal(set) var version = 0 { didSet { changeFeed.signal() } }
    /// Notified on every change of `version`: the views and the D-Bus signal wait on it.
    public nonisolated let changeFeed = ChangeFeed()
    /// The radio clock's latest reading (from reports), used to time GATT results on the same clock.
    var radioNow = RadioInstant.zero
    /// The live counts of the open question, moved in epochs; every live consumer reads them.
    var publisher: CountPublisher
    /// Whether live counts of an open question are shown; roster polls start with them hidden.
    public internal(set) var countsShown: Bool
    /// When the poll was created (the beacon's counter counts 10 ms ticks from it).
    var pollCreatedAt: Date
    /// The beacon: what the tally broadcasts, and the beacon frames it hears.
    var beacon: BeaconRuntime
    /// Where the ballots this tally counts go once saved (the shared ledger), if anywhere.
    var countedSink: (@Sendable (SharedBallot) -> Void)?
    /// Where each payload this tally's radio broadcasts goes too (the shared ledger, for receivers to
    /// broadcast), if anywhere; nil is handed on when the tally stops broadcasting.
    var beaconSink: (@Sendable (BroadcastPayload?) -> Void)?

    /// Starts a new poll (`.fresh`: `options.joinCode` must not be in `store`; the open poll there is
    /// closed), or continues the open poll of `store` (`.resume`). The poll opens at `clock`'s
    /// wall time (``PollClock/date``).
    public init(options: PollOptions, store: ClickerStore?, start: PollStart = .fresh,
                logger: Logger = Logger(label: "clicker.tally"), clock: PollClock = PollClock(ContinuousClock())) throws {
        var options = options
        guard let executor = ThreadExecutor(name: "clicker-poll") else { throw PollError.threadUnavailable }
        self.executor = executor
        self.clock = clock
        beaconTurns = BeaconTurns(clock: clock)
        let now = clock.date
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
        rejections = RejectionLedger(stored: opening.rejected)
        sealed = opening.sealed
        pipeline = IngestPipeline(keyring: Self.keyring(options), tally: opening.tally)
        pollCreatedAt = opening.createdAt
        beacon = BeaconRuntime(secret: pipeline.keyring.secret, signer: options.beaconSigner)
        countsShown = options.roster == nil
        publisher = CountPublisher(rule: options.publishRule,
                                   start: Self.exactCounts(opening.tally, sealed: opening.sealed[opening.question],
                                                           question: opening.question,
                                                           options: (opening.tally.question(opening.question)?.spec
                                                                     ?? options.firstSpec).options),
                                   at: now)
    }

    deinit { executor.shutdown() }

    // MARK: Radio

    /// Consumes `central` until cancelled or the radio fails for good. GATT confirmations run
    /// alongside, at most `maxConcurrentReads` at a time.
    public func run(central: any CentralTransport) async throws {
        // The beacon goes out when the radio can broadcast while it scans.
        let broadcaster = options.beacon != .off ? central as? any BroadcasterTransport : nil
        beacon.radio = broadcaster
        if broadcaster == nil { beaconTurns.end() } else { beaconTurns.begin() }
        let (requests, continuation) = AsyncStream<VerificationState.Request>.makeStream(bufferingPolicy: .bufferingNewest(4096))
        gattQueue = continuation
        verification.outstanding = 0
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
            if let broadcaster {
                group.addTask { [weak self] in await self?.runBeacon(broadcaster) }
            }
            // One actor turn per batch the radio delivers, the reports tallied in order.
            for try await batch in central.advertisementBatches(companyID: BallotFormat.companyID) {
                for report in batch { ingest(report) }
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
        if s.state == .scanning {
            for w in scanWaiters { w.resume() }
            scanWaiters.removeAll()
        }
    }

    /// Returns once the radio reports scanning: `run(central:)` then receives what the air carries
    /// (a test starts a virtual air only after this). Returns at once if it scans already.
    public func untilScanning() async {
        if radio.state == .scanning { return }
        await withCheckedContinuation { scanWaiters.append($0) }
    }

    /// Tallies one report and commits what it changed.
    public func ingest(_ report: AdvertisementReport) {
        reportsHeard &+= 1
        if report.timestamp > radioNow { radioNow = report.timestamp }
        if let due = verification.retries.nextDue, radioNow >= due { retryDueReads() }
        // A ballot's byte 1 is 0x20 or 0x21 (its mode in the low bit): one byte sends every ballot on.
        // Beacon frames (the tally's own, another tally's, forged ones) are not ballots: dropped here,
        // before the ballot decoder, and not counted as rejected ballots.
        let d = report.data
        if d.count > 1, d[1] & 0x0E != 0, BeaconFormat.isBeacon(d) {
            heardBeacon(report)
            return
        }
        let r = pipeline.ingest(report)
        if case .rejected(.unknownVoter) = r.outcome { beaconHeardUncountable(d) }
        accept(r, address: report.address)
    }

    /// Commits what a result counted. A ballot read over GATT is stored as verified when the tally
    /// counts it verified (only the ballot read back, never another one heard before it). A ballot
    /// another receiver counted (`heardElsewhere`, ``countShared(_:)``) is committed, shown and acknowledged
    /// like one heard here, but asks for no GATT read, and what the rule refuses of it is not recorded.
    func accept(_ r: IngestResult, address: DeviceAddress, readOverGATT: Bool = false, heardElsewhere: Bool = false) {
        let gattVerified = readOverGATT && r.ballot.map { $0.mode == .anonymous && isCountedAndVerified($0) } ?? false
        switch r.outcome {
        case .new, .changed:
            guard let b = r.ballot else { return }
            // Nothing is shown, exported or acknowledged that is not saved.
            guard commit([record(b, address: address, gattVerified: gattVerified)]) else { return notSaved(b, r) }
            acceptedRate.record(at: clock.date)
            if b.question == question { publisher.note(VoterKey(mode: b.mode, voterID: b.voterID)) }
            beaconCounted(b, at: radioNow)
            if !heardElsewhere {
                share(b)
                if !readOverGATT { verification.budget.counted(at: radioNow) }
            }
            version &+= 1
        case .rejected where heardElsewhere:
            return
        case .rejected(let reason):
            // Counted once per report, repeats included, under the question current now.
            if rejections.record(reason.rawValue, question: question, from: address) || !verification.newBindings.isEmpty {
                commit([])
            }
            version &+= 1
        case .unregistered:
            version &+= 1
        case .repeated:
            guard let b = r.ballot else { return }
            let key = VoterKey(mode: b.mode, voterID: b.voterID)
            // The same answer again: stored when its sequence became the counted one (or it was verified).
            if gattVerified || b.sequence != committed[b.question]?[key] {
                guard commit([record(b, address: address, gattVerified: gattVerified)]) else { return notSaved(b, r) }
                if !heardElsewhere { share(b) }
            }
            // Counted (the same answer again, perhaps under a new sequence): acknowledged, or heard
            // again by a voter that may have missed its acknowledgement.
            beaconCounted(b, at: radioNow)
        }
        if !readOverGATT && !heardElsewhere { requestRead(after: r, address: address) }
    }
}
