import ClickerCommandLine
import XCTest

#if canImport(Glibc)
import CMalloc
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

    /// libdbus's read buffer, once a large reply has grown it past glibc's default threshold (128 kB),
    /// lives in an mmap of its own and is resized by an mremap system call at every read; with
    /// ``Allocator/keepBuffersOnTheHeap()`` a block of that size comes from the heap. The control sets
    /// glibc's default first, so the check does not depend on what earlier tests allocated.
    func testBlocksOfAMegabyteComeFromTheHeapOnceConfigured() throws {
        if getenv("MALLOC_MMAP_THRESHOLD_") != nil { throw XCTSkip("MALLOC_MMAP_THRESHOLD_ is set") }
        func mapped() -> Int { Int(mallinfo2().hblkhd) }
        func mappedBy(_ bytes: Int) -> Int {
            let before = mapped()
            guard let p = malloc(bytes) else { return -1 }
            defer { free(p) }
            memset(p, 0x5A, bytes)
            return mapped() - before
        }
        XCTAssertEqual(mallopt(M_MMAP_THRESHOLD, 128 << 10), 1)
        XCTAssertGreaterThanOrEqual(mappedBy(1 << 20), 1 << 20, "control: at glibc's default, a 1 MiB block is mapped")
        XCTAssertTrue(Allocator.keepBuffersOnTheHeap())
        XCTAssertEqual(mappedBy(1 << 20), 0, "a 1 MiB block comes from the heap")
        XCTAssertEqual(mappedBy(Int(Allocator.mmapThreshold) - 4096), 0, "so does one just under the threshold")
        XCTAssertGreaterThanOrEqual(mappedBy(32 << 20), 32 << 20, "a 32 MiB block (scrypt's) is still mapped")
    }
}
#endif
