import Foundation
import Synchronization
import TallyDaemon
import XCTest

final class ChangeFeedTests: XCTestCase {
    /// Subscribers cancelled while another thread signals: a signal that yielded under the feed's
    /// lock deadlocked against a cancellation, whose `onTermination` takes that lock under the
    /// cancelled task's status lock (a `--simulate` run hung this way when its duration ended).
    func testCancellingSubscribersWhileSignallingDoesNotDeadlock() async throws {
        let feed = ChangeFeed()
        let stop = ManagedAtomicFlag()
        let signaller = Thread {
            while !stop.isSet { feed.signal() }
        }
        signaller.start()
        defer { stop.set() }
        let done = expectation(description: "every subscriber cancelled")
        Task.detached {
            for _ in 0..<3_000 {
                let stream = feed.subscribe()
                let consumer = Task { for await _ in stream {} }
                await Task.yield()
                consumer.cancel()
                await consumer.value
            }
            done.fulfill()
        }
        await fulfillment(of: [done], timeout: 60)
        XCTAssertEqual(feed.subscriberCount, 0, "every cancelled subscriber left the feed")
    }
}

/// A flag the signalling thread polls.
private final class ManagedAtomicFlag: Sendable {
    private let flag = Mutex(false)
    var isSet: Bool { flag.withLock { $0 } }
    func set() { flag.withLock { $0 = true } }
}
