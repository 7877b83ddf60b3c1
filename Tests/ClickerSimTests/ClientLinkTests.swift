#if canImport(Glibc)
import Glibc
#endif
@testable import ClickerSim
import ClickerTransport
import Synchronization
import XCTest

/// The peripheral's socket link when the host stops reading: sends queue for the writer thread and
/// are refused past a bound, so neither a pool thread nor the link's lock ever waits on the socket.
final class ClientLinkTests: XCTestCase {
    final class Outcomes: Sendable {
        let refused = Mutex(0)
        let failed = Mutex(0)
        let messages = Mutex<Set<String>>([])
        var total: Int { refused.withLock { $0 } + failed.withLock { $0 } }
    }

    /// A synchronous test: if a request blocked the cooperative pool, the waits below (on this
    /// thread, not the pool) would time out instead of hanging the test run.
    func testAHostThatStopsReadingNeverBlocksARequest() throws {
        let path = tempSocketPath("stalled")
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener); unlink(path) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(listen(listener, 1), 0)
        let link = try ClientLink(path: path)
        let peer = accept(listener, nil, nil)  // accepted, never read: the host has stalled
        XCTAssertGreaterThanOrEqual(peer, 0)
        defer { close(peer) }

        // Far more than the socket buffers and the queue hold: 2,000 requests of 1,000 bytes.
        let requests = 2000
        let outcomes = Outcomes()
        let someRefused = expectation(description: "a request refused while the host does not read")
        someRefused.assertForOverFulfill = false
        let allDone = expectation(description: "every request answered after close")
        Task.detached {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<requests {
                    group.addTask {
                        do {
                            _ = try await link.request(.publish, [UInt8](repeating: 0xAB, count: 1000))
                        } catch {
                            let text = "\(error)"
                            if text.contains("not reading") {
                                outcomes.refused.withLock { $0 += 1 }
                                someRefused.fulfill()
                            } else {
                                outcomes.failed.withLock { $0 += 1 }
                            }
                            _ = outcomes.messages.withLock { $0.insert(text) }
                        }
                    }
                }
            }
            allDone.fulfill()
        }
        guard XCTWaiter.wait(for: [someRefused], timeout: 30) == .completed else {
            // Requests block instead of being refused; the link's lock is held by a blocked send, so
            // anything more here would hang too.
            return XCTFail("no request was refused while the host did not read: a send blocks")
        }
        // The lock is free although the writer is stuck in send: status still flows.
        link.setStatus(.advertising)
        // Closing wakes the stuck writer; every queued request then fails instead of waiting forever.
        link.close()
        wait(for: [allDone], timeout: 30)
        XCTAssertEqual(outcomes.total, requests)
        XCTAssertGreaterThan(outcomes.refused.withLock { $0 }, 0)
        XCTAssertGreaterThan(outcomes.failed.withLock { $0 }, 0, "queued requests fail at close: \(outcomes.messages.withLock { $0 })")
    }
}
