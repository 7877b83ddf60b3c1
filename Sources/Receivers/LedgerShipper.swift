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

    public init() {}
}

/// The receiver's writer, on an OS thread of its own (its SQLite and libpq calls block): it appends
/// the ballots handed to it to the journal, then ships the journal to the ledger in batches of at
/// most `batchLimit`, one transaction each. Ballots that arrive while a batch is written wait for the
/// next pass and go together (group commit). When the ledger fails, the connection is dropped and a
/// new one is tried on a pass at least `retryInterval` later on `clock`; meanwhile ballots go to the
/// journal only.
///
/// A pass runs when ballots are handed over (``submit(_:)``), when ``sync()`` asks for one, and at
/// the end (``finish()``). Nothing here sleeps: whoever wants a retry without new ballots calls
/// ``sync()`` (the receiver does so on its clock).
final class LedgerShipper: Sendable {
    /// What the receiver and the writer's thread share.
    final class Channel: Sendable {
        struct State {
            var pending: [LedgerBallot] = []
            var waiters: [CheckedContinuation<ShipperStatus, Never>] = []
            var stopping = false
            /// The thread has ended: a sync is answered at once.
            var finished = false
            var status = ShipperStatus()
        }

        let state = Mutex(State())
        /// One signal per hand-over, sync or finish: the thread sleeps while it is zero.
        let wake = DispatchSemaphore(value: 0)
    }

    private let channel = Channel()
    private let thread: ThreadHandle

    /// Starts the writer's thread. `connect` opens the ledger (on that thread); `poll` is the poll
    /// whose questions it looks up after each connection and at most once per `retryInterval`.
    init(journal: ReceiverJournal, poll: Int64, connect: @escaping @Sendable () throws -> BallotLedger, clock: ElapsedClock,
         retryInterval: Duration, batchLimit: Int = 1000) throws(ReceiverError) {
        let channel = self.channel
        guard let thread = OSThread.start(name: "clicker-ledger", {
            var writer = Writer(journal: journal, poll: poll, connect: connect, clock: clock, retryInterval: retryInterval,
                                batchLimit: max(1, batchLimit))
            while true {
                channel.wake.wait()
                let (batch, waiters, stopping, status) = channel.state.withLock { s in
                    defer { s.pending = []; s.waiters = [] }
                    return (s.pending, s.waiters, s.stopping, s.status)
                }
                let (after, appended) = writer.pass(appending: batch, status: status)
                // A batch the journal refused stays in memory, first in line for the next pass.
                let leftOver = appended ? [] : batch
                channel.state.withLock { s in
                    s.pending = leftOver + s.pending
                    s.status = after
                }
                for w in waiters { w.resume(returning: after) }
                if stopping {
                    let late = channel.state.withLock { s in
                        s.finished = true
                        defer { s.waiters = [] }
                        return s.waiters
                    }
                    for w in late { w.resume(returning: after) }
                    return
                }
            }
        }) else { throw .threadUnavailable }
        self.thread = thread
    }

    /// A receiver dropped without ``finish()``: the thread runs a last pass and ends.
    deinit {
        channel.state.withLock { $0.stopping = true }
        channel.wake.signal()
    }

    /// Hands ballots to the writer; they are journaled on its next pass.
    func submit(_ ballots: [LedgerBallot]) {
        guard !ballots.isEmpty else { return }
        channel.state.withLock { $0.pending += ballots }
        channel.wake.signal()
    }

    /// Runs a pass (journaling what was handed over before, retrying the ledger if a retry is due) and
    /// returns the status after it.
    func sync() async -> ShipperStatus {
        await withCheckedContinuation { c in
            let finished = channel.state.withLock { s in
                if !s.finished { s.waiters.append(c) }
                return s.finished ? s.status : nil
            }
            if let finished { c.resume(returning: finished) } else { channel.wake.signal() }
        }
    }

    /// The status after the last pass.
    var status: ShipperStatus { channel.state.withLock { $0.status } }

    /// Runs a last pass and ends the thread; returns the final status.
    func finish() async -> ShipperStatus {
        channel.state.withLock { $0.stopping = true }
        channel.wake.signal()
        await thread.finished()
        return status
    }
}

/// The writer's state, owned by its thread (the ledger's connection is not `Sendable`).
private struct Writer {
    let journal: ReceiverJournal
    let poll: Int64
    let connect: @Sendable () throws -> BallotLedger
    let clock: ElapsedClock
    let retryInterval: Duration
    let batchLimit: Int
    var ledger: BallotLedger?
    var nextConnect: ElapsedClock.Instant?
    var nextQuestions: ElapsedClock.Instant?

    init(journal: ReceiverJournal, poll: Int64, connect: @escaping @Sendable () throws -> BallotLedger, clock: ElapsedClock,
         retryInterval: Duration, batchLimit: Int) {
        self.journal = journal
        self.poll = poll
        self.connect = connect
        self.clock = clock
        self.retryInterval = retryInterval
        self.batchLimit = batchLimit
    }

    /// Journals `batch`, then ships the journal while the ledger takes it; says whether `batch` is in
    /// the journal.
    mutating func pass(appending batch: [LedgerBallot], status: ShipperStatus) -> (ShipperStatus, appended: Bool) {
        var status = status
        var appended = true
        if !batch.isEmpty {
            do {
                try journal.append(batch)
                status.journalError = nil
            } catch {
                status.journalError = "\(error)"
                appended = false
            }
        }
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
                nextQuestions = now.advanced(by: retryInterval)
            } catch {
                failed(error, at: now, &status)
            }
        }
        status.journaled = (try? journal.count()) ?? status.journaled
        return (status, appended)
    }

    /// The ledger failed: its connection is dropped and a new one tried `retryInterval` from now.
    mutating func failed(_ error: any Error, at now: ElapsedClock.Instant, _ status: inout ShipperStatus) {
        ledger = nil
        nextConnect = now.advanced(by: retryInterval)
        status.databaseError = "\(error)"
    }
}
