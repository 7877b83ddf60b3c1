#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import TerminalTestSupport
import TerminalView
import XCTest

/// Terminal I/O against a pseudo-terminal: raw mode, alternate screen, size, keys, SIGWINCH, restore.
final class TerminalSessionTests: XCTestCase {
    struct NoPTY: Error {}

    /// Opens a pseudo-terminal pair via /dev/ptmx (posix_openpt is hidden by Glibc's module map).
    func openPTY() throws -> (master: Int32, slave: Int32) {
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        guard master >= 0 else { XCTFail("cannot open /dev/ptmx: errno \(errno)"); throw NoPTY() }
        // Linux ioctls (asm-generic/ioctls.h): TIOCSPTLCK = _IOW('T', 0x31, int), TIOCGPTN = _IOR('T', 0x30, unsigned int).
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard ioctl(master, 0x4004_5431, &unlock) == 0, ioctl(master, 0x8004_5430, &number) == 0 else {
            XCTFail("cannot unlock pseudo-terminal: errno \(errno)")
            throw NoPTY()
        }
        let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        guard slave >= 0 else { XCTFail("cannot open /dev/pts/\(number): errno \(errno)"); throw NoPTY() }
        return (master, slave)
    }

    func readAll(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while poll(&pfd, 1, 100) > 0 {
            var buf = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &buf, buf.count)
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return out
    }

    func testSessionOnAPseudoTerminal() throws {
        let (master, slave) = try openPTY()
        defer { close(master); close(slave) }
        var ws = winsize(ws_row: 30, ws_col: 100, ws_xpixel: 0, ws_ypixel: 0)
        XCTAssertEqual(ioctl(master, UInt(TIOCSWINSZ), &ws), 0)
        var before = termios()
        tcgetattr(slave, &before)
        XCTAssertNotEqual(before.c_lflag & tcflag_t(ECHO | ICANON), 0)
        XCTAssertFalse(TerminalSession.isTerminal(-1))
        XCTAssertThrowsError(try TerminalSession(input: open("/dev/null", O_RDONLY), output: slave, restoreOnSignals: false))

        let session = try TerminalSession(input: slave, output: slave, restoreOnSignals: false)
        XCTAssertEqual(session.size(), TerminalSize(width: 100, height: 30))
        var raw = termios()
        tcgetattr(slave, &raw)
        XCTAssertEqual(raw.c_lflag & tcflag_t(ECHO | ICANON | ISIG), 0, "raw mode")
        let entered = readAll(master)
        XCTAssertTrue(entered.starts(with: TerminalSequences.enter), "alternate screen + hidden cursor")

        var decoder = KeyDecoder()
        XCTAssertEqual(write(master, "q\u{1B}[A", 4), 4)
        var events: [TerminalEvent] = []
        for _ in 0..<10 where events.count < 2 { events += session.readEvents(timeout: .milliseconds(200), decoder: &decoder) }
        XCTAssertEqual(events, [.key(.character("q")), .key(.up)])

        ws = winsize(ws_row: 40, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0)
        XCTAssertEqual(ioctl(master, UInt(TIOCSWINSZ), &ws), 0)
        raise(SIGWINCH)
        events = session.readEvents(timeout: .milliseconds(500), decoder: &decoder)
        XCTAssertEqual(events, [.resize(TerminalSize(width: 120, height: 40))])
        XCTAssertEqual(session.readEvents(timeout: .milliseconds(20), decoder: &decoder), [])

        session.write(Array("frame".utf8))
        XCTAssertEqual(readAll(master), Array("frame".utf8))
        session.restore()
        var after = termios()
        tcgetattr(slave, &after)
        XCTAssertEqual(after.c_lflag, before.c_lflag, "terminal mode restored")
        XCTAssertEqual(after.c_iflag, before.c_iflag)
        let left = readAll(master)
        XCTAssertTrue(left.starts(with: TerminalSequences.leave) || String(decoding: left, as: UTF8.self).contains("\u{1B}[?1049l"))
        session.restore()
        XCTAssertEqual(readAll(master), [], "restore is idempotent")
    }

    /// A full terminal whose file is non-blocking (a shell can leave O_NONBLOCK on a shared tty):
    /// the writer waits in poll(2) for room, off the cooperative pool, instead of retrying EAGAIN in
    /// a loop, and everything arrives, in order, once the terminal is read.
    func testWriteToAFullNonBlockingTerminalWaitsWithoutSpinning() throws {
        let pty = try PseudoTerminal(width: 80, height: 24)
        _ = pty.readAvailable()
        XCTAssertEqual(fcntl(pty.secondary, F_SETFL, fcntl(pty.secondary, F_GETFL) | O_NONBLOCK), 0)
        // More than a pseudo-terminal holds in all its buffers (4 KiB in the line discipline, at
        // most 64 KiB in flight): the write cannot end before the other side reads.
        let payload = (0..<(256 * 1024)).map { UInt8(97 + $0 % 26) }  // letters: no output translation applies
        let calls = Mutex(0)
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let n = TerminalSession.writeAll(pty.secondary, payload)
            calls.withLock { $0 = n }
            finished.signal()
        }
        // A writer that retried on EAGAIN would make hundreds of thousands of write(2) calls here.
        XCTAssertEqual(finished.wait(timeout: .now() + .milliseconds(300)), .timedOut,
                       "256 KiB fit into the terminal: this test checked nothing")
        var got: [UInt8] = []
        var p = pollfd(fd: pty.primary, events: Int16(POLLIN), revents: 0)
        while got.count < payload.count, poll(&p, 1, 5000) > 0 { got += pty.readAvailable() }
        XCTAssertEqual(finished.wait(timeout: .now() + .seconds(30)), .success)
        XCTAssertEqual(got.count, payload.count)
        XCTAssertEqual(got, payload)
        // Each wake-up from poll(2) moves at least the tty's wake-up threshold (256 bytes), so a
        // waiting writer needs about 2 calls per 256 bytes at the very most.
        let n = calls.withLock { $0 }
        XCTAssertLessThan(n, 2 * payload.count / 256 + 16, "the writer retried on EAGAIN: \(n) write(2) calls")
        XCTAssertGreaterThan(n, 1, "the write went through at once: the terminal was never full")
    }
}
