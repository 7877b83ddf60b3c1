import ClickerTally
import ClickerTransport
import ClickerWire
@testable import TallyDaemon
import XCTest

/// Failed GATT reads tried again (`ReadRetries`): back-off, and a bounded table under a flood.
final class ReadRetriesTests: XCTestCase {
    func request(_ i: UInt32) -> VerificationState.Request {
        VerificationState.Request(address: DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(i)),
                                  voter: VoterKey(mode: .anonymous, voterID: i), question: 1, sequence: 1)
    }

    func at(_ ms: UInt64) -> RadioInstant { RadioInstant(nanoseconds: ms * 1_000_000) }

    /// 1 s, 2 s, 4 s … up to 20 s between attempts; nothing is due before its time, and an attempt
    /// under way is not due again until it fails.
    func testTheBackOffDoublesUpToTwentySeconds() {
        XCTAssertEqual((1...8).map { ReadRetries.backoff(after: $0) },
                       [.seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(20), .seconds(20), .seconds(20)])
        var r = ReadRetries()
        var t: UInt64 = 0
        var attempts: [UInt64] = []
        for _ in 0..<7 {
            r.failed(request(1), at: at(t))
            while r.due(at: at(t)).isEmpty { t += 100 }
            attempts.append(t)
            XCTAssertTrue(r.due(at: at(t + 60_000)).isEmpty, "under way: not due again")
        }
        XCTAssertEqual(zip(attempts.dropFirst(), attempts).map { $0 - $1 }, [2000, 4000, 8000, 16000, 20000, 20000])
        XCTAssertTrue(r.isWaiting(request(1), heardAt: at(t)))
        r.done(request(1))
        XCTAssertFalse(r.isWaiting(request(1), heardAt: at(t)))
        XCTAssertEqual(r.count, 0)
    }

    /// 100,000 made-up voters whose reads all fail, a thousand a second, and a real voter among them
    /// heard again every 10.24 s (its keep-alive): the table never holds more than its limit, and the
    /// real voter's retry is kept (the made-up ones are never heard again).
    func testAFloodOfFailingReadsStaysBoundedAndKeepsTheVoterHeardLately() {
        var r = ReadRetries()
        let real = request(0xFFFF_FFFF)
        r.failed(real, at: at(0))
        var largest = 0
        for i in 0..<UInt32(100_000) {
            let ms = UInt64(i)  // a thousand failures a second
            r.failed(request(i), at: at(ms))
            if ms % 10_240 == 300 { _ = r.isWaiting(real, heardAt: at(ms)) }
            largest = max(largest, r.count)
        }
        XCTAssertLessThanOrEqual(largest, ReadRetries.limit)
        XCTAssertGreaterThan(r.evicted, 90_000)
        XCTAssertTrue(r.isWaiting(real, heardAt: at(100_000)), "the voter heard lately keeps its retry")
    }
}
