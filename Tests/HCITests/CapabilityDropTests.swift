import Dispatch
import Glibc
@testable import HCI
import Synchronization
import XCTest

/// The capability drop `clicker-vote` performs once the HCI socket is bound. It runs on a thread of
/// its own here (capabilities are per thread), so the rest of the test process keeps its own.
final class CapabilityDropTests: XCTestCase {
    /// Runs `body` on a new thread and waits for it.
    func onNewThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = Mutex<T?>(nil)  // written before the semaphore is signalled
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            result.withLock { $0 = body() }
            done.signal()
        }
        thread.start()
        done.wait()
        guard let value = result.withLock({ $0 }) else { fatalError("thread finished without a result") }
        return value
    }

    func testDropLeavesNoNetworkCapabilityAndKeepsTheOthers() throws {
        let before = try ProcessCapabilities.current()
        try XCTSkipUnless(before.effective & (1 << 13) != 0 && before.effective & (1 << 12) != 0,
                          "needs CAP_NET_RAW and CAP_NET_ADMIN (run as root): \(before)")
        struct Outcome: Sendable {
            var after: Result<ProcessCapabilities.Sets, HCIError>
            var again: Result<ProcessCapabilities.Sets, HCIError>
            var rawSocketErrno: Int32
            var childThread: ProcessCapabilities.Sets?
        }
        let outcome = onNewThread { () -> Outcome in
            let after = Result { () throws(HCIError) in try ProcessCapabilities.dropNetworkCapabilities() }
            // Again, with nothing left to drop: no error (the daemon starts this way under systemd).
            let again = Result { () throws(HCIError) in try ProcessCapabilities.dropNetworkCapabilities() }
            // CAP_NET_RAW really is gone: a raw packet socket is refused.
            let fd = socket(AF_PACKET, Int32(SOCK_RAW.rawValue), 0)
            let e = fd < 0 ? errno : 0
            if fd >= 0 { close(fd) }
            // A thread started afterwards inherits the reduced sets.
            let child = Mutex<ProcessCapabilities.Sets?>(nil)
            let done = DispatchSemaphore(value: 0)
            Thread { child.withLock { $0 = try? ProcessCapabilities.current() }; done.signal() }.start()
            done.wait()
            return Outcome(after: after, again: again, rawSocketErrno: e, childThread: child.withLock { $0 })
        }
        let after = try outcome.after.get()
        for cap: Int32 in [12, 13] {
            let bit = UInt64(1) << UInt64(cap)
            XCTAssertEqual(after.effective & bit, 0, "effective \(cap)")
            XCTAssertEqual(after.permitted & bit, 0, "permitted \(cap)")
            XCTAssertEqual(after.inheritable & bit, 0, "inheritable \(cap)")
            XCTAssertEqual(after.ambient & bit, 0, "ambient \(cap)")
            XCTAssertEqual(after.bounding & bit, 0, "bounding \(cap) (root holds CAP_SETPCAP, so it can be dropped)")
        }
        XCTAssertEqual(after.effective | (1 << 12 | 1 << 13), before.effective, "only the two network capabilities go")
        XCTAssertEqual(try outcome.again.get(), after, "dropping again is a no-op")
        XCTAssertEqual(outcome.rawSocketErrno, EPERM, "a raw socket needs CAP_NET_RAW, which is gone")
        XCTAssertEqual(outcome.childThread, after, "a thread started after the drop has none either")
        // The test's own thread was not touched: capabilities are per thread, which is why
        // clicker-vote drops them while it still has a single thread.
        XCTAssertEqual(try ProcessCapabilities.current(), before)
    }

    func testThreadCountSeesThisProcess() {
        XCTAssertGreaterThanOrEqual(ProcessCapabilities.threadCount(), 1)
    }
}
