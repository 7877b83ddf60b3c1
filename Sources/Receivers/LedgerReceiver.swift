import ClickerLedger
import ClickerTally
import ClickerTransport
import ClickerWire
import PrivateFiles

/// A receiver: what one central hears, counted (``ReceiverCount``) and written to the shared ledger
/// through a local journal (``LedgerShipper``, on a thread of its own). It learns its poll from the
/// ledger, by its receiver token (the role of its database URL), and the poll's keys from the join
/// code; the questions it counts are those the ledger has registered for the poll, looked up again
/// as the writer runs.
public actor LedgerReceiver {
    var count: ReceiverCount
    let shipper: LedgerShipper
    /// The poll, as the ledger named it for this receiver's token.
    public nonisolated let poll: ReceiverPoll
    /// Ballots handed to the writer (counted changes of a voter's ballot).
    public private(set) var ballotsCounted = 0

    /// Joins the poll of the receiver token in `url`: reads the poll and its questions (on a worker
    /// thread, off the cooperative pool), opens the journal at `journalPath`, and starts the writer.
    /// `secret` is derived from the poll's join code (a join code of another poll is refused).
    /// `radioEpoch`: the wall time, in microseconds since the Unix epoch, of the radio's instant zero.
    ///
    /// A ledger that does not answer is waited for: asked again after `retryInterval` on `clock`,
    /// then twice as long each time up to 10 s, with `waiting` told each time. The receiver counts
    /// nothing meanwhile; a student's voter goes on sending until a beacon says "counted". A refusal
    /// (token expired, poll closed, schema) throws at once, as does cancellation.
    public static func join(url: String, secret: PollSecret, journalPath: String, radioEpoch: Int64,
                            clock: some Clock<Duration> = ContinuousClock(), retryInterval: Duration = .seconds(1),
                            flood: FloodPolicy = FloodPolicy(),
                            waiting: @Sendable (LedgerError) -> Void = { _ in }) async throws -> LedgerReceiver {
        let worker = BlockingWorker(label: "clicker-receiver-join")
        var pause = retryInterval
        var joined: (ReceiverPoll, [QuestionSpec], Set<UInt8>)?
        while joined == nil {
            do {
                joined = try await worker.run { () throws -> (ReceiverPoll, [QuestionSpec], Set<UInt8>) in
                    let ledger = try BallotLedger(url: url, migrate: false)
                    let poll = try ledger.receiverPoll()
                    return (poll, try ledger.questions(poll: poll.poll), try ledger.closedQuestions(poll: poll.poll))
                }
            } catch let e as LedgerError where e.isUnreachable {
                waiting(e)
                try await clock.sleep(for: pause)
                pause = min(pause * 2, max(retryInterval, .seconds(10)))
            } catch let e as LedgerError {
                throw ReceiverError.ledger(e)
            }
        }
        guard let (poll, questions, closed) = joined else { throw CancellationError() }
        let journal = try await worker.run { try ReceiverJournal(path: journalPath) }
        var count = try ReceiverCount(poll: poll, secret: secret, questions: questions, radioEpoch: radioEpoch, flood: flood)
        count.close(closed)
        let shipper = try LedgerShipper(journal: journal, poll: poll.poll, connect: { try BallotLedger(url: url, migrate: false) },
                                        clock: ElapsedClock(clock), retryInterval: retryInterval)
        return LedgerReceiver(count: count, shipper: shipper, poll: poll)
    }

    init(count: ReceiverCount, shipper: LedgerShipper, poll: ReceiverPoll) {
        self.count = count
        self.shipper = shipper
        self.poll = poll
    }

    /// Consumes `central` until it ends or the task is cancelled: one actor turn per batch the radio
    /// delivers, the ballots it changed handed to the writer together.
    public func run(central: any CentralTransport) async throws {
        for try await batch in central.advertisementBatches(companyID: BallotFormat.companyID) {
            take(batch)
        }
    }

    /// Counts reports (what ``run(central:)`` does with each batch).
    public func take(_ reports: some Sequence<AdvertisementReport>) {
        learnQuestions()
        var out: [LedgerBallot] = []
        for r in reports {
            if let b = count.ingest(r) { out.append(b) }
        }
        ballotsCounted += out.count
        shipper.submit(out)
    }

    /// Opens the questions the writer last found registered, and closes those it found closed.
    func learnQuestions() {
        let status = shipper.status
        count.open(status.questions)
        count.close(status.closedQuestions)
    }

    /// Has the writer journal what was counted so far and ship what the ledger takes (reconnecting if
    /// its retry is due on the receiver's clock); returns its status after that pass.
    @discardableResult
    public func sync() async -> ShipperStatus {
        let status = await shipper.sync()
        learnQuestions()
        return status
    }

    /// Ends the writer after a last pass; returns its final status.
    public func finish() async -> ShipperStatus { await shipper.finish() }

    /// The receiver's counts, as its own pipeline has them (what it heard, not the ledger's).
    public var pipeline: IngestPipeline { count.pipeline }
}
