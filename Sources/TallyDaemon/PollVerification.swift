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
        return options.confirmByGATT && !gattUnsupported ? .verified : .changesUnverified
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
        guard options.confirmByGATT, !gattUnsupported, !verification.shuttingDown, gattQueue != nil,
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
        guard let queue = gattQueue, !verification.shuttingDown else { return }
        // While ballots arrive, no more reads queue than run at once: the budget decides at their start.
        if !readBudget.isQuiet(at: radioNow), readsOutstanding >= max(1, options.maxConcurrentReads) {
            verification.retries.failed(request, at: radioNow)
            return
        }
        if verification.requested.count >= VerificationState.requestedLimit { verification.requested.removeAll() }
        verification.requested.insert(request)
        // A full queue drops its oldest request: forget it too, so that hearing that ballot again asks again.
        switch queue.yield(request) {
        case .enqueued: readsOutstanding += 1
        case .dropped(let old): verification.requested.remove(old)
        case .terminated: break
        @unknown default: break
        }
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
        defer { readsOutstanding -= 1 }
        if gattUnsupported || verification.shuttingDown || Task.isCancelled { return }
        if let c = pipeline.tally.counted(question: r.question, voter: r.voter), c.verified, c.sequence == r.sequence {
            verification.retries.done(r)
            return  // verified meanwhile
        }
        // The scan pauses while a connection is made: while ballots arrive, reads take at most the
        // budget's share of the radio's time. One refused now is asked again when its ballot is heard.
        let start = radioNow, busy = !readBudget.isQuiet(at: start)
        guard readBudget.mayStart(at: start) else {
            gattReadsDeferred += 1
            readFailed(r)
            return
        }
        defer { readBudget.ended(startedAt: start, busy: busy, at: radioNow) }
        let value: [UInt8]
        do {
            value = try await central.readCharacteristic(
                device: r.address, service: BallotFormat.serviceUUID,
                characteristic: BallotFormat.ballotCharacteristicUUID, timeout: options.gattTimeout)
        } catch TransportError.unsupported(let why) {
            // This radio cannot read GATT (raw HCI): stop asking, count from advertisements alone.
            if !gattUnsupported { logger.notice("GATT confirmation off, changes unverified: \(why)") }
            gattUnsupported = true
            version &+= 1
            return
        } catch {
            gattReads.failed += 1
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
            gattReads.ok += 1
        } else {
            gattReads.failed += 1
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
