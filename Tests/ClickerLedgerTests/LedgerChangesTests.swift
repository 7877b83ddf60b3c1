import ClickerLedger
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import PostgresClient
import Synchronization
import XCTest

/// Reading what changed in the ledger since a snapshot (`BallotLedger.changes(poll:since:)`): exact
/// when writers commit in another order than they began, and under concurrent writers.
final class LedgerChangesTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    func ballot(_ voter: UInt32, sequence: UInt16 = 1, answer: UInt8 = 0, at t: Int64 = 1) -> LedgerBallot {
        LedgerBallot(poll: 5, question: 1, voter: VoterKey(mode: .anonymous, voterID: voter), sequence: sequence,
                     answer: .choice(answer), verified: false, heardAt: t, address: DeviceAddress(rawValue: UInt64(voter)))
    }

    /// A transaction that began first and commits last is read after it commits, though a later one
    /// was read before it: the case that a counter or sequence column would miss.
    func testAWriterThatCommitsAfterALaterOneIsNotMissed() throws {
        let url = try SharedServer.database()
        let reader = try BallotLedger(url: url)
        try reader.register(poll: 5, voteID: 7, policy: .latestWins, questions: [1])
        let slowConnection = try PostgresConnection(url: url)
        let slow = try BallotLedger(connection: slowConnection, migrate: false)
        let quick = try BallotLedger(url: url, migrate: false)

        try slowConnection.execute("BEGIN")
        try slow.write(ballot(1))                        // inside the open transaction: not committed
        try quick.write(ballot(2))                       // committed at once
        let (first, s1) = try reader.changes(poll: 5, since: nil)
        XCTAssertEqual(first.map(\.voter.voterID), [2])
        try slowConnection.execute("COMMIT")
        // The slow writer's transaction began first: its number is the lower.
        let order = try PostgresConnection(url: url).execute("SELECT voter_id FROM ballots WHERE poll_id = 5 ORDER BY written_by").rows.map { try $0.int(0) }
        XCTAssertEqual(order, [1, 2])
        let (second, s2) = try reader.changes(poll: 5, since: s1)
        XCTAssertEqual(second, [ballot(1)])
        XCTAssertEqual(try reader.changes(poll: 5, since: s2).ballots, [], "nothing twice")

        // A change is read as the ballot is now; a ballot that ranks below the counted one changes nothing.
        try quick.write(ballot(2, sequence: 2, answer: 3, at: 5))
        try quick.write(ballot(1, sequence: 1, answer: 2, at: 9))
        let (third, s3) = try reader.changes(poll: 5, since: s2)
        XCTAssertEqual(third, [ballot(2, sequence: 2, answer: 3, at: 5)])
        XCTAssertEqual(try reader.changes(poll: 5, since: s3).ballots, [])
    }

    /// Four writers write 2,000 ballots of 300 voters in batches while a reader asks for the changes
    /// again and again: the ballots it read, each taken as its voter's latest, are the ledger's counted
    /// ballots at the end, with nothing missed.
    func testAReaderFollowingFourWritersEndsWithEveryCountedBallot() throws {
        let url = try SharedServer.database()
        let reader = try BallotLedger(url: url)
        try reader.register(poll: 5, voteID: 7, policy: .latestWins, questions: [1])
        var rng = SplitMix64(seed: 5)
        let all = (0..<2000).map { _ in
            ballot(UInt32.random(in: 1...300, using: &rng), sequence: UInt16.random(in: 1...20, using: &rng),
                   answer: UInt8.random(in: 0...3, using: &rng), at: Int64.random(in: 1...1_000_000, using: &rng))
        }
        let done = Atomic(0)
        let failure = Mutex<String?>(nil)
        // The writers on threads of their own; the reader here, reading until they are done, then once more.
        for k in 0..<4 {
            Thread.detachNewThread {
                defer { done.add(1, ordering: .releasing) }
                do {
                    let writer = try BallotLedger(url: url, migrate: false)
                    let mine = all.enumerated().filter { $0.offset % 4 == k }.map(\.element)
                    for start in stride(from: 0, to: mine.count, by: 25) {
                        try writer.write(batch: Array(mine[start..<min(start + 25, mine.count)]))
                    }
                } catch {
                    failure.withLock { $0 = "\(error)" }
                }
            }
        }
        var rounds: [[LedgerBallot]] = []
        var seen: LedgerSnapshot?
        while done.load(ordering: .acquiring) < 4 {
            let (changed, next) = try reader.changes(poll: 5, since: seen)
            seen = next
            rounds.append(changed)
        }
        rounds.append(try reader.changes(poll: 5, since: seen).ballots)
        XCTAssertNil(failure.withLock { $0 })
        var latest: [VoterKey: LedgerBallot] = [:]
        for round in rounds { for b in round { latest[b.voter] = b } }
        let counted = try reader.counted(poll: 5, question: 1)
        XCTAssertEqual(counted.count, Set(all.map(\.voter)).count)
        XCTAssertEqual(Set(latest.keys), Set(counted.keys))
        for (voter, c) in counted {
            XCTAssertEqual(latest[voter]?.sequence, c.sequence, "\(voter)")
            XCTAssertEqual(latest[voter]?.answer, c.answer, "\(voter)")
        }
        XCTAssertGreaterThan(rounds.filter { !$0.isEmpty }.count, 2, "the reader read while the writers wrote")
    }
}
