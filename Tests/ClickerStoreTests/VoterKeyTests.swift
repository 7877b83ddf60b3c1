@testable import ClickerStore
import Foundation
import XCTest

/// Voter key bindings (trust on first use) are kept with the open poll and deleted when it closes.
final class VoterKeyTests: XCTestCase {
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    func testBindingsAreResumedKeepTheFirstKeyAndGoWithThePoll() throws {
        let dir = try makeTempDir(self)
        let store = try ClickerStore(path: dir + "/db.sqlite")
        let poll = try store.createPoll(voteID: Data([1, 2]), joinCode: "x", mode: .anonymous, at: t0)
        try store.openQuestion(poll: poll.id, number: 1, at: t0)
        let voter = Data([0, 0x0F, 0x67, 0xDF, 0xD0])
        let first = VoterKeyRecord(poll: poll.id, voter: voter, publicKey: Data(repeating: 0x11, count: 32))
        let ballot = BallotRecord(poll: poll.id, question: 1, voter: voter, answer: .choice(1), sequence: 3, address: "",
                                  firstHeard: t0, lastHeard: t0, gattVerified: true)
        try store.record([ballot], voterKeys: [first])
        // Another key for the same voter ID never replaces the bound one.
        try store.record([], voterKeys: [VoterKeyRecord(poll: poll.id, voter: voter, publicKey: Data(repeating: 0x66, count: 32))])
        XCTAssertEqual(try store.voterKeys(poll: poll.id), [first])

        let reopened = try ClickerStore(path: dir + "/db.sqlite")
        let resumed = try XCTUnwrap(try reopened.resume())
        XCTAssertEqual(resumed.voterKeys, [first])
        XCTAssertEqual(resumed.ballots.map(\.gattVerified), [true])

        try reopened.closePoll(poll.id, at: t0.addingTimeInterval(60))
        XCTAssertEqual(try reopened.voterKeys(poll: poll.id), [], "bindings end with the poll")
    }
}
