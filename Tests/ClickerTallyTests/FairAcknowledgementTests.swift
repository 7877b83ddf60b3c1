import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import XCTest

/// Attack #8 of the security review: about 4,100 ballots on one question, from made-up voters (an
/// anonymous poll counts them) or from one voter's own key, sent by one radio at 24 a second (170 s).
/// The voters who vote after them are acknowledged as promptly as before the flood, and the next
/// question opens at the interval a question opens at with no flood (`TallyBeacon`; docs/SECURITY.md,
/// "Acknowledgements").
final class FairAcknowledgementTests: XCTestCase {
    let poll = TestPoll()
    var key: BeaconKey { BeaconKey(poll.secret) }
    let q1 = BeaconQuestionInfo(number: 1, kind: .single, options: 4)
    let q2 = BeaconQuestionInfo(number: 2, kind: .single, options: 4)
    static let ms: UInt64 = 1_000_000
    static let flood = 4200
    /// The flood's rate: 4,100 ballots in 170 s.
    static let floodEveryMs: UInt64 = 41

    func fingerprints(_ p: BroadcastPayload) -> Set<AckFingerprint> {
        Set(p.frames.flatMap { f -> [AckFingerprint] in
            if case .success(.acks(let a)) = BeaconCodec.open(f, key: key) { a.fingerprints } else { [] }
        })
    }

    func interval(_ p: BroadcastPayload) -> Int? {
        BeaconCodec.state(in: p, key: key)?.interval.milliseconds
    }

    /// Runs the flood on question 1 (a payload every 100 ms, as the daemon asks while ballots come),
    /// then `real` voters who each vote once; returns the fingerprints sent after each real voter was
    /// counted, within a second, and every fingerprint sent.
    func run(_ t: inout TallyBeacon, flood ballot: (Int) -> (VoterKey, UInt16), real: Int)
        -> (late: [Bool], sent: Set<AckFingerprint>) {
        var sent = Set<AckFingerprint>()
        var ns: UInt64 = 0, nextPayload: UInt64 = 0
        func payloads(until end: UInt64) {
            while nextPayload <= end {
                sent.formUnion(fingerprints(t.payload(.open(q1), tick: UInt32(nextPayload / (10 * Self.ms)), at: nextPayload)))
                nextPayload += 100 * Self.ms
            }
        }
        for i in 0..<Self.flood {
            let (voter, sequence) = ballot(i)
            t.counted(voter, question: 1, sequence: sequence, at: ns)
            ns += Self.floodEveryMs * Self.ms
            payloads(until: ns)
        }
        var late: [Bool] = []
        for v in 0..<real {
            let voter = VoterKey(mode: .anonymous, voterID: 0x0100_0000 + UInt32(v))
            t.counted(voter, question: 1, sequence: 1, at: ns)
            let mine = key.fingerprint(voterID: voter.voterID, question: 1, sequence: 1)
            var seen = Set<AckFingerprint>()
            let start = nextPayload
            while nextPayload < start + 1000 * Self.ms {
                seen.formUnion(fingerprints(t.payload(.open(q1), tick: UInt32(nextPayload / (10 * Self.ms)), at: nextPayload)))
                nextPayload += 100 * Self.ms
            }
            sent.formUnion(seen)
            late.append(!seen.contains(mine))
            ns = nextPayload
        }
        return (late, sent)
    }

    /// The interval the next question opens at, after `t`'s question 1, against a tally that heard nothing.
    func assertTheNextQuestionOpensAsIfNoFlood(_ t: inout TallyBeacon, _ caps: BroadcastCapabilities,
                                               line: UInt = #line) {
        var fresh = TallyBeacon(key: key, mode: .anonymous, capabilities: caps)
        let at: UInt64 = 400_000 * Self.ms
        let quiet = interval(fresh.payload(.open(q2), tick: UInt32(at / (10 * Self.ms)), at: at))
        let next = interval(t.payload(.open(q2), tick: UInt32(at / (10 * Self.ms)), at: at))
        XCTAssertNotNil(next, line: line)
        XCTAssertEqual(next, quiet, "\(caps): the next question opens at \(next ?? 0) ms, as without the flood", line: line)
        XCTAssertNotEqual(next, 2550, line: line)
    }

    /// 4,200 made-up voters, then 30 real voters: every real voter's fingerprint is on air within a
    /// second of its counting, and question 2 opens at the interval of a quiet poll, not at 2.55 s.
    func testMadeUpVotersDoNotStarveLaterVotersNorSlowTheNextQuestion() {
        for caps in [BroadcastCapabilities.legacy, .extended] {
            var t = TallyBeacon(key: key, mode: .anonymous, capabilities: caps)
            let (late, _) = run(&t, flood: { (VoterKey(mode: .anonymous, voterID: 0x4000_0000 + UInt32($0)), 1) }, real: 30)
            XCTAssertEqual(late.filter { $0 }.count, 0, "\(caps): real voters not acknowledged within a second: \(late)")
            XCTAssertGreaterThanOrEqual(t.acknowledged, Self.flood + 30, "\(caps): every counted ballot was acknowledged")
            assertTheNextQuestionOpensAsIfNoFlood(&t, caps)
        }
    }

    /// One voter's own key casting 4,200 ballots (a new sequence each) does not starve the others, and
    /// adds one fingerprint per `ballotSpacing` once past its allowance: the fingerprints a voter hears
    /// on the question stay few.
    func testOneVotersManyBallotsAreSpacedAndDoNotStarveTheOthers() {
        for caps in [BroadcastCapabilities.legacy, .extended] {
            var t = TallyBeacon(key: key, mode: .roster, capabilities: caps)
            let spammer = VoterKey(mode: .roster, voterID: 0x0BAD_0001)
            let (late, sent) = run(&t, flood: { (spammer, UInt16($0 + 1)) }, real: 30)
            XCTAssertEqual(late.filter { $0 }.count, 0, "\(caps): real voters not acknowledged within a second: \(late)")
            let fromSpammer = (1...Self.flood).filter {
                sent.contains(key.fingerprint(voterID: spammer.voterID, question: 1, sequence: UInt16($0)))
            }.count
            let seconds = Int(UInt64(Self.flood) * Self.floodEveryMs / 1000)
            let tuning = TallyBeacon.Tuning()
            let spacing = Int(tuning.ballotSpacing.components.seconds)
            XCTAssertLessThanOrEqual(fromSpammer, tuning.ballotsPerVoter + seconds / spacing + 1,
                                     "\(caps): \(fromSpammer) of the voter's \(Self.flood) ballots acknowledged in \(seconds) s")
            XCTAssertGreaterThanOrEqual(fromSpammer, tuning.ballotsPerVoter, "\(caps)")
            assertTheNextQuestionOpensAsIfNoFlood(&t, caps)
        }
    }
}
