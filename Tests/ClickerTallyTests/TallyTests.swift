import struct ClickerTransport.SplitMix64
import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

final class TallyTests: XCTestCase {
    let a = DeviceAddress(rawValue: 1)

    func ballot(_ voter: UInt32, _ seq: UInt16, _ answer: Answer, q: UInt8 = 1, mode: BallotMode = .anonymous) -> Ballot {
        Ballot(mode: mode, voteID: 4821, question: q, voterID: voter, sequence: seq, answer: answer)
    }

    func testOneBallotPerVoterLatestWins() {
        var t = Tally(voteID: 4821)
        t.open(.choice(1))
        XCTAssertEqual(t.record(ballot(1, 1, .choice(0)), from: a, at: .ms(10)), .new)
        XCTAssertEqual(t.record(ballot(2, 1, .choice(1)), from: a, at: .ms(20)), .new)
        XCTAssertEqual(t.record(ballot(1, 1, .choice(0)), from: a, at: .ms(30)), .repeated)
        XCTAssertEqual(t.record(ballot(1, 3, .choice(2)), from: a, at: .ms(40)), .changed(from: .choice(0)))
        XCTAssertEqual(t.record(ballot(1, 2, .choice(3)), from: a, at: .ms(50)), .rejected(.staleSequence))
        let r = t.results(question: 1)
        XCTAssertEqual(r?.voters, 2)
        XCTAssertEqual(r?.countTable, [.choice(0): 0, .choice(1): 1, .choice(2): 1, .choice(3): 0])
        XCTAssertEqual(r?.changedVoters, 1)
        XCTAssertEqual(r?.firstHeard, .ms(10))
        XCTAssertEqual(r?.lastHeard, .ms(50))
        XCTAssertEqual(r?.counts.map(\.answer), [.choice(0), .choice(1), .choice(2), .choice(3)])
        XCTAssertEqual(t.rejections, [.staleSequence: 1])
        XCTAssertEqual(t.repeats, 1)
        XCTAssertEqual(t.questions[1]?.voters[VoterKey(mode: .anonymous, voterID: 1)]?.lastHeard, .ms(50))
    }

    func testFirstResponseOnlyKeepsLowestSequence() {
        var t = Tally(voteID: 4821, policy: .firstResponseOnly)
        t.open(.choice(1))
        XCTAssertEqual(t.record(ballot(1, 2, .choice(1)), from: a, at: .ms(1)), .new)
        XCTAssertEqual(t.record(ballot(1, 3, .choice(2)), from: a, at: .ms(2)), .rejected(.changeIgnored))
        // An earlier response arriving late is the first response.
        XCTAssertEqual(t.record(ballot(1, 1, .choice(0)), from: a, at: .ms(3)), .changed(from: .choice(1)))
        XCTAssertEqual(t.results(question: 1)?.answers, [VoterKey(mode: .anonymous, voterID: 1): .choice(0)])
    }

    func testQuestionsOpenCloseAndOffers() {
        var t = Tally(voteID: 4821)
        XCTAssertEqual(t.record(ballot(1, 1, .choice(0)), from: a, at: .zero), .rejected(.otherQuestion))
        t.open(.choice(1))
        XCTAssertEqual(t.record(ballot(1, 1, .choice(4)), from: a, at: .zero), .rejected(.answerNotOffered))
        XCTAssertEqual(t.record(ballot(1, 1, .trueFalse(true)), from: a, at: .zero), .rejected(.answerNotOffered))
        XCTAssertEqual(t.record(ballot(1, 1, .choice(3)), from: a, at: .zero), .new)
        t.close(question: 1)
        t.open(QuestionSpec(number: 2, options: 8, kinds: [.multiSelect, .trueFalse]))
        // A ballot for the closed question, replayed: rejected and counted.
        XCTAssertEqual(t.record(ballot(1, 2, .choice(2)), from: a, at: .zero), .rejected(.otherQuestion))
        XCTAssertEqual(t.record(ballot(1, 3, .multiSelect(0xFF), q: 2), from: a, at: .zero), .new)
        XCTAssertEqual(t.record(ballot(2, 3, .trueFalse(false), q: 2), from: a, at: .zero), .new)
        XCTAssertEqual(t.record(Ballot(voteID: 1111, question: 2, voterID: 3, sequence: 1, answer: .choice(0)), from: a, at: .zero),
                       .rejected(.otherVoteID))
        XCTAssertEqual(t.results(question: 1)?.voters, 1)
        XCTAssertEqual(t.results(question: 2)?.voters, 2)
        XCTAssertEqual(t.results(question: 2)?.countTable.count, 2)  // no single-choice rows
        XCTAssertEqual(t.rejections, [.otherQuestion: 2, .answerNotOffered: 2, .otherVoteID: 1])
        XCTAssertTrue(t.reopen(question: 1))
        XCTAssertFalse(t.reopen(question: 9))
        XCTAssertNil(t.results(question: 9))
    }

    /// Same sequence, different answer: the first counted ballot stands, whichever arrives first,
    /// and the other is rejected as `conflictingSequence` (the store keeps the first one too).
    func testConflictingSequenceKeepsTheFirstCountedBallot() {
        for (first, second) in [(Answer.choice(2), Answer.choice(1)), (.choice(1), .choice(2))] {
            var t = Tally(voteID: 4821)
            t.open(.choice(1))
            XCTAssertEqual(t.record(ballot(1, 5, first), from: a, at: .zero), .new)
            XCTAssertEqual(t.record(ballot(1, 5, second), from: a, at: .zero), .rejected(.conflictingSequence))
            XCTAssertEqual(t.record(ballot(1, 5, first), from: a, at: .zero), .repeated)
            XCTAssertEqual(t.results(question: 1)?.answers.values.first, first)
            XCTAssertEqual(t.results(question: 1)?.countTable[second], 0, "the conflicting answer is not shown")
            XCTAssertEqual(t.results(question: 1)?.changedVoters, 0)
            XCTAssertEqual(t.rejections[.conflictingSequence], 1)
        }
    }

    func testRosterPollKeepsAnonymousBallotsApart() {
        var t = Tally(voteID: 4821, rosterOnly: true)
        t.open(.choice(1))
        XCTAssertEqual(t.record(ballot(1, 1, .choice(0), mode: .anonymous), from: a, at: .zero), .unregistered)
        XCTAssertEqual(t.record(ballot(1, 1, .choice(1), mode: .roster), from: a, at: .zero), .new)
        let r = t.results(question: 1)
        XCTAssertEqual(r?.voters, 1)
        XCTAssertEqual(r?.unregisteredVoters, 1)
        XCTAssertEqual(r?.countTable[.choice(0)], 0)
        XCTAssertEqual(r?.countTable[.choice(1)], 1)
    }

    func testCountsNeverGoNegativeOrDrift() {
        // Random ballots from 30 voters; counts always equal a recount of the voters' answers.
        var rng = SplitMix64(seed: 21)
        var t = Tally(voteID: 4821)
        t.open(.choice(1))
        for _ in 0..<5000 {
            _ = t.record(ballot(UInt32.random(in: 0..<30, using: &rng), UInt16.random(in: 0..<20, using: &rng),
                                .choice(UInt8.random(in: 0..<4, using: &rng))), from: a, at: .ms(UInt64.random(in: 0..<1000, using: &rng)))
        }
        let r = t.results(question: 1)
        var recount: [Answer: Int] = [:]
        for v in r?.answers.values ?? [:].values { recount[v, default: 0] += 1 }
        for (ans, n) in r?.countTable ?? [:] { XCTAssertEqual(recount[ans] ?? 0, n) }
        XCTAssertEqual(r?.countTable.values.reduce(0, +), r?.voters)
    }
}
