@testable import BlueZ
import ClickerTestSupport
import ClickerTransport
import Synchronization
import XCTest

/// The GATT reader's connection slots: first come, first served; a cancelled or timed-out waiter
/// leaves the queue without a permit; a release hands its permit over at once; none is ever lost.
final class AsyncSemaphoreTests: XCTestCase {
    /// Waits until `n` tasks are queued (the semaphore's own count, not a sleep).
    func queued(_ s: AsyncSemaphore, _ n: Int, file: StaticString = #filePath, line: UInt = #line) async throws {
        try await eventually("\(n) waiters queued", file: file, line: line) { s.waiting == n }
    }

    func testWaitersAreServedInArrivalOrder() async throws {
        let s = AsyncSemaphore(permits: 1)
        try await s.acquire()
        let (served, log) = AsyncStream<String>.makeStream()
        var tasks: [Task<Void, any Error>] = []
        for name in ["a", "b", "c"] {
            tasks.append(Task {
                try await s.acquire()
                log.yield(name)
            })
            try await queued(s, tasks.count)
        }
        var order = served.makeAsyncIterator()
        for expected in ["a", "b", "c"] {
            s.release()
            let next = await order.next()
            XCTAssertEqual(next, expected)
        }
        for t in tasks { try await t.value }
        XCTAssertEqual(s.availablePermits, 0, "the last waiter still holds the permit")
        s.release()
        XCTAssertEqual(s.availablePermits, 1)
    }

    func testReleaseHandsThePermitToAWaiterAtOnce() async throws {
        let s = AsyncSemaphore(permits: 1)
        try await s.acquire()
        let waiter = Task { try await s.acquire() }
        try await queued(s, 1)
        s.release()
        // Synchronously: the waiter is out of the queue and owns the permit; none went to the pool.
        XCTAssertEqual(s.waiting, 0)
        XCTAssertEqual(s.availablePermits, 0)
        try await waiter.value
        s.release()
        XCTAssertEqual(s.availablePermits, 1)
    }

    func testACancelledWaiterLeavesTheQueueAndTakesNoPermit() async throws {
        let s = AsyncSemaphore(permits: 1)
        try await s.acquire()
        let cancelled = Task { try await s.acquire() }
        try await queued(s, 1)
        let behind = Task { try await s.acquire() }
        try await queued(s, 2)
        cancelled.cancel()
        do {
            try await cancelled.value
            XCTFail("a cancelled waiter got a permit")
        } catch is CancellationError {}
        XCTAssertEqual(s.waiting, 1, "the cancelled waiter is still queued")
        s.release()
        try await behind.value  // the permit went to the waiter behind, not to the cancelled one
        XCTAssertEqual(s.waiting, 0)
        s.release()
        XCTAssertEqual(s.availablePermits, 1)
    }

    /// The deadline is on the backend's clock: a test clock moved past it times the waiter out, and
    /// nothing else does.
    func testATimedOutWaiterTakesNoPermit() async throws {
        let testClock = TestClock()
        let clock = RadioClock(testClock)
        let s = AsyncSemaphore(permits: 1)
        try await s.acquire()
        let waiter = Task { try await s.acquire(before: clock.now + .milliseconds(20), on: clock) }
        await testClock.waitForSleepers(1)   // its deadline's timer
        while s.waiting < 1 { await Task.yield() }   // and the waiter, queued
        testClock.advance(by: .milliseconds(19))
        XCTAssertEqual(s.waiting, 1, "timed out before its deadline")
        testClock.advance(by: .milliseconds(1))
        let got = try await waiter.value
        XCTAssertFalse(got)
        XCTAssertEqual(s.waiting, 0)
        s.release()
        XCTAssertEqual(s.availablePermits, 1, "the permit went to a waiter that had given up")
        let again = try await s.acquire(before: clock.now + .milliseconds(20), on: clock)
        XCTAssertTrue(again)
    }

    /// Many tasks, some cancelled at random points: never more than `permits` inside at once, and every
    /// permit is back at the end.
    func testNoPermitIsLostOrDuplicated() async throws {
        let permits = 3
        let s = AsyncSemaphore(permits: permits)
        let inside = Occupancy()
        var tasks: [Task<Void, Never>] = []
        for i in 0..<300 {
            let t = Task {
                guard (try? await s.acquire()) != nil else { return }
                defer { s.release() }
                inside.enter()
                await Task.yield()
                inside.leave()
            }
            tasks.append(t)
            if i % 3 == 0 { tasks[i / 2].cancel() }
        }
        for t in tasks { await t.value }
        XCTAssertEqual(s.availablePermits, permits)
        XCTAssertEqual(s.waiting, 0)
        let peak = inside.peak
        XCTAssertLessThanOrEqual(peak, permits)
        XCTAssertGreaterThanOrEqual(peak, 1)
    }
}

/// How many tasks hold a permit now, and the most that ever did.
final class Occupancy: Sendable {
    private let counts = Mutex((now: 0, peak: 0))
    func enter() {
        counts.withLock {
            $0.now += 1
            $0.peak = max($0.peak, $0.now)
        }
    }
    func leave() { counts.withLock { $0.now -= 1 } }
    var peak: Int { counts.withLock { $0.peak } }
}
