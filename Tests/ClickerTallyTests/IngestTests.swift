import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

final class IngestTests: XCTestCase {
    let poll = TestPoll()

    func pipeline(_ policy: FloodPolicy = FloodPolicy()) -> IngestPipeline {
        var p = IngestPipeline(secret: pollSecret(poll.code), policy: policy)
        p.tally.open(.choice(1))
        return p
    }

    func testDecodeVerifyTally() {
        var p = pipeline()
        XCTAssertEqual(p.ingest(poll.report(voter: 7, answer: .choice(1))).outcome, .new)
        XCTAssertEqual(p.ingest(poll.report(voter: 8, answer: .choice(1))).outcome, .new)
        XCTAssertEqual(p.ingest(poll.report(voter: 7, sequence: 2, answer: .choice(3))).outcome, .changed(from: .choice(1)))
        XCTAssertEqual(p.tally.results(question: 1)?.countTable[.choice(1)], 1)
        XCTAssertEqual(p.tally.results(question: 1)?.countTable[.choice(3)], 1)
        let res = p.ingest(poll.report(voter: 8, answer: .choice(1)))
        XCTAssertEqual(res.outcome, .repeated)
        XCTAssertEqual(res.ballot?.voterID, 8)
    }

    func testExactRepeatsSkipCryptography() {
        var p = pipeline()
        let r = poll.report(voter: 7, answer: .choice(1))
        for i in 0..<100 {
            var again = r
            again.timestamp = .ms(UInt64(i))
            _ = p.ingest(again)
        }
        XCTAssertEqual(p.stats.verifications, 1)
        XCTAssertEqual(p.stats.cacheHits, 99)
        XCTAssertEqual(p.tally.repeats, 99)
        XCTAssertEqual(p.tally.results(question: 1)?.lastHeard, .ms(99))
        // A known-bad payload is not verified twice either.
        var bad = poll.report(voter: 9, answer: .choice(0))
        bad.data[21] ^= 1
        for _ in 0..<10 { XCTAssertEqual(p.ingest(bad).outcome, .rejected(.badTag)) }
        XCTAssertEqual(p.stats.verifications, 2)
        XCTAssertEqual(p.stats.badCacheHits, 9)
        XCTAssertEqual(p.tally.rejections[.badTag], 10)
    }

    func testEveryRejectionIsCountedByReason() {
        var p = pipeline()
        var other = AdvertisementReport(address: DeviceAddress(rawValue: 1), rssi: nil, companyID: 0x004C, data: [1, 2],
                                        timestamp: .zero)
        XCTAssertEqual(p.ingest(other).outcome, .rejected(.notOurs))
        other.companyID = BallotFormat.companyID
        XCTAssertEqual(p.ingest(other).outcome, .rejected(.notOurs))
        let otherPoll = TestPoll("1234-K7QXM-3PF9A")
        XCTAssertEqual(p.ingest(otherPoll.report(voter: 1, answer: .choice(0))).outcome, .rejected(.otherVoteID))
        let wrongSecret = TestPoll("4821-K7QXM-3PF9B")
        XCTAssertEqual(p.ingest(wrongSecret.report(voter: 1, answer: .choice(0))).outcome, .rejected(.badTag))
        XCTAssertEqual(p.ingest(poll.report(voter: 1, question: 2, answer: .choice(0))).outcome, .rejected(.otherQuestion))
        XCTAssertEqual(p.ingest(poll.report(voter: 1, mode: .roster)).outcome, .rejected(.unknownVoter))
        XCTAssertEqual(p.tally.rejections, [.notOurs: 2, .otherVoteID: 1, .badTag: 1, .otherQuestion: 1, .unknownVoter: 1])
        XCTAssertEqual(p.stats.reports, 6)
    }

    func testGATTBallots() {
        var p = pipeline()
        let signer = DeviceKey(bytes: [UInt8](repeating: 5, count: 32))!.signingKey(mode: .anonymous, secret: poll.secret)
        let voter = KeyDerivation.anonymousVoterID(publicKey: signer.publicKey.rawRepresentation)
        let b = Ballot(voteID: poll.code.voteID, question: 1, voterID: voter, sequence: 1, answer: .choice(2))
        let value = BallotCodec.sealGATT(b, key: poll.key, signingKey: signer)
        XCTAssertEqual(value.count, 142)
        XCTAssertEqual(p.ingestGATT(value, from: DeviceAddress(rawValue: 5), at: .ms(1)).outcome, .new)
        var badSignature = value
        badSignature[141] ^= 1
        XCTAssertEqual(p.ingestGATT(badSignature, from: DeviceAddress(rawValue: 5), at: .ms(1)).outcome,
                       .rejected(.badSignature))
        XCTAssertEqual(p.ingestGATT(Array(value.prefix(22)), from: DeviceAddress(rawValue: 5), at: .ms(1)).outcome,
                       .rejected(.truncated))
        XCTAssertEqual(p.ingestGATT([], from: DeviceAddress(rawValue: 5), at: .ms(1)).outcome, .rejected(.notOurs))
        // The advertisement of the same ballot is a repeat.
        XCTAssertEqual(p.ingest(poll.report(voter: voter, answer: .choice(2))).outcome, .repeated)
    }
}

extension TestPoll {
    func report(voter: UInt32, mode: BallotMode) -> AdvertisementReport {
        report(voter: voter, answer: .choice(0), mode: mode)
    }
}
