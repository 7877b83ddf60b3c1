import ClickerCommandLine
#if canImport(Glibc)
import Glibc
#endif
import XCTest

/// `clicker-vote` reads its answers from stdin with ``InputLines``: lines as `readLine` gives them, and
/// no stdio lock held while it waits (glibc 2.41's `exit()` waits for that lock).
final class InputLinesTests: XCTestCase {
    func testBytesAreCutIntoLinesAsReadLineCutsThem() {
        var s = LineSplitter()
        XCTAssertEqual(s.take(Array("A\nB".utf8)), ["A"])
        XCTAssertEqual(s.take(Array("C\r\n\n".utf8)), ["BC", ""])
        XCTAssertEqual(s.take([0x44, 0xFF, 0x0A]), ["D\u{FFFD}"])
        XCTAssertEqual(s.take(Array("last".utf8)), [])
        XCTAssertEqual(s.finish(), "last")
        XCTAssertNil(s.finish())
    }

    func testAPipeGivesItsLinesThenEnds() async throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let lines = InputLines.stream(fd: fds[0])
        let text = Array("A\nB\r\nC".utf8)
        XCTAssertEqual(text.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }, text.count)
        close(fds[1])
        var got: [String] = []
        for await line in lines { got.append(line) }
        close(fds[0])
        XCTAssertEqual(got, ["A", "B", "C"])
    }

    /// While the reader waits on stdin, stdin's stdio lock is free: `exit()` in glibc 2.41 flushes every
    /// stream under its lock, and a reader blocked in `getline` (`readLine`) holds it, so the process
    /// never exits (clicker-vote after SIGTERM in the Debian 13 guest).
    func testWaitingForALineOnStdinLeavesTheStdioLockFree() async throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let saved = dup(STDIN_FILENO)
        XCTAssertGreaterThanOrEqual(saved, 0)
        XCTAssertEqual(dup2(fds[0], STDIN_FILENO), STDIN_FILENO)
        defer {
            dup2(saved, STDIN_FILENO)
            close(saved)
            close(fds[0])
        }
        let lines = InputLines.stream()
        var reader = lines.makeAsyncIterator()
        try await Task.sleep(for: .milliseconds(300))  // the thread is blocked in read(2) by now
        let input = try XCTUnwrap(Self.stdinStream())
        let locked = ftrylockfile(input)
        if locked == 0 { funlockfile(input) }
        XCTAssertEqual(locked, 0, "the stdin reader holds stdin's stdio lock while it waits")
        let text = Array("X\n".utf8)
        XCTAssertEqual(text.withUnsafeBytes { write(fds[1], $0.baseAddress, $0.count) }, text.count)
        let first = await reader.next()
        XCTAssertEqual(first, "X")
        close(fds[1])
        let end = await reader.next()
        XCTAssertNil(end)
    }

    /// glibc's `stdin` stream, through its symbol (to Swift 6 the C global is shared mutable state).
    static func stdinStream() -> UnsafeMutablePointer<FILE>? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "stdin") else { return nil }  // RTLD_DEFAULT
        return symbol.load(as: UnsafeMutablePointer<FILE>?.self)
    }
}
