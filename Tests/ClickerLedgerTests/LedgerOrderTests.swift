import ClickerLedger
import ClickerTally
import ClickerTransport
import ClickerWire
import OSThreads
import PostgresClient
import Synchronization
import XCTest

/// The ledger's claim (docs/LEDGER.md): receivers may write ballots in any order, twice, or again after
/// a crash, and the database counts as one in-process `Tally` fed every ballot once in heard order.
final class LedgerOrderTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    /// One seeded case: a poll, its ballots as heard (several voters of both modes, verified and not,
    /// few sequences, answers and heard times so that ties and conflicts are common).
    struct Scenario {
        let poll: Int64
        let voteID: UInt16
        let policy: ChangePolicy
        let questions: [UInt8]
        var heard: [LedgerBallot] = []

        init(seed: UInt64) {
            var rng = SplitMix64(seed: seed &* 0x9E37_79B9_7F4A_7C15 &+ 1)
            poll = Int64(seed) + 1
            voteID = UInt16.random(in: 1...9999, using: &rng)
            policy = Bool.random(using: &rng) ? .latestWins : .firstResponseOnly
            questions = Bool.random(using: &rng) ? [1] : [1, 2]
            // Small ID space: the same ID in both modes is two voters.
            let voters = (0..<Int.random(in: 1...6, using: &rng)).map { _ in
                VoterKey(mode: Bool.random(using: &rng) ? .anonymous : .roster, voterID: UInt32.random(in: 1...3, using: &rng))
            }
            for _ in 0..<Int.random(in: 1...30, using: &rng) {
                let heardAt = 1_790_000_000_000_000 + Int64.random(in: 0...40, using: &rng)
                let address = DeviceAddress(rawValue: UInt64.random(in: 1...3, using: &rng))
                if let earlier = heard.randomElement(using: &rng), Int.random(in: 0..<10, using: &rng) < 3 {
                    // The same ballot heard again: another time and radio, maybe read over GATT this time.
                    var again = earlier
                    again.heardAt = heardAt
                    again.address = address
                    again.verified = earlier.voter.mode == .roster || Bool.random(using: &rng)
                    heard.append(again)
                    continue
                }
                let voter = voters.randomElement(using: &rng) ?? VoterKey(mode: .anonymous, voterID: 1)
                heard.append(LedgerBallot(poll: poll, question: questions.randomElement(using: &rng) ?? 1, voter: voter,
                                          sequence: UInt16.random(in: 1...4, using: &rng), answer: .choice(UInt8.random(in: 0...2, using: &rng)),
                                          verified: voter.mode == .roster || Int.random(in: 0..<4, using: &rng) == 0,
                                          heardAt: heardAt, address: address))
            }
        }

        /// The writes of 2–4 receivers: each hears a random non-empty share of the ballots (a ballot
        /// may reach several), writes them shuffled, alone or in batches of up to 5, the receivers'
        /// writes interleaved at random; some batches are written again (a receiver that crashed
        /// after the commit and re-sends), now or at the end.
        func writes(seed: UInt64) -> [(receiver: Int, ballots: [LedgerBallot])] {
            var rng = SplitMix64(seed: seed ^ 0xD1B5_4A32_D192_ED03)
            let receivers = Int.random(in: 2...4, using: &rng)
            var queues = Array(repeating: [LedgerBallot](), count: receivers)
            for b in heard {
                var reached = (0..<receivers).filter { _ in Bool.random(using: &rng) }
                if reached.isEmpty { reached = [Int.random(in: 0..<receivers, using: &rng)] }
                for r in reached { queues[r].append(b) }
            }
            for r in 0..<receivers { queues[r].shuffle(using: &rng) }
            var out: [(receiver: Int, ballots: [LedgerBallot])] = []
            var replays: [(receiver: Int, ballots: [LedgerBallot])] = []
            while let r = (0..<receivers).filter({ !queues[$0].isEmpty }).randomElement(using: &rng) {
                let n = min(queues[r].count, Int.random(in: 1...5, using: &rng))
                let batch = (receiver: r, ballots: Array(queues[r].prefix(n)))
                queues[r].removeFirst(n)
                out.append(batch)
                switch Int.random(in: 0..<10, using: &rng) {
                case 0: out.append(batch)
                case 1: replays.append(batch)
                default: break
                }
            }
            return out + replays.shuffled(using: &rng)
        }
    }

    func testReceiversWritingInAnyOrderWithRepeatsAndReplaysCountAsOneTallyInHeardOrder() throws {
        let url = try SharedServer.database()
        // One connection per simulated receiver.
        let ledgers = try (0..<4).map { _ in try BallotLedger(url: url) }
        var ballots = 0, writes = 0, cases = 0
        for seed in UInt64(0)..<400 {
            let s = Scenario(seed: seed)
            try ledgers[0].register(poll: s.poll, voteID: s.voteID, policy: s.policy, questions: s.questions)
            for w in s.writes(seed: seed) {
                if w.ballots.count == 1 { try ledgers[w.receiver].write(w.ballots[0]) } else { try ledgers[w.receiver].write(batch: w.ballots) }
                writes += w.ballots.count
            }
            ballots += s.heard.count
            let tally = Reference.tally(s.heard, voteID: s.voteID, policy: s.policy, questions: s.questions)
            try assertLedger(ledgers[Int(seed % 4)], poll: s.poll, equals: tally, questions: s.questions, "seed \(seed)")
            cases += 1
        }
        XCTAssertEqual(cases, 400)
        // The streams were not trivial: more writes than ballots (repeats across receivers and replays).
        XCTAssertGreaterThan(writes, ballots + ballots / 4, "writes \(writes), ballots \(ballots)")
    }

    func testEveryOrderOfTwoConflictingBallotsGivesTheSameCountedBallot() throws {
        // Same voter, same sequence, other answers, heard at the same instant by two receivers: the
        // smaller answer bytes stand, in either order; then the earlier-heard stands over both.
        let url = try SharedServer.database()
        let ledger = try BallotLedger(url: url)
        try ledger.register(poll: 1, voteID: 7, policy: .latestWins, questions: [1])
        try ledger.register(poll: 2, voteID: 7, policy: .latestWins, questions: [1])
        let voter = VoterKey(mode: .anonymous, voterID: 9)
        func b(_ poll: Int64, _ answer: UInt8, at t: Int64, _ address: UInt64) -> LedgerBallot {
            LedgerBallot(poll: poll, question: 1, voter: voter, sequence: 3, answer: .choice(answer), verified: false,
                         heardAt: t, address: DeviceAddress(rawValue: address))
        }
        try ledger.write(b(1, 2, at: 100, 1))
        try ledger.write(b(1, 1, at: 100, 2))
        try ledger.write(b(2, 1, at: 100, 2))
        try ledger.write(batch: [b(2, 2, at: 100, 1), b(2, 1, at: 100, 2)])
        for poll: Int64 in [1, 2] {
            XCTAssertEqual(try ledger.counted(poll: poll, question: 1)[voter]?.answer, .choice(1))
            XCTAssertEqual(try ledger.counts(poll: poll, question: 1), [.choice(1): 1])
        }
        try ledger.write(b(1, 3, at: 99, 3))
        XCTAssertEqual(try ledger.counted(poll: 1, question: 1)[voter]?.answer, .choice(3))
        XCTAssertEqual(try ledger.counted(poll: 1, question: 1)[voter]?.firstHeard, 99)
        // Written again, the ballot that counts and one it outranks change no row (no new row version).
        let raw = try PostgresConnection(url: url)
        let versions = {
            try raw.execute("""
                SELECT b.xmin::text, s.xmin::text FROM ballots b JOIN ballot_spans s USING (poll_id, question, voter_mode, voter_id)
                WHERE b.poll_id = 1
                """).rows.map(\.values)
        }
        let before = try versions()
        try ledger.write(b(1, 3, at: 99, 3))
        try ledger.write(batch: [b(1, 2, at: 100, 1), b(1, 1, at: 100, 2)])
        XCTAssertEqual(try versions(), before)
        XCTAssertEqual(before.count, 1)
    }

    func testWritersOnFourThreadsWritingTheSameBallotsCountThemOnce() throws {
        let url = try SharedServer.database()
        var scenario = Scenario(seed: 7)
        // A larger poll than the property cases: the ballots of eleven cases in one poll.
        for seed in UInt64(100)..<110 { scenario.heard += Scenario(seed: seed).heard.map { var b = $0; b.poll = scenario.poll; return b } }
        let s = scenario
        try BallotLedger(url: url).register(poll: s.poll, voteID: s.voteID, policy: s.policy, questions: [1, 2])
        let failures = Mutex<[String]>([])
        let threads = (0..<4).compactMap { t in
            OSThread.start(name: "ledger-w\(t)") {
                do {
                    let ledger = try BallotLedger(url: url)
                    var rng = SplitMix64(seed: UInt64(t) + 1)
                    let mine = s.heard.shuffled(using: &rng)
                    // Two threads write alone, two in batches of 10: batches overlap in keys and order.
                    if t % 2 == 0 {
                        for b in mine { try ledger.write(b) }
                    } else {
                        for start in stride(from: 0, to: mine.count, by: 10) { try ledger.write(batch: Array(mine[start..<min(start + 10, mine.count)])) }
                    }
                } catch {
                    failures.withLock { $0.append("writer \(t): \(error)") }
                }
            }
        }
        XCTAssertEqual(threads.count, 4)
        for t in threads { t.waitUntilFinished() }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertGreaterThan(s.heard.count, 100)
        let tally = Reference.tally(s.heard, voteID: s.voteID, policy: s.policy, questions: [1, 2])
        try assertLedger(try BallotLedger(url: url), poll: s.poll, equals: tally, questions: [1, 2], "four writers")
    }
}
