// A pseudo-terminal pair for tests and benchmarks only: not part of TerminalView's API.
#if canImport(Glibc)
import Glibc
#endif
import TerminalView

#if os(Linux)
/// A pseudo-terminal pair, so tests and benchmarks can run a `TerminalSession` on a real terminal
/// that they type into and read from (the view writes to `secondary`; `primary` is the emulator side).
public final class PseudoTerminal: Sendable {
    public let primary: Int32
    public let secondary: Int32

    /// Opens a pair of `width`×`height` cells. The primary side does not block on reads.
    public init(width: UInt16, height: UInt16) throws(TerminalError) {
        // posix_openpt/grantpt/unlockpt by hand: Glibc's module does not export them.
        let TIOCSPTLCK: UInt = 0x4004_5431, TIOCGPTN: UInt = 0x8004_5430  // _IOW('T', 0x31, int), _IOR('T', 0x30, uint)
        let p = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard p >= 0 else { throw .system(call: "open /dev/ptmx", errno: errno) }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard ioctl(p, TIOCSPTLCK, &unlock) == 0, ioctl(p, TIOCGPTN, &number) == 0 else {
            let e = errno
            close(p)
            throw .system(call: "ioctl(ptmx)", errno: e)
        }
        let s = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard s >= 0 else {
            let e = errno
            close(p)
            throw .system(call: "open /dev/pts/\(number)", errno: e)
        }
        _ = fcntl(p, F_SETFL, fcntl(p, F_GETFL) | O_NONBLOCK)
        primary = p
        secondary = s
        resize(width: width, height: height)
    }

    deinit {
        close(primary)
        close(secondary)
    }

    /// Sets the size the secondary side reports (and sends SIGWINCH to its foreground group, if any).
    public func resize(width: UInt16, height: UInt16) {
        var ws = winsize(ws_row: height, ws_col: width, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(primary, UInt(TIOCSWINSZ), &ws)
    }

    /// Types `bytes` as if on the keyboard.
    public func type(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { write(primary, $0.baseAddress, $0.count) }
    }

    /// Everything written to the terminal and not read yet.
    public func readAvailable() -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(primary, &chunk, chunk.count)
            if n <= 0 { return out }
            out += chunk[0..<n]
        }
    }
}
#endif
