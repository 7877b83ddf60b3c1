import ClickerCommandLine
import ClickerTestSupport
import Foundation
import XCTest

#if canImport(Glibc)
import CMalloc
import Glibc

/// glibc's allocator as the executables set it up and the soak reads it.
///
/// Each check runs in a fresh child process of this test binary (the `testProbe…` methods, skipped
/// unless their parent test starts them). What the heap does with a new block depends on what it
/// already holds free, and in the suite's own process earlier tests leave it in any state: a free
/// megabyte that glibc reuses whatever the threshold, or tens of megabytes free that a burst fills
/// without the free figure growing. Both happened in full-suite runs; neither can in a fresh process.
final class AllocatorTests: XCTestCase {
    /// ``Allocator/usage()``, the figure behind the soak's leak check, tells memory in use from memory
    /// the allocator keeps free after a burst.
    func testUsageCountsMemoryInUseApartFromMemoryKeptFree() throws {
        try assertPassesInAFreshProcess("testProbeUsageAfterABurst")
    }

    /// libdbus's read buffer, once a large reply has grown it past glibc's default threshold (128 kB),
    /// lives in an mmap of its own and is resized by an mremap system call at every read; with
    /// ``Allocator/keepBuffersOnTheHeap()`` a block of that size comes from the heap.
    func testBlocksOfAMegabyteComeFromTheHeapOnceConfigured() throws {
        try assertPassesInAFreshProcess("testProbeHeapThreshold")
    }

    // MARK: Probes (child process only)

    /// 48 MiB in 1 KiB blocks, then all freed but one in 64: the blocks left in use pin the heap, as a
    /// long-running daemon's live objects do, so the allocator keeps the rest as free memory.
    func testProbeUsageAfterABurst() throws {
        try requireChild()
        func burst() -> [UnsafeMutableRawPointer] {   // the list of freed blocks goes with it
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
        guard let start = Allocator.usage() else { throw XCTSkip("no mallinfo2") }
        let kept = burst()
        guard let during = Allocator.usage() else { return XCTFail("mallinfo2 went away") }
        for p in kept { free(p) }
        // 768 blocks of 1 KiB stay in use; the 47 MiB freed count as free, not in use.
        XCTAssertLessThan(abs(during.inUse - start.inUse - 768 * 1024), 256 << 10)
        XCTAssertGreaterThan(during.free - start.free, 40 << 20)
    }

    /// The control sets glibc's default threshold first: a 1 MiB block is then mapped.
    func testProbeHeapThreshold() throws {
        try requireChild()
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

    // MARK: Child process

    static let probeVariable = "CLICKER_ALLOCATOR_PROBE"

    private func requireChild() throws {
        guard getenv(Self.probeVariable) != nil else { throw XCTSkip("runs in a child process started by its parent test") }
    }

    /// Runs `probe` of this class in a child process of the test binary; fails with the child's
    /// error lines unless it ran and passed.
    private func assertPassesInAFreshProcess(_ probe: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("allocator-\(probe)-\(getpid()).log").path
        defer { unlink(log) }
        let pid = try ChildTestProcess.spawn("ClickerCommandLineTests.AllocatorTests/\(probe)",
                                             environment: ["\(Self.probeVariable)=1"], output: log)
        var status: Int32 = 0
        XCTAssertEqual(waitpid(pid, &status, 0), pid, file: file, line: line)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        let errors = output.split(separator: "\n").filter { $0.contains("error") }.joined(separator: "\n")
        XCTAssertEqual(status, 0, "\(probe) failed in its process:\n\(errors)", file: file, line: line)
        XCTAssertTrue(output.contains("\(probe)' passed"), "\(probe) ran and passed", file: file, line: line)
    }
}
#endif
