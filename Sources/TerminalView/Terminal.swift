// Terminal I/O for the live view: raw mode, alternate screen, size, keys, restore on exit and signals.
// Everything else in this module is pure; only this file touches the terminal.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization   // not Foundation: clicker-vote links this module, and Foundation brings ICU

/// Terminal size in cells.
public struct TerminalSize: Sendable, Hashable {
    public var width: Int
    public var height: Int
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

/// Input from the terminal.
public enum TerminalEvent: Sendable, Hashable {
    case key(Key)
    /// The window size changed (SIGWINCH).
    case resize(TerminalSize)
    /// The input was closed.
    case endOfInput
}

public enum TerminalError: Error, Sendable, Hashable {
    case notATerminal
    case system(call: String, errno: Int32)
}

/// Escape sequences used around the live view.
public enum TerminalSequences {
    /// Alternate screen on, cursor hidden, screen cleared.
    public static let enter = Array("\u{1B}[?1049h\u{1B}[?25l\u{1B}[0m\u{1B}[2J".utf8)
    /// Attributes reset, cursor shown, alternate screen off.
    public static let leave = Array("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l".utf8)
}

// State shared with signal handlers. It is written only by `TerminalSession.init` (before any handler is
// installed) and by `restore` under `sessionLock`; the handlers only read it and call async-signal-safe
// functions (tcsetattr, write, signal, raise), so no Swift runtime or lock is used from a handler.
nonisolated(unsafe) private var savedTermios = termios()
nonisolated(unsafe) private var savedInputFD: Int32 = -1
nonisolated(unsafe) private var savedOutputFD: Int32 = -1
nonisolated(unsafe) private var terminalActive: Int32 = 0
nonisolated(unsafe) private var wakeWriteFD: Int32 = -1
private let sessionLock = Mutex(())
// Allocated once (never freed) by the first session, before handlers exist: handlers must not run lazy
// global initialisers.
nonisolated(unsafe) private var leaveBytes: UnsafeMutableBufferPointer<UInt8>?

/// Restores the terminal from any context (signal handler, atexit). Async-signal-safe.
private func restoreTerminalUnsafe() {
    guard terminalActive != 0 else { return }
    terminalActive = 0
    _ = tcsetattr(savedInputFD, TCSAFLUSH, &savedTermios)
    if let b = leaveBytes, let base = b.baseAddress { _ = write(savedOutputFD, base, b.count) }
}

private func restoringSignalHandler(_ sig: Int32) {
    restoreTerminalUnsafe()
    signal(sig, SIG_DFL)
    raise(sig)
}

private func winchHandler(_ sig: Int32) {
    var b: UInt8 = 1
    if wakeWriteFD >= 0 { _ = write(wakeWriteFD, &b, 1) }
}

/// The full-screen terminal session: raw mode, alternate screen, hidden cursor. Only one at a time.
///
/// The terminal is restored by `restore()`, at exit, and on fatal signals; with `restoreOnSignals`
/// also on SIGINT/SIGTERM/SIGHUP/SIGQUIT (then the signal's default action runs). A caller that handles
/// SIGTERM itself (e.g. a service lifecycle) passes `restoreOnSignals: false` and calls `restore()`.
public final class TerminalSession: Sendable {
    public let inputFD: Int32
    public let outputFD: Int32
    private let wakeReadFD: Int32
    private let wakeWrite: Int32
    /// Where `write(_:) async` does its blocking writes.
    private let writer = DispatchQueue(label: "clicker.terminal.write")

    /// Whether `fd` is a terminal.
    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    /// The size of the terminal on `fd`, or nil.
    public static func size(of fd: Int32) -> TerminalSize? {
        var ws = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &ws) == 0, ws.ws_col > 0, ws.ws_row > 0 else { return nil }
        return TerminalSize(width: Int(ws.ws_col), height: Int(ws.ws_row))
    }

    /// Enters raw mode and the alternate screen.
    public init(input: Int32 = STDIN_FILENO, output: Int32 = STDOUT_FILENO, restoreOnSignals: Bool = true) throws {
        guard Self.isTerminal(input), Self.isTerminal(output) else { throw TerminalError.notATerminal }
        inputFD = input
        outputFD = output
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw TerminalError.system(call: "pipe", errno: errno) }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeReadFD = fds[0]
        wakeWrite = fds[1]

        try sessionLock.withLock { _ in try enter(input: input, output: output, wakeWriteFD: fds[1], restoreOnSignals: restoreOnSignals) }
    }

    /// Saves the terminal mode, switches to raw mode and the alternate screen, and installs the
    /// handlers that restore it. Runs under `sessionLock`.
    private func enter(input: Int32, output: Int32, wakeWriteFD wakeFD: Int32, restoreOnSignals: Bool) throws {
        var original = termios()
        guard tcgetattr(input, &original) == 0 else { throw TerminalError.system(call: "tcgetattr", errno: errno) }
        savedTermios = original
        if leaveBytes == nil {
            let b = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: TerminalSequences.leave.count)
            _ = b.initialize(from: TerminalSequences.leave)
            leaveBytes = b
        }
        savedInputFD = input
        savedOutputFD = output
        wakeWriteFD = wakeFD

        var raw = original
        raw.c_iflag &= ~tcflag_t(BRKINT | ICRNL | INPCK | ISTRIP | IXON)
        raw.c_cflag |= tcflag_t(CS8)
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | IEXTEN | ISIG)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(input, TCSAFLUSH, &raw) == 0 else { throw TerminalError.system(call: "tcsetattr", errno: errno) }
        terminalActive = 1

        Self.install(winchHandler, for: [SIGWINCH], flags: Int32(truncatingIfNeeded: SA_RESTART))
        Self.install(restoringSignalHandler, for: [SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE],
                     flags: Int32(truncatingIfNeeded: SA_RESETHAND))
        if restoreOnSignals {
            Self.install(restoringSignalHandler, for: [SIGINT, SIGTERM, SIGHUP, SIGQUIT], flags: Int32(truncatingIfNeeded: SA_RESETHAND))
        }
        atexit { restoreTerminalUnsafe() }
        write(TerminalSequences.enter)
    }

    deinit {
        restore()
        close(wakeReadFD)
    }

    private static func install(_ handler: @convention(c) (Int32) -> Void, for signals: [Int32], flags: Int32) {
        for sig in signals {
            var sa = sigaction()
            sa.__sigaction_handler.sa_handler = handler
            sigemptyset(&sa.sa_mask)
            sa.sa_flags = flags
            _ = sigaction(sig, &sa, nil)
        }
    }

    /// The current size, or nil.
    public func size() -> TerminalSize? { Self.size(of: outputFD) }

    /// Writes all bytes in the calling thread. When the terminal's file is non-blocking (a shell may
    /// leave O_NONBLOCK on a shared tty) and full, it waits in poll(2) until it can write again,
    /// instead of retrying in a loop. Blocks: from async code use `write(_:) async`.
    public func write(_ bytes: [UInt8]) {
        Self.writeAll(outputFD, bytes)
    }

    /// Writes all bytes on the session's own serial queue, off Swift's cooperative pool (a slow or
    /// stopped terminal then holds that queue, not a pool thread). Writes keep their order.
    public func write(_ bytes: [UInt8]) async {
        let fd = outputFD
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            writer.async {
                Self.writeAll(fd, bytes)
                c.resume()
            }
        }
    }

    /// Writes all of `bytes` to `fd`, waiting in poll(2) whenever it is full. Returns how many
    /// write(2) calls it took, so that a test can tell waiting from retrying.
    @discardableResult
    package static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int {
        var calls = 0
        bytes.withUnsafeBytes { buf in
            guard var p = buf.baseAddress else { return }
            var left = buf.count
            while left > 0 {
                calls += 1
                let n = Glibc.write(fd, p, left)
                if n < 0 {
                    if errno == EINTR { continue }
                    if errno == EAGAIN || errno == EWOULDBLOCK {
                        var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                        let r = poll(&pfd, 1, -1)
                        if r < 0, errno != EINTR { return }
                        if r > 0, pfd.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { return }
                        continue
                    }
                    return
                }
                p += n
                left -= n
            }
        }
        return calls
    }

    /// Waits up to `timeout` for input or a resize; returns the events (possibly none).
    /// Keep one `KeyDecoder` per session and pass it in.
    public func readEvents(timeout: Duration, decoder: inout KeyDecoder) -> [TerminalEvent] {
        var pfds = [pollfd(fd: inputFD, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: wakeReadFD, events: Int16(POLLIN), revents: 0)]
        let ms = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let r = poll(&pfds, 2, ms)
        guard r > 0 else { return [] }
        var events: [TerminalEvent] = []
        if pfds[1].revents & Int16(POLLIN) != 0 {
            // 1: SIGWINCH; 2: `interruptRead()`.
            var sink = [UInt8](repeating: 0, count: 64)
            var resized = false
            while true {
                let n = read(wakeReadFD, &sink, sink.count)
                if n <= 0 { break }
                resized = resized || sink[0..<n].contains(1)
            }
            if resized, let s = size() { events.append(.resize(s)) }
        }
        if pfds[0].revents & Int16(POLLIN | POLLHUP) != 0 {
            var buf = [UInt8](repeating: 0, count: 256)
            let n = read(inputFD, &buf, buf.count)
            if n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN) {
                events.append(.endOfInput)
            } else if n > 0 {
                events += decoder.feed(buf[0..<n]).map(TerminalEvent.key)
            }
        }
        return events
    }

    /// Wakes a `readEvents` waiting in another thread (it returns what it has, possibly nothing),
    /// so that a reader thread can be told to stop without a timeout.
    public func interruptRead() {
        var b: UInt8 = 2
        _ = Glibc.write(wakeWrite, &b, 1)
    }

    /// Leaves the alternate screen, shows the cursor and restores the saved terminal mode. Idempotent.
    public func restore() {
        sessionLock.withLock { _ in restoreTerminalUnsafe() }
    }
}
