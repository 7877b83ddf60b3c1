#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

func dupFD(_ fd: Int32) -> Int32 { dup(fd) }
func closeFD(_ fd: Int32) -> Int32 { close(fd) }

@inline(__always) func strlenC(_ p: UnsafePointer<CChar>) -> Int { strlen(p) }
@inline(__always) func memcmpC(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ n: Int) -> Int32 { memcmp(a, b, n) }
@inline(__always) func strcmpC(_ a: UnsafePointer<CChar>, _ b: UnsafePointer<CChar>) -> Int32 { strcmp(a, b) }
@inline(__always) func strncmpC(_ a: UnsafePointer<CChar>, _ b: UnsafePointer<CChar>, _ n: Int) -> Int32 { strncmp(a, b, n) }

/// Monotonic clock in nanoseconds.
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// CPU time consumed by the calling thread, in nanoseconds.
package func dbusThreadCPUNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// A self-pipe used to wake the dispatch thread: (read end, write end), both non-blocking.
func makeWakePipe() -> (Int32, Int32)? {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { return nil }
    for fd in fds {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }
    return (fds[0], fds[1])
}

func pokeFD(_ fd: Int32) {
    var one: UInt8 = 1
    _ = withUnsafePointer(to: &one) { write(fd, $0, 1) }
}

func drainFD(_ fd: Int32) {
    var buf = (UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0), UInt64(0))
    while withUnsafeMutableBytes(of: &buf, { read(fd, $0.baseAddress, $0.count) }) > 0 {}
}

/// Waits for `connFD` (and the wake descriptor). Returns when readable/writable, woken, or timed out.
/// Waits for the connection's socket (`connFD`; a negative descriptor is not watched) or the wake pipe.
func pollConnection(_ connFD: Int32, wantWrite: Bool, wakeFD: Int32, timeoutMs: Int32) -> (woken: Bool, error: Bool) {
    var fds = (pollfd(fd: connFD, events: Int16(POLLIN) | (wantWrite ? Int16(POLLOUT) : 0), revents: 0),
               pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
    let r = withUnsafeMutableBytes(of: &fds) { poll($0.baseAddress!.assumingMemoryBound(to: pollfd.self), 2, timeoutMs) }
    if r < 0 { return (false, errno != EINTR) }
    return (fds.1.revents & Int16(POLLIN) != 0, false)
}

func getenvString(_ name: String) -> String? {
    guard let p = getenv(name) else { return nil }
    let s = String(cString: p)
    return s.isEmpty ? nil : s
}

/// The CPU-time clock of the calling thread.
func currentThreadCPUClock() -> Int32? {
    var clock = clockid_t()
    return pthread_getcpuclockid(pthread_self(), &clock) == 0 ? clock : nil
}

func cpuNanos(of clock: Int32) -> UInt64? {
    var ts = timespec()
    guard clock_gettime(clock, &ts) == 0 else { return nil }
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

@inline(__always) func currentThreadID() -> UInt { UInt(pthread_self()) }
