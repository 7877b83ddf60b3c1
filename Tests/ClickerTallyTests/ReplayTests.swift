import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

/// SECURITY.md: replayed and rolled-back ballots are rejected and counted by reason.
final class ReplayTests: XCTestCase {
    func testBallotFromAnEarlierPollWithTheSameVoteIDIsRejected() throws {
        let earlier = TestPoll("4821-AAAAA-BBBBB")
        let now = TestPoll("4821-K7QXM-3PF9A")
        var p = IngestPipeline(secret: pollSecret(now.code))
        p.tally.open(.choice(1))
        XCTAssertEqual(p.ingest(earlier.report(voter: 1, answer: .choice(0))).outcome, .rejected(.badTag))
        let otherVoteID = TestPoll("5000-K7QXM-3PF9A")
        XCTAssertEqual(p.ingest(otherVoteID.report(voter: 1, answer: .choice(0))).outcome, .rejected(.otherVoteID))
        XCTAssertEqual(p.tally.rejections, [.badTag: 1, .otherVoteID: 1])
        XCTAssertEqual(p.tally.results(question: 1)?.voters, 0)
    }

    func testBallotFromAnEarlierQuestionIsRejected() {
        let poll = TestPoll()
        var p = IngestPipeline(secret: pollSecret(poll.code))
        p.tally.open(.choice(1))
        let q1 = poll.report(voter: 1, question: 1, sequence: 1, answer: .choice(2))
        XCTAssertEqual(p.ingest(q1).outcome, .new)
        p.tally.close(question: 1)
        p.tally.open(.choice(2))
        // The recorded question-1 ballot replayed now, and a rewritten one claiming question 2.
        XCTAssertEqual(p.ingest(q1).outcome, .rejected(.otherQuestion))
        var moved = q1
        moved.data[4] = 2
        XCTAssertEqual(p.ingest(moved).outcome, .rejected(.badTag))
        XCTAssertEqual(p.tally.rejections, [.otherQuestion: 1, .badTag: 1])
        XCTAssertEqual(p.tally.results(question: 2)?.voters, 0)
        XCTAssertEqual(p.tally.results(question: 1)?.voters, 1)
    }

    func testSequenceGoingBackwardsIsRejected() {
        let poll = TestPoll()
        var p = IngestPipeline(secret: pollSecret(poll.code))
        p.tally.open(.choice(1))
        let old = poll.report(voter: 1, sequence: 1, answer: .choice(0), at: 0)
        XCTAssertEqual(p.ingest(old).outcome, .new)
        XCTAssertEqual(p.ingest(poll.report(voter: 1, sequence: 2, answer: .choice(1), at: 10)).outcome, .changed(from: .choice(0)))
        // Replaying the old ballot (even re-timestamped) does not roll the vote back.
        var replay = old
        replay.timestamp = .ms(20)
        XCTAssertEqual(p.ingest(replay).outcome, .rejected(.staleSequence))
        // Nor does rewriting its sequence number.
        var bumped = old
        bumped.data[10] = 9
        XCTAssertEqual(p.ingest(bumped).outcome, .rejected(.badTag))
        XCTAssertEqual(p.tally.results(question: 1)?.answers.values.first, .choice(1))
        XCTAssertEqual(p.tally.rejections, [.staleSequence: 1, .badTag: 1])
    }

    /// SECURITY.md: without the join code the answer cannot be read off the air: equal answers
    /// give unrelated ciphertexts, and a wrong secret does not even verify.
    func testCiphertextsDoNotRevealAnswers() {
        let poll = TestPoll()
        var seen = Set<[UInt8]>()
        for voter in UInt32(0)..<1000 {
            let r = poll.report(voter: voter, answer: .choice(0))
            seen.insert(Array(r.data[11..<14]))
            XCTAssertNotEqual(Array(r.data[11..<14]), [1, 0, 0])
        }
        XCTAssertGreaterThan(seen.count, 990)
        var ciphertexts = Set<[UInt8]>()
        for seq in UInt16(1)...200 { ciphertexts.insert(Array(poll.report(voter: 7, sequence: seq, answer: .choice(1)).data[11..<14])) }
        XCTAssertGreaterThan(ciphertexts.count, 195)
    }
}
