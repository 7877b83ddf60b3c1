import Foundation
import XCTest

/// The built `clicker-tally` caps glibc's allocator at two arenas (``Allocator/limitArenas()``), so its heap does
/// not grow with the number of threads that ever allocated. Read from outside, in /proc/PID/maps, while
/// a simulated poll runs with its air, students and view threads.
final class MallocArenaTests: XCTestCase {
    /// glibc's extra arenas live in heaps of 64 MiB (HEAP_MAX_SIZE on 64-bit), aligned to 64 MiB: an
    /// anonymous read-write part, then the reserved rest with no access.
    static func arenaHeaps(maps: String) -> Int {
        let heap: UInt64 = 64 << 20
        struct Region { var start: UInt64, end: UInt64, perms: Substring, anonymous: Bool }
        let regions: [Region] = maps.split(separator: "\n").compactMap { line in
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 5, let dash = f[0].firstIndex(of: "-"),
                  let start = UInt64(f[0][..<dash], radix: 16),
                  let end = UInt64(f[0][f[0].index(after: dash)...], radix: 16) else { return nil }
            return Region(start: start, end: end, perms: f[1], anonymous: f[4] == "0" && f.count == 5)
        }
        var count = 0
        for (i, r) in regions.enumerated() where r.anonymous && r.perms == "rw-p" && r.start % heap == 0 {
            let end = i + 1 < regions.count && regions[i + 1].anonymous && regions[i + 1].perms == "---p"
                && regions[i + 1].start == r.end ? regions[i + 1].end : r.end
            if end - r.start == heap { count += 1 }
        }
        return count
    }

    /// Runs a simulated poll for 2 s and returns the most arena heaps seen while it ran.
    func mostArenaHeaps(environment extra: [String: String]) throws -> Int {
        let bin = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("clicker-tally").path
        guard FileManager.default.isExecutableFile(atPath: bin) else {
            throw XCTSkip("\(bin) not built (swift build --build-tests builds it)")
        }
        let dir = NSTemporaryDirectory() + "clicker-arena-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: bin)
        p.arguments = ["--simulate", "100", "--simulate-speed", "10", "--simulate-churn", "50", "--no-store",
                       "--join-code", "4821-K7QXM-3PF9A", "--duration", "2", "--json"]
        p.environment = ["XDG_RUNTIME_DIR": dir, "PATH": "/usr/bin:/bin"].merging(extra) { $1 }
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        var most = 0
        while p.isRunning {   // sampled for the whole run: the count only ever rises
            if let maps = try? String(contentsOfFile: "/proc/\(p.processIdentifier)/maps", encoding: .utf8) {
                most = max(most, Self.arenaHeaps(maps: maps))
            }
            usleep(50_000)
        }
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        return most
    }

    func testTheTallyKeepsAtMostOneArenaBesidesTheMainOne() throws {
        XCTAssertLessThanOrEqual(try mostArenaHeaps(environment: [:]), 1)
    }

    /// The control: the same run with glibc's own limit (eight per core) shows more, so the reading
    /// above can fail.
    func testWithoutTheCapTheSameRunHasMoreArenas() throws {
        let most = try mostArenaHeaps(environment: ["MALLOC_ARENA_MAX": "16"])
        XCTAssertGreaterThanOrEqual(most, 2, "8 seen here")
    }

    func testArenaHeapsAreRecognisedInMaps() {
        let maps = """
            55d0c0000000-55d0c0100000 r-xp 00000000 08:01 123 /usr/bin/clicker-tally
            7f2c44000000-7f2c44021000 rw-p 00000000 00:00 0
            7f2c44021000-7f2c48000000 ---p 00000000 00:00 0
            7f2c4c000000-7f2c4c800000 rw-p 00000000 00:00 0
            7f2c50000000-7f2c50021000 rw-p 00000000 00:00 0
            7f2c50021000-7f2c54000000 ---p 00000000 00:00 0
            7f2c54001000-7f2c54801000 rw-p 00000000 00:00 0
            """
        XCTAssertEqual(Self.arenaHeaps(maps: maps), 2, "two heaps; an 8 MiB stack and an unaligned map are not")
    }
}
