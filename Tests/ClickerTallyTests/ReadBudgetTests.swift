import ClickerTally
import ClickerTransport
import XCTest

/// When the tally may start GATT reads (`ReadBudget`): at most `share` of the radio's time while
/// ballots are arriving, freely once the air is quiet.
final class ReadBudgetTests: XCTestCase {
    func at(_ ms: Int) -> RadioInstant { RadioInstant(nanoseconds: UInt64(ms) * 1_000_000) }

    /// A reader that starts a 200 ms read whenever it may, while a ballot is counted every 100 ms for
    /// 60 s: the reads take at most 5 % of that minute plus the burst and one read; without the budget
    /// they would take all of it.
    func testWhileBallotsArriveReadsTakeAtMostTheirShare() {
        var budget = ReadBudget(share: 0.05, burst: .seconds(1), quietAfter: .seconds(2))
        var readUntil: Int?
        var reads = 0, readStart = 0
        for ms in stride(from: 0, through: 60_000, by: 10) {
            if ms % 100 == 0 { budget.counted(at: at(ms)) }
            if let end = readUntil, ms >= end {
                budget.ended(startedAt: at(readStart), busy: true, at: at(ms))
                readUntil = nil
            }
            if readUntil == nil, budget.mayStart(at: at(ms)) {
                readStart = ms
                readUntil = ms + 200
                reads += 1
            }
        }
        XCTAssertLessThanOrEqual(budget.charged, .seconds(60) * 0.05 + .seconds(1) + .milliseconds(200))
        XCTAssertGreaterThanOrEqual(budget.charged, .seconds(60) * 0.05 - .milliseconds(400), "the share is used, not wasted")
        XCTAssertEqual(budget.charged, .milliseconds(200) * (reads - (readUntil == nil ? 0 : 1)), "each finished read charged its 200 ms")
    }

    /// Once no ballot has been counted for `quietAfter`, reads start even with the budget spent, and
    /// are not charged; the next counted ballot makes the air busy again.
    func testAQuietAirReadsFreely() {
        var budget = ReadBudget(share: 0.05, burst: .milliseconds(100), quietAfter: .seconds(2))
        XCTAssertTrue(budget.mayStart(at: at(0)), "nothing counted yet: quiet")
        budget.counted(at: at(0))
        XCTAssertTrue(budget.mayStart(at: at(0)))
        budget.ended(startedAt: at(0), busy: true, at: at(500))
        XCTAssertFalse(budget.mayStart(at: at(600)), "395 ms owed: 400 ms less the 5 ms earned since")
        XCTAssertFalse(budget.isQuiet(at: at(1_999)))
        XCTAssertTrue(budget.mayStart(at: at(2_000)), "quiet 2 s after the last counted ballot")
        budget.ended(startedAt: at(2_000), busy: false, at: at(5_000))
        XCTAssertEqual(budget.charged, .milliseconds(500), "a quiet read is not charged")
        budget.counted(at: at(5_000))
        XCTAssertFalse(budget.mayStart(at: at(5_000)), "busy again, and still owing")
        // 175 ms owed at 5 s, repaid at 5 % of the time that passes: by 8.5 s (the room stays busy).
        for ms in stride(from: 6_000, through: 8_000, by: 1_000) { budget.counted(at: at(ms)) }
        XCTAssertFalse(budget.mayStart(at: at(8_400)))
        XCTAssertTrue(budget.mayStart(at: at(8_600)))
        XCTAssertLessThanOrEqual(budget.balance, 100_000_000, "never more than the burst")
    }
}
