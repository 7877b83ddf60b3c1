import ClickerQuestions
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import Synchronization

/// How long the tally keeps telling voters that the poll closed before it stops broadcasting.
public let beaconClosingTime: Duration = .seconds(3)

extension PollController {
    // MARK: What the scanner hears

    /// A beacon frame heard by the scanner: dropped, never a ballot. An authentic STATE frame of this
    /// poll that this tally did not seal is a forgery by a holder of the join code: counted and shown.
    /// (A signed STATE is this tally's when its signature verifies under the poll's key.)
    func heardBeacon(_ report: AdvertisementReport) {
        beacon.framesHeard &+= 1
        let d = report.data
        let tagged = d.count == BeaconFormat.stateLength && d[1] == BeaconFrameKind.state.typeByte(signed: false)
        let signed = d.count == BeaconFormat.signedStateLength && d[1] == BeaconFrameKind.state.typeByte(signed: true)
        guard tagged || signed, UInt16(d[2]) << 8 | UInt16(d[3]) == joinCode.voteID, !beacon.sealedSet.contains(d) else { return }
        let second = report.timestamp.nanoseconds / 1_000_000_000
        if second != beacon.checkSecond { beacon.checkSecond = second; beacon.checksLeft = BeaconRuntime.checksPerSecond }
        guard beacon.checksLeft > 0 else { return }
        beacon.checksLeft -= 1
        guard case .success(let e) = BeaconCodec.envelope(d, key: beacon.key), case .state = e.frame else { return }
        if e.isSigned, let pk = beacon.signer?.publicKey {
            // Its own frames are known by their bytes (``beaconSigned(_:)``): only another's costs a verification.
            beacon.signatureChecks += 1
            if e.verify(pk) { return }
        }
        if beacon.forgeries == 0 || beacon.lastForgery.map({ clock.date.timeIntervalSince($0) > 60 }) ?? true {
            logger.warning("forged beacon: an authentic STATE frame of this poll that this tally did not send (someone with the join code); \(Self.forgeryEffects)")
        }
        beacon.forgeries += 1
        beacon.lastForgery = clock.date
        beacon.forgedDuring = question
        version &+= 1
    }

    /// Signed STATE frames of this poll that the scanner heard and the actor verified (not known as its own).
    var beaconSignatureChecks: Int { beacon.signatureChecks }

    /// Forged STATE frames heard so far in this poll.
    public var beaconForgeries: Int { beacon.forgeries }

    /// Beacon frames the scanner heard (dropped before the ballot decoder).
    public var beaconFramesHeard: Int { beacon.framesHeard }

    /// What a forged STATE frame can do to the voters that follow legacy frames (docs/SECURITY.md, "A
    /// forged STATE frame"): show a false question, or say that the question or the poll closed, or tell
    /// them to stop sending; an answer given to a false question goes out for that question's number,
    /// and is kept for it (it counts if the tally opens that number with the same description).
    static let forgeryEffects = "students may be shown a false question or a false close, and answers to a false "
        + "question are sent for its number"

    /// The alert line about forged beacon frames: shown for the rest of the poll, since the effects of a
    /// forgery can last that long (an answer to a false question is kept for its number; a voter whose
    /// acknowledgement was forged too listens to the forger's counter), with when the last one came.
    func beaconAlert(now: Date) -> String? {
        guard beacon.forgeries > 0, let last = beacon.lastForgery else { return nil }
        let ago = Int(max(0, now.timeIntervalSince(last)))
        let when = ago < 60 ? "\(ago) s ago" : "\(ago / 60) min ago"
        let question = beacon.forgedDuring.map { " during question \($0)" } ?? ""
        return "forged beacon: \(beacon.forgeries) STATE frame\(beacon.forgeries == 1 ? "" : "s") of this poll not sent by "
            + "this tally (someone with the join code), the last \(when)\(question): \(Self.forgeryEffects); "
            + "ask students to check that they see question \(self.question)"
    }

    // MARK: Acknowledgements

    /// `b` is now its voter's counted ballot, or was heard again as it: the beacon acknowledges it.
    @inline(__always)
    func beaconCounted(_ b: Ballot, at time: RadioInstant) {
        guard isOpen, b.question == question else { return }
        if beacon.counted(VoterKey(mode: b.mode, voterID: b.voterID), question: b.question, sequence: b.sequence,
                          at: time.nanoseconds) {
            beacon.turns?.wake()
        }
    }

    /// A ballot of this poll whose voter ID the tally has no key for (`unknownVoter`: a device not on the
    /// roster). Its device follows the beacon but is never acknowledged: the beacon counts it in the load.
    func beaconHeardUncountable(_ data: [UInt8]) {
        guard case .some = beacon.tally, isOpen else { return }
        let header = data.withUnsafeBytes { BallotCodec.header($0, length: data.count, voteID: joinCode.voteID) }
        guard case .success(let h) = header else { return }
        beacon.heardUncountable(voterID: h.voterID, question: h.question, at: radioNow.nanoseconds)
    }

    // MARK: Broadcasting

    /// The poll's counter clock: 10 ms ticks since the poll was created.
    func beaconTick(_ now: Date) -> UInt32 {
        let t = now.timeIntervalSince(pollCreatedAt) * 100
        return t.isFinite ? UInt32(clamping: Int64(max(0, min(t, Double(UInt32.max))))) : 0
    }

    /// What the STATE frame says about the current question.
    var beaconPhase: BeaconPhase {
        let s = spec
        let kind = QuestionKind(s) ?? .single
        var text: QuestionText?
        if kind == .numeric {
            // Version 4: a numeric question always has a text block, which carries its range and decimals.
            let r = s.numeric ?? NumericRange()
            text = QuestionText(title: s.title ?? "", numeric: NumericForm(lowest: r.lowest, highest: r.highest, decimals: r.decimals))
            if text?.block == nil { text = nil }
        } else if s.title != nil || !s.optionTexts.isEmpty {
            text = QuestionText(title: s.title ?? "", options: kind.hasOptions ? Array(s.optionTexts.prefix(s.options)) : [])
            if text?.block == nil { text = nil }
        }
        let info = BeaconQuestionInfo(number: question, kind: kind, options: UInt8(clamping: s.options), text: text)
        return isOpen ? .open(info) : .questionClosed(info)
    }

    /// Starts the beacon for a radio of `capabilities`.
    func startBeacon(_ capabilities: BroadcastCapabilities, turns: BeaconTurns) {
        beacon.tally = TallyBeacon(key: beacon.key, mode: options.roster == nil ? .anonymous : .roster, capabilities: capabilities,
                                   roomLimit: options.roster?.entries.count, signer: beacon.signer, deferSignatures: true)
        beacon.capabilities = capabilities
        beacon.turns = turns
        beacon.changed = true
    }

    /// A new poll replaced the current one: a new key, and the old poll's voters are told for
    /// ``beaconClosingTime`` (alongside the new poll's frames) that it closed.
    func renewBeacon(secret: PollSecret, signer: BeaconSigner?) {
        let old = beacon
        beacon = BeaconRuntime(secret: secret, signer: signer)
        beacon.forgeries = 0
        beacon.radio = old.radio
        beacon.off = old.off   // the radio still cannot broadcast while it scans
        if var t = old.tally, let caps = old.capabilities, let turns = old.turns {
            _ = t.payload(.closed, tick: beaconTick(clock.date), at: radioNow.nanoseconds)
            startBeacon(caps, turns: turns)
            if var f = t.lastState {
                if let s = old.signer, BeaconSigning.isDraft(f) { f = BeaconSigning.sign(frame: f, signer: s, voteID: old.key.voteID) }
                beacon.farewell = (f, clock.date.addingTimeInterval(PollClock.seconds(beaconClosingTime)))
            }
            beaconChanged()
        }
    }

    /// After the run: tells the voters that the poll closed for ``beaconClosingTime`` (or `closing`),
    /// then stops broadcasting. Call once the scan stopped and the votes are committed (`flush()`);
    /// it delays the end by `closing` at most. Nothing happens when the radio never broadcast.
    public nonisolated func endBeacon(closing: Duration = beaconClosingTime) async {
        guard let radio = await beacon.radio else { return }
        await closeBeacon(radio, closing: closing)
    }

    /// The payload to broadcast now (nil without a broadcasting radio).
    func beaconPayload() -> BroadcastPayload? {
        let now = clock.date
        let phase = beaconPhase, tick = beaconTick(now), ns = radioNow.nanoseconds
        // Mutated in place (a copy would duplicate its tables at every payload).
        guard var p = beacon.tally?.payload(phase, tick: tick, at: ns) else { return nil }
        beacon.changed = false
        if let s = beacon.tally?.lastState, !BeaconSigning.isDraft(s) { beacon.remember(s) }
        if let f = beacon.farewell {
            if now < f.until { p.frames.insert(f.frame, at: min(1, p.frames.count)) } else { beacon.farewell = nil }
        }
        return p
    }

    /// The closed poll's payload (STATE "closed" alone).
    func closedPayload() -> BroadcastPayload? {
        let tick = beaconTick(clock.date), ns = radioNow.nanoseconds
        guard let p = beacon.tally?.payload(.closed, tick: tick, at: ns) else { return nil }
        if let s = beacon.tally?.lastState, !BeaconSigning.isDraft(s) { beacon.remember(s) }
        return p
    }

    /// The STATE frames of `payload`, signed off the actor, are this tally's own: heard again by its
    /// scanner, they are known by their bytes, without a signature verification on this actor.
    func beaconSigned(_ payload: BroadcastPayload) {
        for f in payload.frames where f.count == BeaconFormat.signedStateLength
            && f[1] == BeaconFrameKind.state.typeByte(signed: true) {
            beacon.remember(f)
        }
    }

    /// The key pair that signs the payloads' frames, and the vote ID their signatures bind.
    var beaconSigning: (BeaconSigner, UInt16)? { beacon.signer.map { ($0, beacon.key.voteID) } }

    func beaconNeedsPayload() -> Bool { beacon.changed || beacon.tally?.hasPending == true }

    /// Whether a payload is due without news: acknowledgements in the rotation, a broadcast still fast
    /// that may slow down, or a STATE frame on the air for ``stateRefresh`` already.
    func beaconRefreshDue(lastInterval: Duration?, sinceLast: Duration) -> Bool {
        guard let t = beacon.tally else { return false }
        return t.composer.acknowledgementsInRotation > 0 || lastInterval == t.tuning.composer.fastInterval
            || sinceLast >= Self.stateRefresh
    }

    /// The longest a STATE frame stays on the air before it is sealed again with a new counter
    /// (docs/PROTOCOL.md §11.7): a voter that starts listening in a quiet spell must not take a frame
    /// sealed long ago as its newest, or the tally's next frames would look ahead of its clock.
    static let stateRefresh: Duration = .seconds(1)

    /// The radio took `frame` (a radio that reports it: BlueZ where bluetoothd confirms frame changes).
    func beaconTaken(_ frame: FrameTaken) {
        let tick = beaconTick(clock.date)
        beacon.tally?.taken(frame, tick: tick)
    }

    /// `payload` went out (`error` nil: handed to ``beaconSink`` too) or did not. A failure is logged
    /// once, with the back-off, and again only when the radio says something else; the first payload
    /// out after failures says so.
    func beaconSent(_ payload: BroadcastPayload, _ error: (any Error)?) {
        if error == nil { beaconSink?(payload) }
        if let error {
            let text = "\(error)"
            if beacon.lastError == nil {
                logger.warning("beacon: \(text); trying again after \(BeaconBackoff.first), then less and less often (every \(BeaconBackoff.longest) at most)")
            } else if beacon.lastError != text {
                logger.warning("beacon: \(text)")
            }
            beacon.lastError = text
        } else {
            if beacon.lastError != nil { logger.notice("beacon: on the air again") }
            beacon.payloads += 1
            beacon.lastError = nil
        }
    }

    /// The radio cannot broadcast while it scans, and the beacon was not asked for: it stays off, and says so.
    func beaconUnavailable() {
        beacon.off = "beacon off: this adapter cannot broadcast while it scans (a Bluetooth 4 controller); "
            + "students need clicker-vote --question N (or run the tally with --beacon to try anyway)"
        logger.notice("\(beacon.off ?? "")")
    }

    /// The phase changed (question opened, closed, next, new poll): the broadcasting task composes now.
    func beaconChanged() {
        beacon.changed = true
        beacon.turns?.wake()
    }

    /// Runs the beacon on `radio` until cancelled: a payload at the start, on every change of phase,
    /// when ballots were counted, every `refresh` while acknowledgements rotate or the broadcast is
    /// fast, and at least every ``stateRefresh``; at most one payload per `gap`.
    /// While the radio refuses payloads, the next try waits for ``BeaconBackoff`` (news that comes
    /// meanwhile goes out with it): a radio that cannot broadcast costs the actor that takes the reports
    /// a payload every few seconds, not four a second. Every wait is on the poll's ``clock``, through
    /// ``beaconTurns``, so that a test sees when a turn is over (``beaconSettled()``).
    nonisolated func runBeacon(_ radio: any BroadcasterTransport, gap: Duration = .milliseconds(100),
                               refresh: Duration = .milliseconds(250)) async {
        let turns = beaconTurns
        defer { turns.end() }
        let caps = (try? await radio.broadcastCapabilities()) ?? .legacy
        if !caps.whileScanning, await options.beacon == .whenPossible {
            await beaconUnavailable()
            return
        }
        await startBeacon(caps, turns: turns)
        // What the radio reports it put on the air places the STATE frames (nothing on radios that keep
        // their stated frame time).
        let taking = Task { [weak self] in
            for await frame in radio.framesTaken() { await self?.beaconTaken(frame) }
        }
        defer { taking.cancel() }
        var tick = clock.now.advanced(by: refresh)
        var last: PollClock.Instant?
        var lastInterval: Duration?
        var backoff = BeaconBackoff()
        while !Task.isCancelled {
            // News, or the next refresh tick (ticks missed while a turn took long are skipped).
            if await !turns.wait(until: tick, wakeable: true) {
                while tick <= clock.now { tick = tick.advanced(by: refresh) }
            }
            if Task.isCancelled { break }
            if let l = last, clock.now < l.advanced(by: backoff.delay ?? gap) {
                _ = await turns.wait(until: l.advanced(by: backoff.delay ?? gap), wakeable: false)
                if Task.isCancelled { break }
            }
            let refreshing = await beaconRefreshDue(lastInterval: lastInterval, sinceLast: last.map { $0.duration(to: clock.now) } ?? .zero)
            guard await beaconNeedsPayload() || refreshing || last == nil || backoff.delay != nil,
                  var payload = await beaconPayload() else { continue }
            // Signed here, off the actor that takes the reports.
            if let s = await beaconSigning {
                BeaconSigning.sign(&payload, signer: s.0, voteID: s.1)
                await beaconSigned(payload)
            }
            var failure: (any Error)?
            do { try await radio.broadcast(payload) } catch { failure = error }
            await beaconSent(payload, failure)
            if failure != nil { backoff.failed() } else { backoff.succeeded() }
            last = clock.now
            lastInterval = payload.interval
        }
    }

    /// Returns once the beacon loop waits on the poll's clock with nothing due at its current instant
    /// (or does not run): a test that moves the clock lets the beacon act first (``BeaconTurns``).
    nonisolated func beaconSettled() async { await beaconTurns.settled() }

    /// Tells voters for `closing` that the poll closed, then stops broadcasting. Called once the scan
    /// has stopped and the votes are committed: it delays the end of the run by `closing` at most,
    /// whether or not the calling task is cancelled.
    nonisolated func closeBeacon(_ radio: any BroadcasterTransport, closing: Duration) async {
        guard var draft = await closedPayload() else { return }
        if let s = await beaconSigning {
            BeaconSigning.sign(&draft, signer: s.0, voteID: s.1)
            await beaconSigned(draft)
        }
        let payload = draft, clock = clock
        await beaconSink?(payload)
        // Bounded whatever the radio does: a radio that hangs costs `closing` plus a second, no more.
        let sent = await within(closing + .seconds(1)) {
            do { try await radio.broadcast(payload) } catch { return false }
            try? await clock.sleep(for: closing)
            return true
        }
        if sent != true { logger.notice("beacon: the closing payload did not go out") }
        _ = await within(.seconds(1)) { try? await radio.stopBroadcasting(); return true }
        await beaconSink?(nil)
    }

    /// The result of `work`, or nil when it takes longer than `limit` (it then goes on detached, and
    /// its result is dropped). Waits for neither longer than `limit`, cancelled or not.
    nonisolated func within(_ limit: Duration, _ work: @escaping @Sendable () async -> Bool) async -> Bool? {
        let once = ResumeOnce(), clock = clock
        return await withCheckedContinuation { (c: CheckedContinuation<Bool?, Never>) in
            Task.detached { let r = await work(); if once.claim() { c.resume(returning: r) } }
            Task.detached { try? await clock.sleep(for: limit); if once.claim() { c.resume(returning: nil) } }
        }
    }
}

/// Lets exactly one of several racers resume a continuation.
final class ResumeOnce: Sendable {
    private let claimed = Mutex(false)
    /// True for the first caller only.
    func claim() -> Bool { claimed.withLock { was in defer { was = true }; return !was } }
}
