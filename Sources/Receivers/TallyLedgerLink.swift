import ClickerLedger
import ClickerTally
import ClickerTransport
import ClickerWire
import Logging
import PrivateFiles
import TallyDaemon

/// The instructor's tally in a poll that receivers count into the shared ledger (docs/LEDGER.md): one
/// poll, every receiver's ballots counted once. The link registers the poll and each question the
/// tally opens; hands every ballot the tally's own radio gets counted to a writer that journals and
/// ships it like a receiver's (``LedgerShipper``); and counts the ballots the ledger has from the
/// others in the tally (``PollController/countShared(_:)``), which then shows, saves, exports and
/// acknowledges them like ballots it heard; and writes what the tally's radio broadcasts to the ledger
/// (``BeaconPublisher``), for the receivers to broadcast too (``BeaconRelay``).
public final class TallyLedgerLink: Sendable {
    public let poll: Int64
    let url: String
    let controller: PollController
    let registration: LedgerRegistration
    let shipper: LedgerShipper
    let follower: LedgerFollower
    let beacon: BeaconPublisher

    /// Registers `controller`'s poll as `poll` in the ledger at `url` (the instructor's role: the
    /// schema is migrated if it is behind), opens the journal at `journalPath` and starts the writer
    /// and the follower. `radioEpoch`: the wall time, in microseconds since the Unix epoch, of the
    /// tally's radio instant zero (a ballot's `heardAt` in the ledger).
    ///
    /// A ledger that refuses (credentials, another vote ID, policy or question definition) throws
    /// here: the instructor fixes it before the lecture. One that does not answer does not: the tally
    /// counts into its journal, and the writer registers the poll and ships when the ledger is back
    /// (`logger` says so).
    public static func start(url: String, poll: Int64, controller: PollController, journalPath: String, radioEpoch: Int64,
                             retryInterval: Duration = .seconds(1), logger: Logger = Logger(label: "clicker.ledger")) async throws -> TallyLedgerLink {
        let (voteID, policy, spec) = (await controller.joinCode.voteID, await controller.options.policy, await controller.spec)
        // Receivers hold no roster: they could not tell a student's ballot from a forged one.
        guard await controller.options.roster == nil else { throw ReceiverError.rosterPoll }
        let registration = LedgerRegistration(poll: poll, voteID: voteID, policy: policy, first: spec)
        // libpq and SQLite block: off the cooperative pool.
        let (journal, away) = try await BlockingWorker(label: "clicker-ledger-register").run { () throws -> (ReceiverJournal, LedgerError?) in
            var away: LedgerError?
            do {
                try registration.register(on: BallotLedger(url: url))
            } catch let e as LedgerError where e.isUnreachable {
                away = e
            } catch let e as LedgerError { throw ReceiverError.ledger(e) }
            return (try ReceiverJournal(path: journalPath), away)
        }
        if let away {
            logger.warning("the ledger does not answer (\(away)); counting into the journal \(journalPath) until it does, then registering poll \(poll) and shipping")
        }
        let shipper = try LedgerShipper(journal: journal, poll: poll, connect: { try BallotLedger(url: url) },
                                        prepare: { try registration.register(on: $0) },
                                        clock: ElapsedClock(controller.clock), retryInterval: retryInterval)
        guard let follower = LedgerFollower(url: url, poll: poll, ballots: true, retryInterval: retryInterval),
              let beacon = BeaconPublisher(poll: poll, retryInterval: retryInterval, connect: { try BallotLedger(url: url) }) else {
            throw ReceiverError.threadUnavailable
        }
        // What the tally's radio broadcasts, for the receivers to broadcast too.
        await controller.shareBeacon { beacon.submit($0) }
        await controller.shareCounted { shared in
            shipper.submit([LedgerBallot(poll: poll, question: shared.question, voter: shared.voter, sequence: shared.sequence,
                                         answer: shared.answer, verified: shared.verified,
                                         heardAt: radioEpoch + Int64(shared.heard.nanoseconds / 1000), address: shared.address)])
        }
        return TallyLedgerLink(poll: poll, url: url, controller: controller, registration: registration, shipper: shipper, follower: follower,
                               beacon: beacon)
    }

    init(poll: Int64, url: String, controller: PollController, registration: LedgerRegistration, shipper: LedgerShipper,
         follower: LedgerFollower, beacon: BeaconPublisher) {
        self.poll = poll
        self.url = url
        self.controller = controller
        self.registration = registration
        self.shipper = shipper
        self.follower = follower
        self.beacon = beacon
    }

    /// Runs until cancelled: counts what the follower reads, registers each question the tally opens,
    /// and once every `interval` of the poll's clock has the writer retry the ledger if it is due;
    /// logs when the ledger stops or starts taking writes, or cannot be read.
    public func run(interval: Duration = .seconds(1), logger: Logger) async {
        let controller = self.controller, follower = self.follower
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var lastError: String?
                for await reading in follower.readings {
                    if reading.error != lastError {
                        if let e = reading.error { logger.warning("the ledger cannot be read (\(e)); receivers' ballots wait") }
                        else if lastError != nil { logger.notice("the ledger can be read again") }
                        lastError = reading.error
                    }
                    await self.count(reading.changed)
                }
            }
            group.addTask { await self.followQuestions() }
            group.addTask {
                await keepShipping(every: interval, on: controller.clock, logger: logger) { await self.ship() }
            }
            // Each child ends when the run is cancelled; one that ends first ends the others.
            await group.next()
            group.cancelAll()
        }
    }

    /// Counts ballots the ledger has in the tally; returns how many changed its counts. Anonymous
    /// ballots only: a roster ballot in the ledger was not written by a receiver (receivers count
    /// none), and its mode would make it verified here.
    @discardableResult
    func count(_ ballots: [LedgerBallot]) async -> Int {
        let anonymous = ballots.filter { $0.voter.mode == .anonymous }
        guard !anonymous.isEmpty else { return 0 }
        return await controller.countShared(anonymous.map {
            SharedBallot(question: $0.question, voter: $0.voter, sequence: $0.sequence, answer: $0.answer,
                         verified: $0.verified, address: $0.address)
        })
    }

    /// Registers each question as the tally opens it, so that receivers count it too (a writer's
    /// pass registers it at once, or when the ledger is back), and closes it in the ledger when the
    /// tally closes it, so that receivers stop (``LedgerRegistration``).
    func followQuestions() async {
        var open: Set<UInt8> = []
        // The questions before the current one are closed here (a resumed poll, or one started past
        // them): closed in the ledger too, if it has them.
        for q in 0..<(await controller.question) { registration.requestClose(q) }
        // Subscribed before the first look: a question opened in between is seen by the look or the next notice.
        var changes = controller.changeFeed.subscribe().makeAsyncIterator()
        repeat {
            let (q, isOpen, spec) = (await controller.question, await controller.isOpen, await controller.spec)
            var changed = registration.add(spec)
            for closed in open where !(closed == q && isOpen) {
                open.remove(closed)
                registration.requestClose(closed)
                changed = true
            }
            if isOpen { open.insert(q) }
            if changed { _ = await ship() }
        } while await changes.next() != nil
    }

    /// A pass of the writer; when it leaves the journal empty, the close requests made before it are
    /// released, and a second pass closes those questions in the ledger.
    func ship() async -> ShipperStatus {
        let closing = registration.closing
        let status = await shipper.sync()
        guard !closing.isEmpty, status.journaled == 0, status.databaseError == nil else { return status }
        registration.release(closing)
        return await shipper.sync()
    }

    /// Stops following, ships what is left, ends the writer, and reads the poll's ballots from the
    /// ledger once more: the final results hold every ballot the ledger committed before the stop,
    /// also one the follower had not handed over yet. Returns the writer's final status, and how many
    /// ballots that last read changed (nil when the ledger could not be read).
    public func finish() async -> (status: ShipperStatus, caughtUp: Int?) {
        await controller.shareCounted(with: nil)
        await controller.shareBeacon(with: nil)
        await beacon.finish()
        await follower.stop()
        let status = await shipper.finish()
        // A ledger that did not answer the writer is not waited on again.
        guard status.databaseError == nil else { return (status, nil) }
        let (url, poll) = (self.url, self.poll)
        // libpq blocks: off the cooperative pool.
        let all = try? await BlockingWorker(label: "clicker-ledger-last-read").run { () throws -> [LedgerBallot] in
            try BallotLedger(url: url, migrate: false).changes(poll: poll, since: nil).ballots
        }
        guard let all else { return (status, nil) }
        return (status, await count(all))
    }
}
