import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation

/// What the poll needs to verify anonymous ballots over GATT (PROTOCOL.md, "Takeover rule").
struct VerificationState: Sendable {
    /// A GATT read of the ballot heard from `address`.
    struct Request: Sendable, Hashable {
        var address: DeviceAddress
        var voter: VoterKey
        var question: UInt8
        var sequence: UInt16
    }

    /// Reads asked for: each ballot is read once per voter, sequence and address (a failed read waits
    /// in `retries` for its back-off, then is read again). Emptied when full.
    var requested: Set<Request> = []
    /// Failed reads tried again until their ballot is verified or its question closes.
    var retries = ReadRetries()
    static let requestedLimit = 1 << 14
    /// Keys bound since the last commit, stored with it.
    var newBindings: [VoterKeyRecord] = []
    /// Set when the radio stops: queued reads are dropped, none starts.
    var shuttingDown = false
    /// Reads queued and not yet finished (tests drive a virtual air until none is left).
    var outstanding = 0
    /// When reads may start: at most 5 % of the radio's time while ballots are arriving.
    var budget = ReadBudget()
    /// Reads not started because the budget was spent (each is asked again when its ballot is heard).
    var deferred = 0
    /// Reads that verified the ballot read (ok), and reads that failed or verified nothing.
    var results = (ok: 0, failed: 0)
    /// The radio cannot read GATT (raw HCI): no read is asked for.
    var unsupported = false

    /// Whether `request` may join the read queue at `now`: while ballots arrive, no more reads queue
    /// than `concurrent` run at once (the budget decides at their start), and one that may not waits
    /// in `retries` for its back-off. One let in is remembered as asked for.
    mutating func mayQueue(_ request: Request, at now: RadioInstant, concurrent: Int) -> Bool {
        if !budget.isQuiet(at: now), outstanding >= max(1, concurrent) {
            retries.failed(request, at: now)
            return false
        }
        if requested.count >= Self.requestedLimit { requested.removeAll() }
        requested.insert(request)
        return true
    }

    /// What the read queue did with a request ``mayQueue(_:at:concurrent:)`` let in: a full queue drops
    /// its oldest request, which is forgotten too, so that hearing that ballot again asks again.
    mutating func queued(_ result: AsyncStream<Request>.Continuation.YieldResult) {
        switch result {
        case .enqueued: outstanding += 1
        case .dropped(let old): requested.remove(old)
        case .terminated: break
        @unknown default: break
        }
    }
}

/// Whether counted changes can be verified in this poll, for the view and `status`.
public enum VerificationStatus: String, Sendable, Codable {
    /// Anonymous ballots are read over GATT; a verified ballot cannot be replaced by an unverified one.
    case verified
    /// No GATT reads (`--no-gatt-confirm`, or a radio that cannot read GATT): the version-1 rule
    /// holds and anyone with the join code can replace an anonymous voter's answer.
    case changesUnverified
    /// Roster poll: every counted ballot is verified by the student's own key.
    case roster
}

extension PollController {
    /// Whether changes of anonymous answers are verified (the view says "changes unverified" if not).
    public var verificationStatus: VerificationStatus {
        if options.roster != nil { return .roster }
        return options.confirmByGATT && !verification.unsupported ? .verified : .changesUnverified
    }

    /// Whether `b` is now its voter's counted ballot for its question, and verified.
    func isCountedAndVerified(_ b: Ballot) -> Bool {
        guard let r = pipeline.tally.counted(question: b.question, voter: VoterKey(mode: b.mode, voterID: b.voterID)) else {
            return false
        }
        return r.verified && r.sequence == b.sequence && r.answer == b.answer
    }

    /// Asks for a GATT read of an advertised anonymous ballot when it could verify something: the
    /// voter's counted ballot is unverified (this one, or one it lost to), or this ballot was
    /// rejected as `unverifiedChange`.
    func requestRead(after r: IngestResult, address: DeviceAddress) {
        guard options.confirmByGATT, !verification.unsupported, !verification.shuttingDown, gattQueue != nil,
              let b = r.ballot, b.mode == .anonymous, options.roster == nil else { return }
        let voter = VoterKey(mode: b.mode, voterID: b.voterID)
        switch r.outcome {
        case .rejected(.unverifiedChange):
            break
        case .new, .changed, .repeated, .rejected(.staleSequence), .rejected(.conflictingSequence),
             .rejected(.changeIgnored):
            guard let c = pipeline.tally.counted(question: b.question, voter: voter), !c.verified else { return }
        default:
            return
        }
        let request = VerificationState.Request(address: address, voter: voter, question: b.question, sequence: b.sequence)
        guard !verification.requested.contains(request) else { return }
        // A read that failed is tried again after its back-off, not each time its ballot is heard.
        if verification.retries.isWaiting(request, heardAt: radioNow) { return }
        enqueueRead(request)
    }

    /// Queues a read of `request`; one that cannot queue now (reads busy while ballots arrive) waits
    /// for a retry.
    func enqueueRead(_ request: VerificationState.Request) {
        guard let queue = gattQueue, !verification.shuttingDown,
              verification.mayQueue(request, at: radioNow, concurrent: options.maxConcurrentReads) else { return }
        verification.queued(queue.yield(request))
    }

    /// Whether a read of `r` could still verify something: its question is the open one and its
    /// ballot is not the voter's counted, verified one.
    func stillWorthReading(_ r: VerificationState.Request) -> Bool {
        guard isOpen, r.question == question else { return false }
        guard let c = pipeline.tally.counted(question: r.question, voter: r.voter) else { return true }
        return !(c.verified && c.sequence == r.sequence)
    }

    /// Queues the failed reads whose back-off is over (called as reports advance the radio's clock).
    func retryDueReads() {
        for r in verification.retries.due(at: radioNow) {
            guard stillWorthReading(r) else {
                verification.retries.done(r)
                continue
            }
            verification.requested.remove(r)
            enqueueRead(r)
        }
    }

    /// A read of `r` failed for a reason that may pass (lost connection, collision, timeout, the budget):
    /// it is tried again after its back-off while it could verify something.
    func readFailed(_ r: VerificationState.Request) {
        verification.requested.remove(r)
        if stillWorthReading(r) {
            verification.retries.failed(r, at: radioNow)
        } else {
            verification.retries.done(r)
        }
    }

    /// Reads one ballot over GATT and counts what was read: a value signed by the voter's key verifies
    /// exactly the ballot it carries (and binds the key on first use); anything else is counted by reason.
    func confirm(_ r: VerificationState.Request, central: any CentralTransport) async {
        defer { verification.outstanding -= 1 }
        if verification.unsupported || verification.shuttingDown || Task.isCancelled { return }
        if let c = pipeline.tally.counted(question: r.question, voter: r.voter), c.verified, c.sequence == r.sequence {
            verification.retries.done(r)
            return  // verified meanwhile
        }
        // The scan pauses while a connection is made: while ballots arrive, reads take at most the
        // budget's share of the radio's time. One refused now is asked again when its ballot is heard.
        let start = radioNow, busy = !verification.budget.isQuiet(at: start)
        guard verification.budget.mayStart(at: start) else {
            verification.deferred += 1
            readFailed(r)
            return
        }
        defer { verification.budget.ended(startedAt: start, busy: busy, at: radioNow) }
        let value: [UInt8]
        do {
            value = try await central.readCharacteristic(
                device: r.address, service: BallotFormat.serviceUUID,
                characteristic: BallotFormat.ballotCharacteristicUUID, timeout: options.gattTimeout)
        } catch TransportError.unsupported(let why) {
            // This radio cannot read GATT (raw HCI): stop asking, count from advertisements alone.
            if !verification.unsupported { logger.notice("GATT confirmation off, changes unverified: \(why)") }
            verification.unsupported = true
            version &+= 1
            return
        } catch {
            verification.results.failed += 1
            readFailed(r)
            logger.debug("GATT read of \(r.address) failed: \(error)")
            version &+= 1
            return
        }
        // A value was read: it verifies its ballot or it never will (another key, a forgery).
        verification.retries.done(r)
        let bound = pipeline.tally.bindings.count
        let result = pipeline.ingestGATT(value, from: r.address, at: radioNow)
        if let b = result.ballot, isCountedAndVerified(b) {
            verification.results.ok += 1
        } else {
            verification.results.failed += 1
        }
        if pipeline.tally.bindings.count > bound, let b = result.ballot, let pk = pipeline.tally.bindings[b.voterID],
           let pollID {
            verification.newBindings.append(VoterKeyRecord(poll: pollID, voter: VoterKey(mode: b.mode, voterID: b.voterID).storeBytes,
                                                           publicKey: Data(pk.bytes)))
        }
        accept(result, address: r.address, readOverGATT: true)
        version &+= 1
    }
}
