#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Synchronization

/// Where log lines go. Normally to stderr. While the live view owns the terminal (`divert`), a line
/// written there would land in the middle of the picture, so lines go to a file instead (or stay on
/// stderr when stderr is the journal), and the latest line at `.notice` or above is kept for the
/// view's status line.
public final class LogRoute: Sendable {
    /// The latest important line; `sequence` grows with each one.
    public struct Notice: Sendable, Equatable {
        public var sequence: Int
        public var text: String
    }

    private struct State {
        var file: Int32 = -1
        var path: String?
        var latest: Notice?
    }

    private let state = Mutex(State())
    private let stderrFD: Int32
    /// stderr is connected to the systemd journal (`$JOURNAL_STREAM` names its device and inode).
    public let stderrIsJournal: Bool
    /// Notified when a new notice is kept.
    public let notices = ChangeFeed()
    /// Lines at this level or above become notices.
    public static let noticeLevel: Logger.Level = .notice

    public init(stderr: Int32 = STDERR_FILENO, environment: [String: String] = ProcessInfo.processInfo.environment) {
        stderrFD = stderr
        stderrIsJournal = Self.isJournal(stderr, environment["JOURNAL_STREAM"])
    }

    static func isJournal(_ fd: Int32, _ stream: String?) -> Bool {
        guard let parts = stream?.split(separator: ":"), parts.count == 2,
              let dev = UInt64(parts[0]), let ino = UInt64(parts[1]) else { return false }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino
    }

    /// From now on, lines go to `path` (appended; created 0600) unless stderr is the journal.
    /// Returns where they go, for the screen to say.
    @discardableResult
    public func divert(toFile path: String) throws -> String {
        if stderrIsJournal { return "the journal" }
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw LogRouteError(path: path, errno: errno) }
        let old = state.withLock { s -> Int32 in
            let old = s.file
            s.file = fd
            s.path = path
            return old
        }
        if old >= 0 { close(old) }
        return path
    }

    /// Lines go to stderr again. Returns the file they went to, if any.
    @discardableResult
    public func restore() -> String? {
        let (fd, path) = state.withLock { s -> (Int32, String?) in
            defer { s.file = -1; s.path = nil }
            return (s.file, s.path)
        }
        if fd >= 0 { close(fd) }
        return path
    }

    /// The file lines go to now, if diverted to one.
    public var path: String? { state.withLock { $0.path } }

    /// The latest line at `noticeLevel` or above.
    public var latest: Notice? { state.withLock { $0.latest } }

    /// Writes one formatted line. A small write of a log line, as swift-log's stream handler does.
    func write(_ line: String, level: Logger.Level, message: String) {
        let bytes = Array((line + "\n").utf8)
        let noticed = level >= Self.noticeLevel
        let fd = state.withLock { s -> Int32 in
            if noticed {
                s.latest = Notice(sequence: (s.latest?.sequence ?? 0) + 1, text: message)
            }
            return s.file >= 0 ? s.file : stderrFD
        }
        bytes.withUnsafeBytes { b in
            var p = b.baseAddress, left = b.count
            while left > 0, let base = p {
                let n = Glibc.write(fd, base, left)
                if n < 0 { if errno == EINTR { continue } else { break } }
                p = base + n
                left -= n
            }
        }
        if noticed { notices.signal() }
    }

    /// A swift-log handler writing through this route (for `LoggingSystem.bootstrap`).
    public func handler(label: String) -> any LogHandler { RoutedLogHandler(label: label, route: self) }
}

public struct LogRouteError: Error, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    public var description: String { "cannot open the log file \(path): \(String(cString: strerror(errno)))" }
}

/// swift-log's stream format (`2026-11-23T11:20:00+0000 info clicker.tally : message`) through a `LogRoute`.
struct RoutedLogHandler: LogHandler {
    let label: String
    let route: LogRoute
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = event.metadata.map { metadata.merging($0) { $1 } } ?? metadata
        let meta = all.isEmpty ? "" : " " + all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let text = "\(event.message)"
        route.write("\(Self.timestamp()) \(event.level) \(label) :\(meta) \(text)", level: event.level, message: text)
    }

    static func timestamp() -> String {
        var t = time(nil)
        var tm = tm()
        localtime_r(&t, &tm)
        var buffer = [CChar](repeating: 0, count: 32)
        let n = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &tm)
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
