#if canImport(Glibc)
import Glibc
#endif
import OSThreads

/// Lines from a file descriptor (standard input: typed answers, or a board's script), read on a thread
/// of their own so the cooperative pool never blocks.
///
/// Read with read(2), not through stdio (`readLine`): glibc's `getline` holds the stream's lock while it
/// waits for input, and glibc 2.41 (Debian 13) has `exit()` take the lock of every stream to flush it. A
/// `clicker-vote` whose stdin was open but silent (a terminal, a board's pipe) then never finished exiting
/// after SIGTERM: it had withdrawn its advertisement and its GATT application, and hung in `exit()`.
public enum InputLines {
    public static func stream(fd: Int32 = STDIN_FILENO) -> AsyncStream<String> {
        AsyncStream { continuation in
            let started = OSThread.start(name: "clicker-stdin") {
                var splitter = LineSplitter()
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    guard n > 0 else { break }
                    for line in splitter.take(buffer[0..<n]) { continuation.yield(line) }
                }
                if let last = splitter.finish() { continuation.yield(last) }
                continuation.finish()
            }
            // Without a thread for stdin the first answer still stands; no later ones can arrive.
            if started == nil { continuation.finish() }
        }
    }
}

/// Cuts bytes into lines as `readLine(strippingNewline: true)` does: at each "\n", without it or a "\r"
/// before it; what follows the last "\n" is one more line when the input ends. Bytes that are not UTF-8
/// are repaired (U+FFFD), as `readLine` does.
public struct LineSplitter: Sendable {
    var pending: [UInt8] = []

    public init() {}

    /// The lines that `bytes` complete.
    public mutating func take<C: Collection>(_ bytes: C) -> [String] where C.Element == UInt8 {
        var lines: [String] = []
        for b in bytes {
            if b == 0x0A {
                lines.append(Self.text(pending))
                pending.removeAll(keepingCapacity: true)
            } else {
                pending.append(b)
            }
        }
        return lines
    }

    /// The unfinished last line at the end of the input, if there is one.
    public mutating func finish() -> String? {
        guard !pending.isEmpty else { return nil }
        defer { pending.removeAll() }
        return Self.text(pending)
    }

    static func text(_ bytes: [UInt8]) -> String {
        var line = bytes[...]
        if line.last == 0x0D { line = line.dropLast() }
        return String(decoding: line, as: UTF8.self)
    }
}
