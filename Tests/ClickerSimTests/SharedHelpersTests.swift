#if canImport(Glibc)
import Glibc
#endif
import ClickerTransport
import OSThreads
import Synchronization
import XCTest

/// glibc's `pthread_getname_np` (a GNU extension the Glibc module does not export).
@_silgen_name("pthread_getname_np")
private func threadName(_ thread: pthread_t, _ name: UnsafeMutablePointer<CChar>, _ length: Int) -> Int32

final class SharedHelpersTests: XCTestCase {
    func testHexIsTwoDigitsAByte() {
        XCTAssertEqual(Hex.string([0x00, 0x0f, 0xa0, 0xff]), "000fa0ff")
        XCTAssertEqual(Hex.string([UInt8]()), "")
        XCTAssertEqual(Hex.string([0x0a, 0xbc], uppercase: true, separator: ":"), "0A:BC")
        XCTAssertEqual(Hex.string((0...255).map(UInt8.init)).count, 512)
        // The forms built on it.
        XCTAssertEqual(DeviceAddress(0x00, 0x1A, 0x7D, 0x0A, 0xB0, 0x05).description, "00:1A:7D:0A:B0:05")
        XCTAssertEqual(UUID128("6e400001-b5a3-f393-e0a9-e50e24dcca9e")?.description, "6e400001-b5a3-f393-e0a9-e50e24dcca9e")
    }

    /// A thread's end is awaited without blocking (`finished`) or blocking (`waitUntilFinished`),
    /// by any number of callers, before or after it ended.
    func testAThreadsEndIsAwaitedBothWays() async throws {
        let gate = Mutex(false)
        let ran = Mutex(false)
        let name = Mutex("")
        let handle = try XCTUnwrap(OSThread.start(name: "clicker-test") {
            while !gate.withLock({ $0 }) { sched_yield() }
            var buf = [CChar](repeating: 0, count: 16)
            _ = threadName(pthread_self(), &buf, 16)
            let bytes = buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            name.withLock { $0 = String(decoding: bytes, as: UTF8.self) }
            ran.withLock { $0 = true }
        })
        XCTAssertFalse(handle.isCurrent)
        let waiter = Task { await handle.finished(); return ran.withLock { $0 } }
        gate.withLock { $0 = true }
        let sawRun = await waiter.value
        XCTAssertTrue(sawRun, "finished() returned only after the body ran")
        await handle.finished()  // again, after the end
        handle.waitUntilFinished()
        handle.waitUntilFinished()
        XCTAssertEqual(name.withLock { $0 }, "clicker-test")
    }
}
