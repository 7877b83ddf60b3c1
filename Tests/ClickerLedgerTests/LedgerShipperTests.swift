import ClickerLedger
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Dispatch
import Foundation
import GRDB
@testable import Receivers
import XCTest

/// The receiver's writer journals what it is handed whatever its ledger connection does.
final class LedgerShipperTests: XCTestCase {
    struct Unreachable: Error {}

    /// The ledger's connection hangs (a network that drops every packet answers nothing, and libpq
    /// waits): the ballots handed over meanwhile are in the journal all the same, where a receiver
    /// started again after a kill finds them. (Found by Tests/ledger-faults: the journal used to be
    /// written by the thread that waited on the ledger, so a receiver killed during such a cut lost
    /// what it had counted since.)
    func testBallotsReachTheJournalWhileTheLedgersConnectionHangs() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/journal.sqlite"
        let gate = DispatchSemaphore(value: 0)
        let (entered, inConnect) = AsyncStream<Void>.makeStream()
        let shipper = try LedgerShipper(journal: ReceiverJournal(path: path), poll: 7, connect: {
            inConnect.yield()
            gate.wait()
            throw Unreachable()
        }, clock: ElapsedClock(TestClock()), retryInterval: .seconds(1))
        let ballots = (0..<50).map { (i: Int) -> LedgerBallot in
            let voter = VoterKey(mode: .anonymous, voterID: UInt32(1000 + i))
            return LedgerBallot(poll: 7, question: 1, voter: voter, sequence: 1, answer: .choice(UInt8(i % 4)), verified: false,
                                heardAt: Int64(i), address: DeviceAddress(rawValue: UInt64(i + 1)))
        }
        shipper.submit(Array(ballots[..<20]))
        var waiting = entered.makeAsyncIterator()
        _ = await waiting.next()   // the ledger's thread is inside its connection, which does not answer
        shipper.submit(Array(ballots[20...]))
        await shipper.journaled()
        XCTAssertEqual(try ReceiverJournal(path: path).count(), 50,
                       "every ballot handed over is in the journal (read as a receiver started again reads it)")
        XCTAssertEqual(shipper.status.shipped, 0)

        gate.signal()   // the connection fails at last
        let status = await shipper.finish()
        XCTAssertEqual(status.journaled, 50)
        XCTAssertEqual(status.shipped, 0)
        XCTAssertNotNil(status.databaseError)
        XCTAssertNil(status.journalError)
    }

    /// A wait is answered by a journal pass begun after it, never by one under way, which took its
    /// batch before the waiter's ballots were handed over: 300 ballots, each waited for while another
    /// task hands over ballots as fast as it can, each in the journal when its wait returns.
    func testAWaitIsAnsweredOnlyByAPassBegunAfterIt() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let journal = try ReceiverJournal(path: directory + "/journal.sqlite")
        let shipper = try LedgerShipper(journal: journal, poll: 7, connect: { throw Unreachable() },
                                        clock: ElapsedClock(TestClock()), retryInterval: .seconds(1))
        func ballot(_ voter: UInt32) -> LedgerBallot {
            LedgerBallot(poll: 7, question: 1, voter: VoterKey(mode: .anonymous, voterID: voter), sequence: 1, answer: .choice(0),
                         verified: false, heardAt: Int64(voter), address: DeviceAddress(rawValue: UInt64(voter)))
        }
        let others = Task.detached {
            var voter: UInt32 = 0
            while !Task.isCancelled && voter < 500_000 {
                shipper.submit((voter..<voter + 100).map(ballot))
                voter += 100
                await Task.yield()
            }
        }
        var late: [UInt32] = []
        for k in UInt32(0)..<300 {
            let voter = 1_000_000 + k
            shipper.submit([ballot(voter)])
            await shipper.journaled()
            let there = try await journal.queue.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM journal WHERE voter = ?", arguments: [Int64(voter)]) ?? 0
            }
            if there != 1 { late.append(k) }
        }
        others.cancel()
        await others.value
        XCTAssertEqual(late, [], "ballots not in the journal when their wait returned")
        _ = await shipper.finish()
    }
}
