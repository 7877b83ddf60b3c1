import struct ClickerTransport.SplitMix64
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import TallyDaemon
import TerminalView
import XCTest

/// The filming attack on a roster poll: a classmate logs the air (voter ID and time of every new or
/// changed ballot; both are in clear) and films the projected bars, then matches bar movements to
/// the voters who sent a ballot just before, and names each voter's final answer.
///
/// A class of 40 enrolled students, 4 options, each answer drawn uniformly (chance: 25 %); each
/// student votes at a random time in the first 30 s and one in four changes their answer once
/// 1–15 s later. The camera takes a frame every 50 ms of the controller's clock; the question
/// closes at 50 s and the final (exact) counts are filmed too. Seeded, on an injected clock.
final class LiveCountsLeakTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input
    static let seeds: [UInt64] = [1, 2, 3, 4, 5, 6, 7, 8]

    struct Outcome {
        /// Students whose final answer the attacker named correctly.
        var named: Int
        /// What the final results alone give: everyone guessed as the most common final answer.
        var finalOnly: Int
    }

    struct Vote {
        var ms: UInt64
        var student: Int
        var sequence: UInt16
        var answer: UInt8
    }

    func attack(seed: UInt64, rule: PublishRule, show: Bool) async throws -> Outcome {
        var rng = SplitMix64(seed: seed)
        let keys = (0..<40).map { _ in DeviceKey.generate(using: &rng) }
        let roster = try Roster(entries: keys.enumerated().map {
            RosterEntry(name: "Student \($0.offset)", studentID: "s\($0.offset)", enrollment: $0.element.enrollmentCode)
        })
        var votes: [Vote] = []
        var final = [UInt8](repeating: 0, count: 40)
        for s in 0..<40 {
            let t = UInt64.random(in: 0..<30_000, using: &rng)
            let a = UInt8.random(in: 0..<4, using: &rng)
            votes.append(Vote(ms: t, student: s, sequence: 1, answer: a))
            final[s] = a
            if Int.random(in: 0..<4, using: &rng) == 0 {
                let b = UInt8.random(in: 0..<4, using: &rng)
                votes.append(Vote(ms: t + UInt64.random(in: 1_000..<15_000, using: &rng), student: s, sequence: 2, answer: b))
                final[s] = b
            }
        }
        votes.sort { ($0.ms, $0.student) < ($1.ms, $1.student) }

        var options = PollOptions(joinCode: code, roster: roster, confirmByGATT: false)
        options.publishRule = rule
        let controller = try PollController(options: options, store: nil)
        if show { await controller.setCountsShown(true) }
        let start = Date()
        let sealers = keys.map { BallotSealer(secret: pollSecret(code), deviceKey: $0, mode: .roster) }

        // The attacker's inference: voters heard since the bars last moved share that movement;
        // each is named as the answer that gained the most.
        var guess = [UInt8?](repeating: nil, count: 40)
        var heardSinceMove: [Int] = []
        var lastCounts = [Int](repeating: 0, count: 4)
        func film(_ m: TallyViewModel) {
            guard !m.countsHidden else { return }
            let counts = m.answers.prefix(4).map(\.count)
            guard counts != lastCounts else { return }
            let delta = zip(counts, lastCounts).map { $0 - $1 }
            let best = UInt8(delta.indices.max { delta[$0] < delta[$1] || (delta[$0] == delta[$1] && $0 > $1) } ?? 0)
            for s in heardSinceMove { guess[s] = best }
            heardSinceMove.removeAll()
            lastCounts = counts
        }

        var next = 0
        for frame in UInt64(0)..<1_000 {
            let now = frame * 50
            while next < votes.count, votes[next].ms <= now {
                let v = votes[next]
                let data = sealers[v.student].advertisement(question: 1, sequence: v.sequence, answer: .choice(v.answer))
                await controller.ingest(AdvertisementReport(
                    address: DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(v.student)), rssi: -60,
                    companyID: BallotFormat.companyID, data: data, timestamp: RadioInstant(nanoseconds: v.ms * 1_000_000)))
                heardSinceMove.append(v.student)  // the air log: voter ID and time, in clear
                next += 1
            }
            film(await controller.viewModel(status: nil, now: start + Double(now) / 1_000))
        }
        try await controller.closeQuestion()
        let closed = await controller.viewModel(status: nil, now: start + 50)
        let exact = await controller.results()
        XCTAssertEqual(closed.answers.map(\.count), ["A", "B", "C", "D"].map { exact.counts[$0] ?? -1 },
                       "after close the shown counts are exact")
        XCTAssertFalse(closed.countsHidden)
        film(closed)

        let finalCounts = (0..<4).map { a in final.filter { $0 == a }.count }
        XCTAssertEqual(finalCounts, closed.answers.map(\.count), "every ballot counted")
        let plurality = UInt8(finalCounts.indices.max { finalCounts[$0] < finalCounts[$1] } ?? 0)
        let named = (0..<40).filter { (guess[$0] ?? plurality) == final[$0] }.count
        return Outcome(named: named, finalOnly: finalCounts.max() ?? 0)
    }

    func run(_ rule: PublishRule, show: Bool) async throws -> (mean: Double, finalOnly: Double, perSeed: [Int]) {
        var named: [Int] = [], finalOnly: [Int] = []
        for seed in Self.seeds {
            let o = try await attack(seed: seed, rule: rule, show: show)
            named.append(o.named)
            finalOnly.append(o.finalOnly)
        }
        let n = Double(40 * Self.seeds.count)
        return (Double(named.reduce(0, +)) / n, Double(finalOnly.reduce(0, +)) / n, named)
    }

    /// Bars that move with every ballot (the old live view) name most students.
    func testPerBallotBarsNameMostStudents() async throws {
        let r = try await run(.perBallot, show: true)
        print("per-ballot bars: named \(r.perSeed) of 40 per seed, mean \(r.mean), final results alone \(r.finalOnly)")
        XCTAssertGreaterThan(r.mean, 0.6)
    }

    /// Bars that move only at epochs of at least 10 voters and 5 s: each movement mixes ten or more
    /// answers, so the attacker names barely more than the final results alone give.
    func testBatchedBarsNameLittleMoreThanTheFinalResults() async throws {
        let r = try await run(PublishRule(), show: true)
        print("batched bars: named \(r.perSeed) of 40 per seed, mean \(r.mean), final results alone \(r.finalOnly)")
        XCTAssertLessThanOrEqual(r.mean, 0.45)
        XCTAssertLessThanOrEqual(r.mean - r.finalOnly, 0.12)
    }

    /// Roster polls hide the counts while the question is open unless the instructor shows them:
    /// the attacker learns exactly what the final results say, nothing more.
    func testHiddenCountsNameNoMoreThanTheFinalResults() async throws {
        for seed in Self.seeds {
            let o = try await attack(seed: seed, rule: PublishRule(), show: false)
            XCTAssertEqual(o.named, o.finalOnly, "seed \(seed)")
        }
    }
}
