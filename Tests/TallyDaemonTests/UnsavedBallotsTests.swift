import ClickerStore
import Foundation
@testable import TallyDaemon
import XCTest

/// While the store fails, the ballots kept for the retry are one per voter and question (the
/// highest sequence, GATT-verified preferred), not one per ballot accepted during the outage.
final class UnsavedBallotsTests: XCTestCase {
    func record(_ voter: UInt8, question: Int, sequence: UInt32, verified: Bool = false) -> BallotRecord {
        BallotRecord(poll: 1, question: question, voter: Data([0, 0, 0, 0, voter]), answer: .choice(UInt8(sequence % 4)),
                     sequence: sequence, address: "C0:00:00:00:00:01", firstHeard: Date(), lastHeard: Date(),
                     gattVerified: verified)
    }

    func testAnOutageKeepsEachVotersLatestBallotOnly() {
        var all: [BallotRecord] = []
        for seq in 1...200 as ClosedRange<UInt32> {
            for v in 0..<10 as Range<UInt8> { all.append(record(v, question: 1 + Int(v % 2), sequence: seq)) }
        }
        all.append(record(3, question: 2, sequence: 200, verified: true))   // same sequence, now verified
        all.append(record(4, question: 1, sequence: 7))                      // a late straggler
        let kept = PollController.latestPerVoter(all)
        XCTAssertEqual(kept.count, 10)
        XCTAssertTrue(kept.allSatisfy { $0.sequence == 200 }, "each voter's highest sequence is kept")
        XCTAssertEqual(kept.first { $0.voter.last == 3 }?.gattVerified, true, "the verified copy wins a tie")
        XCTAssertEqual(Set(kept.map { [$0.voter.last ?? 0, UInt8($0.question)] }).count, 10)
    }
}
