import struct ClickerTransport.SplitMix64
import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

/// The takeover rule (PROTOCOL.md): a verified ballot beats an unverified one whatever the sequences,
/// keys are bound on first use, and `changes` counts voters whose counted answer changed.
final class TakeoverRuleTests: XCTestCase {
    let a = DeviceAddress(rawValue: 1)
    let victimKey = VoterPublicKey([UInt8](repeating: 0x11, count: 32))!
    let groundKey = VoterPublicKey([UInt8](repeating: 0x66, count: 32))!

    func ballot(_ voter: UInt32, _ seq: UInt16, _ answer: Answer, q: UInt8 = 1, mode: BallotMode = .anonymous) -> Ballot {
        Ballot(mode: mode, voteID: 4821, question: q, voterID: voter, sequence: seq, answer: answer)
    }

    func tally(_ policy: ChangePolicy = .latestWins) -> Tally {
        var t = Tally(voteID: 4821, policy: policy)
        t.open(.choice(1))
        t.open(.choice(2))
        return t
    }

    func counted(_ t: Tally, _ voter: UInt32 = 7, q: UInt8 = 1) -> VoterRecord? {
        t.counted(question: q, voter: VoterKey(mode: .anonymous, voterID: voter))
    }

    func testVerifiedBeatsUnverifiedWhateverTheSequence() {
        for policy in ChangePolicy.allCases {
            var t = tally(policy)
            // The attacker's copy of the voter ID, with the sequence that wins under the policy.
            let attackSeq: UInt16 = policy == .latestWins ? 0xFFFF : 1
            XCTAssertEqual(t.record(ballot(7, attackSeq, .choice(3)), from: a, at: .zero), .new)
            XCTAssertEqual(t.record(ballot(7, 5, .choice(1)), from: a, at: .zero, proof: .signed(victimKey)),
                           .changed(from: .choice(3)), "\(policy)")
            XCTAssertEqual(counted(t)?.answer, .choice(1))
            XCTAssertEqual(counted(t)?.verified, true)
            XCTAssertEqual(t.bindings[7], victimKey, "the first verified read binds the key")
            // The attacker again: now rejected, whatever the sequence.
            for seq: UInt16 in [1, 4, 5, 6, 0xFFFF] {
                let outcome = t.record(ballot(7, seq, .choice(2)), from: a, at: .zero)
                XCTAssertTrue(outcome.isRejection, "\(policy) seq \(seq): \(outcome)")
            }
            XCTAssertEqual(counted(t)?.answer, .choice(1))
            XCTAssertEqual(t.results(question: 1)?.countTable[.choice(2)], 0)
        }
    }

    func testRejectionReasonsFollowTheOrder() {
        var t = tally()
        _ = t.record(ballot(7, 5, .choice(1)), from: a, at: .zero, proof: .signed(victimKey))
        XCTAssertEqual(t.record(ballot(7, 4, .choice(2)), from: a, at: .zero), .rejected(.staleSequence))
        XCTAssertEqual(t.record(ballot(7, 5, .choice(2)), from: a, at: .zero), .rejected(.conflictingSequence))
        XCTAssertEqual(t.record(ballot(7, 6, .choice(2)), from: a, at: .zero), .rejected(.unverifiedChange))
        XCTAssertEqual(t.record(ballot(7, 6, .choice(1)), from: a, at: .zero), .rejected(.unverifiedChange),
                       "a higher sequence with the same answer does not replace the verified ballot either")
        XCTAssertEqual(t.record(ballot(7, 5, .choice(1)), from: a, at: .zero), .repeated, "the counted ballot heard again")
        XCTAssertEqual(t.record(ballot(7, 9, .choice(2)), from: a, at: .zero, proof: .signed(groundKey)),
                       .rejected(.keyMismatch))
        XCTAssertEqual(t.record(ballot(7, 3, .choice(2)), from: a, at: .zero, proof: .signed(groundKey)),
                       .rejected(.staleSequence), "stale comes before key mismatch")
        XCTAssertEqual(t.record(ballot(7, 1, .choice(0), q: 2), from: a, at: .zero, proof: .signed(groundKey)),
                       .rejected(.keyMismatch), "the binding is poll-wide, not per question")
        XCTAssertNil(counted(t, q: 2))
        XCTAssertEqual(t.rejections, [.staleSequence: 2, .conflictingSequence: 1, .unverifiedChange: 2, .keyMismatch: 2])
        var f = tally(.firstResponseOnly)
        _ = f.record(ballot(7, 5, .choice(1)), from: a, at: .zero, proof: .signed(victimKey))
        XCTAssertEqual(f.record(ballot(7, 6, .choice(2)), from: a, at: .zero), .rejected(.changeIgnored))
        XCTAssertEqual(f.record(ballot(7, 4, .choice(2)), from: a, at: .zero), .rejected(.unverifiedChange))
    }

    func testTheVoterChangesByAVerifiedRead() {
        var t = tally()
        _ = t.record(ballot(7, 5, .choice(1)), from: a, at: .zero, proof: .signed(victimKey))
        XCTAssertEqual(t.record(ballot(7, 6, .choice(2)), from: a, at: .zero), .rejected(.unverifiedChange))
        XCTAssertEqual(t.record(ballot(7, 6, .choice(2)), from: a, at: .zero, proof: .signed(victimKey)),
                       .changed(from: .choice(1)))
        XCTAssertEqual(counted(t)?.answer, .choice(2))
        XCTAssertEqual(t.results(question: 1)?.changedVoters, 1)
    }

    /// Issue: a read-back of another ballot (same sequence, another answer) marked the heard one verified.
    func testOnlyTheBallotReadBackIsVerified() {
        var t = tally()
        _ = t.record(ballot(7, 5, .choice(1)), from: a, at: .zero)  // heard: B, unverified
        // The read-back is C with the same sequence: C is the verified one, B is never marked verified.
        XCTAssertEqual(t.record(ballot(7, 5, .choice(2)), from: a, at: .zero, proof: .signed(victimKey)),
                       .changed(from: .choice(1)))
        XCTAssertEqual(counted(t)?.answer, .choice(2))
        XCTAssertEqual(counted(t)?.verified, true)
        // Signed by a key that is not the bound one: the heard ballot stays unverified.
        _ = t.record(ballot(8, 5, .choice(1)), from: a, at: .zero)
        _ = t.record(ballot(8, 1, .choice(0), q: 2), from: a, at: .zero, proof: .signed(victimKey))
        XCTAssertEqual(t.record(ballot(8, 5, .choice(1)), from: a, at: .zero, proof: .signed(groundKey)),
                       .rejected(.keyMismatch))
        XCTAssertEqual(counted(t, 8)?.verified, false)
    }

    /// Issue: a repeat cast (higher sequence, same answer) counted as a change and lost verification.
    func testARepeatCastIsNoChangeAndKeepsVerification() {
        var t = tally()
        _ = t.record(ballot(7, 5, .choice(1)), from: a, at: .zero, proof: .signed(victimKey))
        XCTAssertEqual(t.record(ballot(7, 6, .choice(1)), from: a, at: .zero, proof: .signed(victimKey)), .repeated)
        XCTAssertEqual(counted(t)?.sequence, 6)
        XCTAssertEqual(counted(t)?.verified, true)
        XCTAssertEqual(t.results(question: 1)?.changedVoters, 0)
    }

    /// `changes` counts voters who changed their answer: a ballot with a higher sequence and another
    /// answer replaced their counted one. Not stale ballots, not repeat casts, not a lower sequence that
    /// replaced the counted ballot (verified over unverified, or first response only).
    func testChangesCountsVotersWhoseCountedAnswerChanged() {
        var t = tally()
        _ = t.record(ballot(1, 2, .choice(0)), from: a, at: .zero)
        _ = t.record(ballot(1, 1, .choice(3)), from: a, at: .zero)  // stale: no change
        _ = t.record(ballot(2, 1, .choice(0)), from: a, at: .zero)
        _ = t.record(ballot(2, 2, .choice(0)), from: a, at: .zero)  // repeat cast: no change
        _ = t.record(ballot(3, 1, .choice(0)), from: a, at: .zero)
        _ = t.record(ballot(3, 2, .choice(1)), from: a, at: .zero)  // a change
        _ = t.record(ballot(3, 3, .choice(2)), from: a, at: .zero)  // the same voter again
        // The voter's own verified ballot outranks an attacker's copy with a higher sequence: the
        // voter changed nothing.
        _ = t.record(ballot(4, 9, .choice(3)), from: a, at: .zero)
        XCTAssertEqual(t.record(ballot(4, 4, .choice(1)), from: a, at: .zero, proof: .signed(victimKey)),
                       .changed(from: .choice(3)))
        XCTAssertEqual(t.results(question: 1)?.changedVoters, 1)
        // First response only: an earlier ballot heard late replaces the later one; no change either.
        var f = tally(.firstResponseOnly)
        XCTAssertEqual(f.record(ballot(2, 5, .choice(3)), from: a, at: .zero), .new)
        XCTAssertEqual(f.record(ballot(2, 4, .choice(2)), from: a, at: .zero), .changed(from: .choice(3)))
        XCTAssertEqual(f.results(question: 1)?.changedVoters, 0)
    }

    /// Without signed reads (no GATT) the version-1 rule holds: the highest sequence wins.
    func testWithoutSignedReadsTheUsualRuleHolds() {
        var t = tally()
        _ = t.record(ballot(7, 5, .choice(1)), from: a, at: .zero)
        XCTAssertEqual(t.record(ballot(7, 0xFFFF, .choice(3)), from: a, at: .zero), .changed(from: .choice(1)))
        XCTAssertEqual(counted(t)?.verified, false)
    }

    /// Roster-mode ballots are verified by their tag: nothing unverified outranks them, and they need no read.
    func testRosterBallotsAreVerified() {
        var t = tally()
        XCTAssertEqual(t.record(ballot(7, 5, .choice(1), mode: .roster), from: a, at: .zero), .new)
        XCTAssertEqual(t.counted(question: 1, voter: VoterKey(mode: .roster, voterID: 7))?.verified, true)
        XCTAssertEqual(t.record(ballot(7, 6, .choice(2), mode: .roster), from: a, at: .zero), .changed(from: .choice(1)))
        XCTAssertEqual(t.bindings.count, 0)
    }

    /// Any interleaving of a classmate's ballots for the victim's voter ID (unverified, any sequence,
    /// any answer and question, or signed with a key that is not the bound one) with the victim's
    /// verified ballots leaves the victim's answer counted, under both policies.
    func testNoInterleavingOfAttackerBallotsOutranksTheVictim() {
        let victim: UInt32 = 0x0F67_DFD0
        for seed in UInt64(1)...300 {
            var rng = SplitMix64(seed: seed)
            for policy in ChangePolicy.allCases {
                // The victim's verified ballots per question, sequences growing per poll.
                var own: [(Ballot, BallotProof)] = []
                var seq: UInt16 = 0
                for q in UInt8(1)...2 {
                    for _ in 0..<Int.random(in: 1...3, using: &rng) {
                        seq += 1
                        let b = ballot(victim, seq, .choice(UInt8.random(in: 0..<4, using: &rng)), q: q)
                        own.append((b, .signed(victimKey)))
                        if Bool.random(using: &rng) { own.append((b, .advertised)) }
                    }
                }
                var attack: [(Ballot, BallotProof)] = []
                for _ in 0..<Int.random(in: 1...30, using: &rng) {
                    let s: UInt16 = [0, 1, 0xFFFF, UInt16.random(in: 0...10, using: &rng)].randomElement(using: &rng) ?? 1
                    let b = ballot(victim, s, .choice(UInt8.random(in: 0..<4, using: &rng)), q: UInt8.random(in: 1...2, using: &rng))
                    attack.append((b, Bool.random(using: &rng) ? .advertised : .signed(groundKey)))
                }
                // Interleave; the victim's key is bound by the victim's first signed ballot (a ground key
                // read before that would be trusted on first use, and the victim's would then mismatch).
                var stream: [(Ballot, BallotProof)] = own
                for x in attack {
                    let bound = stream.firstIndex { $0.1 == .signed(victimKey) } ?? 0
                    let lowest = x.1 == .advertised ? 0 : bound + 1
                    stream.insert(x, at: Int.random(in: lowest...stream.count, using: &rng))
                }
                var t = tally(policy)
                for (b, proof) in stream { _ = t.record(b, from: a, at: .zero, proof: proof) }
                for q in UInt8(1)...2 {
                    let mine = own.map(\.0).filter { $0.question == q }
                    let expected = policy == .latestWins ? mine.max { $0.sequence < $1.sequence } : mine.min { $0.sequence < $1.sequence }
                    let got = counted(t, victim, q: q)
                    XCTAssertEqual(got?.answer, expected?.answer, "seed \(seed) \(policy) q\(q)")
                    XCTAssertEqual(got?.sequence, expected?.sequence, "seed \(seed) \(policy) q\(q)")
                    XCTAssertEqual(got?.verified, true, "seed \(seed) \(policy) q\(q)")
                    XCTAssertEqual(t.results(question: q)?.voters, 1)
                }
                XCTAssertEqual(t.bindings[victim], victimKey)
            }
        }
    }
}
