import ClickerTransport
import ClickerWire
import Foundation
import Glibc
import PrivateFiles
import Voter
import XCTest

/// `VoterSession.cast` persists its sequence (flock, fsync, rename) off the cooperative pool.
final class OffPoolTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    /// With the sequence lock held elsewhere (another `clicker-vote`), more casts than the pool has
    /// threads wait for it, and the pool still runs other work. A synchronous test: its waits are on
    /// this thread, so a starved pool makes them time out rather than hang.
    func testCastsWaitingForTheSequenceLockLeaveThePoolFree() throws {
        let state = StateDirectory(path: NSTemporaryDirectory() + "clicker-offpool-\(UUID().uuidString)/clicker")
        try state.create()
        let lockPath = state.path + "/sequences.lock"
        let holding = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        Thread {
            try? FileLock.withExclusiveLock(lockPath) {
                holding.signal()
                release.wait()
            }
        }.start()
        holding.wait()
        var released = false
        defer { if !released { release.signal() } }

        let casts = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let secret = pollSecret(code)
        let allCast = expectation(description: "every cast done")
        allCast.expectedFulfillmentCount = casts
        for _ in 0..<casts {
            Task.detached {
                let session = VoterSession(secret: secret, question: 1, identity: DeviceKey.generate(),
                                           transport: SilentRadio(), state: state)
                if (try? await session.cast(.choice(2)))?.sequence == 1 { allCast.fulfill() }
            }
        }
        // Acknowledged by the kernel: every cast is queued on the lock (/proc/locks shows waiters).
        var st = stat()
        XCTAssertEqual(stat(lockPath, &st), 0)
        let deadline = Date() + 20
        while blockedWaiters(inode: UInt64(st.st_ino)) < casts, Date() < deadline { usleep(2000) }
        XCTAssertEqual(blockedWaiters(inode: UInt64(st.st_ino)), casts, "every cast waits on the lock")

        let poolRuns = expectation(description: "the pool runs other work")
        Task.detached { poolRuns.fulfill() }
        let outcome = XCTWaiter.wait(for: [poolRuns], timeout: 10)
        XCTAssertEqual(outcome, .completed, "casts waiting for the sequence lock starved the cooperative pool")
        release.signal()
        released = true
        wait(for: [allCast], timeout: 30)
    }

    /// Lines of /proc/locks that wait (`->`) for a lock on `inode`.
    private func blockedWaiters(inode: UInt64) -> Int {
        guard let text = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return -1 }
        return text.split(separator: "\n").filter { line in
            line.contains("->") && line.split(separator: " ").contains { $0.hasSuffix(":\(inode)") }
        }.count
    }
}

/// A radio that accepts everything and does nothing.
struct SilentRadio: PeripheralTransport {
    func advertise(_ payload: AdvertisingPayload) async throws {}
    func stopAdvertising() async throws {}
    func publish(service: UUID128, characteristic: UUID128, value: [UInt8]) async throws {}
    func shutdown() async {}
    func status() -> AsyncStream<RadioStatus> { AsyncStream { $0.finish() } }
}
