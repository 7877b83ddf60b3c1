import ClickerTally
import ClickerTransport
@testable import TallyDaemon
import XCTest

/// The GATT read queue's admission, a part of the poll with no actor around it.
final class VerificationStateTests: XCTestCase {
    func request(_ voter: UInt32, sequence: UInt16 = 1) -> VerificationState.Request {
        VerificationState.Request(address: DeviceAddress(rawValue: 0xA0_0000_0000 | UInt64(voter)),
                                  voter: VoterKey(mode: .anonymous, voterID: voter), question: 1, sequence: sequence)
    }

    /// While ballots arrive, no more reads queue than run at once: the next waits for its back-off (and
    /// is not remembered as asked for, so that it is asked again); once the room is quiet, reads queue.
    func testWhileBallotsArriveNoMoreReadsQueueThanRunAtOnce() {
        var v = VerificationState()
        let t = RadioInstant(nanoseconds: 10_000_000_000)
        v.budget.counted(at: t)
        v.outstanding = 2
        XCTAssertFalse(v.mayQueue(request(1), at: t, concurrent: 2))
        XCTAssertFalse(v.requested.contains(request(1)))
        XCTAssertTrue(v.retries.isWaiting(request(1), heardAt: t), "refused now, asked again after its back-off")
        XCTAssertTrue(v.mayQueue(request(2), at: t, concurrent: 3), "a free slot takes it")
        XCTAssertTrue(v.requested.contains(request(2)))
        let quiet = t + .seconds(5)
        XCTAssertTrue(v.mayQueue(request(3), at: quiet, concurrent: 2), "a quiet room queues whatever is outstanding")
    }

    /// A full queue drops its oldest request; the dropped one is forgotten, so that hearing its ballot
    /// again asks for it again. A request counts as outstanding when it is queued; the dropped one's
    /// count then stands for the one that replaced it (each read finished takes one off).
    func testARequestTheFullQueueDroppedIsForgotten() {
        var v = VerificationState()
        let (reads, queue) = AsyncStream<VerificationState.Request>.makeStream(bufferingPolicy: .bufferingNewest(1))
        defer { withExtendedLifetime(reads) {} }
        let t = RadioInstant(nanoseconds: 1_000_000_000)
        XCTAssertTrue(v.mayQueue(request(1), at: t, concurrent: 1))
        v.queued(queue.yield(request(1)))
        XCTAssertTrue(v.mayQueue(request(2), at: t, concurrent: 1))
        v.queued(queue.yield(request(2)))
        XCTAssertFalse(v.requested.contains(request(1)), "the dropped request is forgotten")
        XCTAssertTrue(v.requested.contains(request(2)))
        XCTAssertEqual(v.outstanding, 1)
    }
}
