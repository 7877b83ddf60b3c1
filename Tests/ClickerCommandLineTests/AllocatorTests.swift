import ClickerCommandLine
import XCTest

#if canImport(Glibc)
import Glibc

/// ``Allocator/usage()``, the figure behind the soak's leak check, tells memory in use from memory the
/// allocator keeps free after a burst.
final class AllocatorTests: XCTestCase {
    /// 48 MiB in 1 KiB blocks, then all freed but one in 64: the blocks left in use pin the heap, as a
    /// long-running daemon's live objects do, so the allocator keeps the rest as free memory.
    static func burst() -> [UnsafeMutableRawPointer] {
        var kept: [UnsafeMutableRawPointer] = []
        var freed: [UnsafeMutableRawPointer] = []
        for i in 0..<(48 * 1024) {
            guard let p = malloc(1024) else { continue }
            memset(p, 0xA5, 1024)
            if i % 64 == 63 { kept.append(p) } else { freed.append(p) }
        }
        for p in freed { free(p) }
        return kept
    }

    func testUsageCountsMemoryInUseApartFromMemoryKeptFree() throws {
        guard let start = Allocator.usage() else { throw XCTSkip("no mallinfo2") }
        let kept = Self.burst()
        guard let during = Allocator.usage() else { return XCTFail("mallinfo2 went away") }
        for p in kept { free(p) }
        // 768 blocks of 1 KiB stay in use; the 47 MiB freed count as free, not in use.
        XCTAssertLessThan(abs(during.inUse - start.inUse - 768 * 1024), 256 << 10)
        XCTAssertGreaterThan(during.free - start.free, 40 << 20)
    }
}
#endif
