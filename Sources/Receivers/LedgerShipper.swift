import ClickerLedger
import ClickerTally
import ClickerTransport
import Dispatch
import OSThreads
import Synchronization

/// What the receiver's writer has done so far.
public struct ShipperStatus: Sendable, Equatable {
    /// Ballots the ledger committed.
    public var shipped = 0
    /// Ballots in the journal, not yet committed by the ledger.
    public var journaled = 0
    /// Why the ledger takes no writes now (unreachable, refused); nil while it does.
    public var databaseError: String?
    /// Why the journal failed last, if it did: a refused append leaves the ballots in memory, to be
    /// appended again on the next pass.
    public var journalError: String?
    /// Connections to the ledger opened (the first, and one per reconnection).
    public var connections = 0
    /// Journal rows that did not decode (never written by this build), skipped.
    public var undecodable = 0
    /// The questions the ledger had registered for the poll at the last look.
    public var questions: [QuestionSpec] = []
    /// Those of them the ledger had closed at the last look.
    public var closedQuestions: Set<UInt8> = []

    public init() {}
}

/// The receiver's writer, on two OS threads of its own (its SQLite and libpq calls block): the
/// journal's thread appends the ballots handed to it to the journal; the ledger's thread ships the
/// journal to the ledger in batches of at most `batchLimit`, one transaction each. Two threads, so
/// that a ledger that does not answer (a connection that hangs, as on a network that drops its
/// packets) never keeps counted ballots out of the journal: a receiver killed then loses none.
/// Ballots that arrive while a batch is written go together in a later one (group commit). When the
/// ledger fails, the connection is dropped and a new one is tried on a pass at least `retryInterval`
/// later on `clock`; meanwhile ballots go to the journal only.
///
/// A pass runs when ballots are handed over (``submit(_:)``), when ``sync()`` asks for one, and at
/// the end (``finish()``). Nothing here sleeps: whoever wants a retry without new ballots calls
/// ``sync()`` (the receiver does so on its clock).
final class LedgerShipper: Sendable {
    /// What the receiver and the writer's threads share.
    final class Channel: Sendable {
        struct State {
            /// Handed over, not yet in the journal.
            var pending: [LedgerBallot] = []
            /// Journal passes begun. A waiter notes the count when it comes, and only a pass begun
            /// after that answers it: one under way took its ballots before the waiter's were handed over.
            var passes = 0
            /// Syncs waiting for the journal's pass, then (moved by it) for the ledger's.
            var journalWaiters: [(CheckedContinuation<ShipperStatus, Never>, after: Int)] = []
            var shipWaiters: [CheckedContinuation<ShipperStatus, Never>] = []
            /// Journal-only waits (``journaled()``): resumed after the journal's pass.
            var appendWaiters: [(CheckedContinuation<Void, Never>, after: Int)] = []
            var stopping = false
            /// The journal's thread has ended: the ledger's thread runs its last pass.
            var journalDone = false
            /// Both threads have ended: a sync is answered at once.
            var finished = false
            var status = ShipperStatus()
        }

        let state = Mutex(State())
        /// One signal per hand-over, sync or finish: the journal's thread sleeps while it is zero.
        let journalWake = DispatchSemaphore(value: 0)
        /// One signal per journal pass: the ledger's thread sleeps while it is zero.
        let shipWake = DispatchSemaphore(value: 0)
    }

    private let channel = Channel()
    private let shipThread: ThreadHandle

    /// Starts the writer's threads. `connect` opens the ledger (on the ledger's thread); `prepare`, if
    /// given, runs on the ledger before each pass ships (the linked tally registers its questions
    /// there), and its failure counts as the ledger's; `poll` is the poll whose questions it looks up
    /// after each connection and at most once per `retryInterval`.
    init(journal: ReceiverJournal, poll: Int64, connect: @escaping @Sendable () throws -> BallotLedger,
         prepare: (@Sendable (BallotLedger) throws -> Void)? = nil, clock: ElapsedClock,
         retryInterval: Duration, batchLimit: Int = 1000) throws(ReceiverError) {
        let channel = self.channel
        guard let shipThread = OSThread.start(name: "clicker-ledger", {
            var writer = Writer(journal: journal, poll: poll, connect: connect, prepare: prepare, clock: clock,
                                retryInterval: retryInterval, batchLimit: max(1, batchLimit))
            while true {
                channel.shipWake.wait()
                let (waiters, last, status) = channel.state.withLock { s in
                    defer { s.shipWaiters = [] }
                    return (s.shipWaiters, s.journalDone, s.status)
                }
                let after = writer.ship(status: status)
                let (late, now) = channel.state.withLock { s in
                    s.status.merge(shipping: after)
                    guard last else { return ([CheckedContinuation<ShipperStatus, Never>](), s.status) }
                    s.finished = true
                    defer { s.shipWaiters = []; s.journalWaiters = [] }
                    return (s.shipWaiters + s.journalWaiters.map(\.0), s.status)
                }
                for w in waiters + late { w.resume(returning: now) }
                if last { return }
            }
        }) else { throw .threadUnavailable }
        guard OSThread.start(name: "clicker-journal", {
            while true {
                channel.journalWake.wait()
                let (batch, stopping, pass) = channel.state.withLock { s in
                    defer { s.pending = [] }
                    s.passes += 1
                    return (s.pending, s.stopping, s.passes)
                }
                var refusal: String?
                if !batch.isEmpty {
                    do { try journal.append(batch) } catch { refusal = "\(error)" }
                }
                let flushed = channel.state.withLock { s in
                    // A batch the journal refused stays in memory, first in line for the next pass.
                    if refusal != nil { s.pending = batch + s.pending }
                    if !batch.isEmpty { s.status.journalError = refusal }
                    // Waiters that came during this pass wait for the next, which their signal brings.
                    let answered = { (after: Int) in after < pass || stopping }
                    s.shipWaiters += s.journalWaiters.filter { answered($0.after) }.map(\.0)
                    s.journalWaiters.removeAll { answered($0.after) }
                    s.journalDone = stopping
                    defer { s.appendWaiters.removeAll { answered($0.after) } }
                    return s.appendWaiters.filter { answered($0.after) }.map(\.0)
                }
                for w in flushed { w.resume() }
                channel.shipWake.signal()
                if stopping { return }
            }
        }) != nil else {
            channel.state.withLock { $0.journalDone = true }
            channel.shipWake.signal()
            throw .threadUnavailable
        }
        self.shipThread = shipThread
    }

    /// A receiver dropped without ``finish()``: the threads run a last pass and end.
    deinit {
        channel.state.withLock { $0.stopping = true }
        channel.journalWake.signal()
    }

    /// Hands ballots to the writer; they are journaled on its journal thread's next pass.
    func submit(_ ballots: [LedgerBallot]) {
        guard !ballots.isEmpty else { return }
        channel.state.withLock { $0.pending += ballots }
        channel.journalWake.signal()
    }

    /// Runs a pass (journaling what was handed over before, then retrying the ledger if a retry is
    /// due) and returns the status after it.
    func sync() async -> ShipperStatus {
        await withCheckedContinuation { c in
            let finished = channel.state.withLock { s in
                if !s.finished { s.journalWaiters.append((c, s.passes)) }
                return s.finished ? s.status : nil
            }
            if let finished { c.resume(returning: finished) } else { channel.journalWake.signal() }
        }
    }

    /// Returns once what was handed over before is in the journal (or the journal refused it),
    /// whatever the ledger's thread is doing.
    func journaled() async {
        await withCheckedContinuation { c in
            let done = channel.state.withLock { s in
                if !s.journalDone { s.appendWaiters.append((c, s.passes)) }
                return s.journalDone
            }
            if done { c.resume() } else { channel.journalWake.signal() }
        }
    }

    /// The status after the last pass.
    var status: ShipperStatus { channel.state.withLock { $0.status } }

    /// Runs a last pass and ends the threads; returns the final status.
    func finish() async -> ShipperStatus {
        channel.state.withLock { $0.stopping = true }
        channel.journalWake.signal()
        await shipThread.finished()
        return status
    }
}

extension ShipperStatus {
    /// Takes what the ledger's thread found in its pass. `journalError` is the journal's thread's
    /// (its last append) unless the ledger's pass found the journal failing too.
    mutating func merge(shipping after: ShipperStatus) {
        shipped = after.shipped
        journaled = after.journaled
        databaseError = after.databaseError
        connections = after.connections
        undecodable = after.undecodable
        questions = after.questions
        closedQuestions = after.closedQuestions
        if let e = after.journalError { journalError = e }
    }
}

/// The writer's state, owned by its thread (the ledger's connection is not `Sendable`).
private struct Writer {
    let journal: ReceiverJournal
    let poll: Int64
    let connect: @Sendable () throws -> BallotLedger
    let prepare: (@Sendable (BallotLedger) throws -> Void)?
    let clock: ElapsedClock
    let retryInterval: Duration
    let batchLimit: Int
    var ledger: BallotLedger?
    var nextConnect: ElapsedClock.Instant?
    var nextQuestions: ElapsedClock.Instant?

    init(journal: ReceiverJournal, poll: Int64, connect: @escaping @Sendable () throws -> BallotLedger,
         prepare: (@Sendable (BallotLedger) throws -> Void)?, clock: ElapsedClock, retryInterval: Duration, batchLimit: Int) {
        self.journal = journal
        self.poll = poll
        self.connect = connect
        self.prepare = prepare
        self.clock = clock
        self.retryInterval = retryInterval
        self.batchLimit = batchLimit
    }

    /// Ships the journal while the ledger takes it (connecting first when a retry is due), and looks
    /// the poll's questions up when that is due.
    mutating func ship(status: ShipperStatus) -> ShipperStatus {
        var status = status
        status.journalError = nil
        let now = clock.now
        if ledger == nil, nextConnect.map({ now >= $0 }) ?? true {
            do {
                ledger = try connect()
                status.connections += 1
                status.databaseError = nil
                nextQuestions = nil
            } catch {
                failed(error, at: now, &status)
            }
        }
        if let ledger, let prepare {
            do { try prepare(ledger) } catch { failed(error, at: now, &status) }
        }
        while let ledger {
            let oldest: (ballots: [LedgerBallot], through: Int64?, undecodable: Int)
            do { oldest = try journal.oldest(batchLimit) } catch { status.journalError = "\(error)"; break }
            guard let through = oldest.through else { break }
            do {
                if !oldest.ballots.isEmpty { try ledger.write(batch: oldest.ballots) }
            } catch {
                failed(error, at: now, &status)
                break
            }
            status.shipped += oldest.ballots.count
            status.undecodable += oldest.undecodable
            // Not deleted: shipped again on the next pass, which changes nothing in the ledger.
            do { try journal.shipped(through: through) } catch { status.journalError = "\(error)"; break }
        }
        if let ledger, nextQuestions.map({ now >= $0 }) ?? true {
            do {
                status.questions = try ledger.questions(poll: poll)
                status.closedQuestions = try ledger.closedQuestions(poll: poll)
                nextQuestions = now.advanced(by: retryInterval)
            } catch {
                failed(error, at: now, &status)
            }
        }
        status.journaled = (try? journal.count()) ?? status.journaled
        return status
    }

    /// The ledger failed: its connection is dropped and a new one tried `retryInterval` from now.
    mutating func failed(_ error: any Error, at now: ElapsedClock.Instant, _ status: inout ShipperStatus) {
        ledger = nil
        nextConnect = now.advanced(by: retryInterval)
        status.databaseError = "\(error)"
    }
}
