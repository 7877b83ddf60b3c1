import ClickerStore
import ClickerTestSupport
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import Synchronization
import TallyDaemon
import XCTest

/// A wall clock the test moves by hand.
/// A long lecture driven fast on an injected clock: nothing the controller keeps per ballot or per
/// event may grow with time, only with the room (voters × questions).
final class BoundedStateTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input
    static let secret = pollSecret(try! JoinCode(parsing: "4821-ABCDE-FGHJK"))  // test constant

    func report(voter: UInt32, question: UInt8, sequence: UInt16, answer: Answer, ms: UInt64) -> AdvertisementReport {
        let b = Ballot(voteID: code.voteID, question: question, voterID: voter, sequence: sequence, answer: answer)
        return AdvertisementReport(address: DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(voter)), rssi: -60,
                                   companyID: BallotFormat.companyID,
                                   data: BallotCodec.sealAdvertisement(b, key: .anonymous(Self.secret)),
                                   timestamp: RadioInstant(nanoseconds: ms * 1_000_000))
    }

    /// 100 voters, 40 questions, every voter changing answer three times per question and each
    /// ballot heard five times, a change a second on the clock; nobody ever asks for votes per second
    /// (a `--json` run, a daemon nobody watches). The window behind votes per second, the cache of
    /// good ballots and everything else per event must be the same size at question 40 as at 10.
    func testNothingPerEventGrowsOverALongLectureWithoutAReader() async throws {
        let clock = TestClock()
        let dir = NSTemporaryDirectory() + "clicker-bounded-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: store,
                                            clock: PollClock(clock))
        let voters: UInt32 = 100, questions = 40, changes: UInt16 = 4
        var ms: UInt64 = 0
        var atTen: PollFootprint?
        var accepted = 0
        for q in 1...questions {
            if q > 1 { try await controller.nextQuestion() }
            for seq in 1...changes {
                for v in 0..<voters {
                    let r = report(voter: v, question: UInt8(q), sequence: seq, answer: .choice(UInt8((Int(v) + Int(seq)) % 4)), ms: ms)
                    for _ in 0..<5 { await controller.ingest(r) }
                    accepted += 1
                }
                ms += 1000
                clock.advance(by: .seconds(1))
            }
            if q == 10 { atTen = await controller.footprint }
        }
        let end = await controller.footprint
        let ten = try XCTUnwrap(atTen)
        let r = await controller.results()
        XCTAssertEqual(r.voters, Int(voters), "the last question counted everyone")
        XCTAssertEqual(accepted, Int(voters) * questions * Int(changes))
        // Per event: constant.
        XCTAssertEqual(end.rateWindow, ten.rateWindow, "the votes-per-second window grew with time: \(ten.rateWindow) → \(end.rateWindow)")
        XCTAssertLessThanOrEqual(end.rateWindow, 64)
        XCTAssertLessThanOrEqual(end.pendingRejections, Rejection.allCases.count)
        // The cache of good ballots holds the open question's ballots (and the last question's stragglers),
        // not every ballot of the lecture.
        XCTAssertLessThanOrEqual(end.ingest.goodCache, 2 * Int(voters) * Int(changes),
                                 "cache of good ballots grew with the lecture: \(end.ingest.goodCache) entries")
        XCTAssertLessThanOrEqual(end.ingest.rateLimitedAddresses, Int(voters))
        XCTAssertLessThanOrEqual(end.ingest.trustedAddresses, Int(voters))
        // Per voter: the open question's; a closed anonymous question keeps its totals only.
        XCTAssertEqual(end.tallyVoters, Int(voters))
        XCTAssertEqual(end.committed, Int(voters))
        // The store keeps the open question's accepted ballots (one row each), none per report heard.
        XCTAssertEqual(try store.ballots(poll: 1).count, Int(voters) * Int(changes))
    }

    /// The bounded window still gives the rate the view shows: events of the last five seconds / 5.
    func testVotesPerSecondCountsTheLastFiveSeconds() async throws {
        let clock = TestClock()
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil,
                                            clock: PollClock(clock))
        for v in 0..<100 as Range<UInt32> {
            await controller.ingest(report(voter: v, question: 1, sequence: 1, answer: .choice(0), ms: UInt64(v)))
            clock.advance(by: .milliseconds(10))  // 100 ballots over one second
        }
        let perSecond = await controller.votesPerSecond()
        XCTAssertEqual(perSecond, 20, accuracy: 0.01)
        clock.advance(by: .milliseconds(5_500))
        let later = await controller.votesPerSecond()
        XCTAssertEqual(later, 0, "ballots older than five seconds no longer count")
    }

    func testRateWindowIsConstantInSizeAndExact() {
        var w = RateWindow(window: .seconds(5), slots: 50)
        let t0 = Date(timeIntervalSinceReferenceDate: 1_000_000)
        for i in 0..<100_000 { w.record(at: t0 + Double(i) * 0.001) }  // 1,000 events/s for 100 s
        XCTAssertEqual(w.storage, 50)
        XCTAssertEqual(w.perSecond(at: t0 + 99.9995), 1000, accuracy: 25)
        XCTAssertEqual(w.perSecond(at: t0 + 200), 0)
        // A clock stepping back does not resurrect old counts.
        w.record(at: t0 + 10)
        XCTAssertEqual(w.perSecond(at: t0 + 10), 0.2, accuracy: 1e-9)
        w.reset()
        XCTAssertEqual(w.perSecond(at: t0 + 10), 0)
    }
}
