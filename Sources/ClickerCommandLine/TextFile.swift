#if canImport(Glibc)
import Glibc
#endif

/// A text file named on the command line (a question file, a roster): a regular file of at most
/// `limit` bytes, in UTF-8. Each refusal says what the path is instead (a directory, a FIFO, a
/// device such as /dev/zero, a file too large) or, for text that is not UTF-8, the line and column
/// of the first byte that is not; never "permission" unless the system said so.
public enum TextFile {
    /// Why a file could not be read as text.
    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        /// open(2) or read(2) failed: the system's reason (no such file, permission denied, …).
        case system(String)
        case directory
        /// Not a regular file: a FIFO, a socket, a character or block device.
        case notRegular(kind: String)
        case tooLarge(bytes: Int, limit: Int)
        /// A byte sequence that is not UTF-8, at 1-based `line` and byte `column`.
        case notUTF8(line: Int, column: Int, byte: UInt8)
        /// A NUL byte: not text.
        case nul(line: Int, column: Int)

        public var description: String {
            switch self {
            case .system(let why): return why
            case .directory: return "it is a directory, not a file"
            case .notRegular(let kind): return "it is \(kind), not a regular file"
            case .tooLarge(let bytes, let limit): return "it is \(bytes) bytes or more, larger than \(limit) bytes"
            case .notUTF8(let line, let column, let byte):
                return "line \(line), column \(column): byte 0x\(String(byte, radix: 16, uppercase: true)) is not UTF-8 "
                    + "(save the file as UTF-8, e.g. `iconv -f latin1 -t utf-8`)"
            case .nul(let line, let column): return "line \(line), column \(column): a NUL byte; this is not a text file"
            }
        }

        /// The 1-based line the refusal is about, if any.
        public var line: Int? {
            switch self {
            case .notUTF8(let line, _, _), .nul(let line, _): return line
            default: return nil
            }
        }
    }

    /// The default bound: far above a lecture's question file or a campus course's roster.
    public static let defaultLimit = 16 << 20

    /// The text of the file at `path`. Opens without blocking (a FIFO with no writer would wait
    /// forever) and reads only a regular file, at most `limit` bytes.
    public static func read(_ path: String, limit: Int = defaultLimit) throws(Refusal) -> String {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw .system(String(cString: strerror(errno))) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .system(String(cString: strerror(errno))) }
        switch st.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw .directory
        case S_IFIFO: throw .notRegular(kind: "a FIFO (named pipe)")
        case S_IFSOCK: throw .notRegular(kind: "a socket")
        case S_IFCHR: throw .notRegular(kind: "a character device")
        case S_IFBLK: throw .notRegular(kind: "a block device")
        default: throw .notRegular(kind: "not a file")
        }
        if st.st_size > limit { throw .tooLarge(bytes: Int(st.st_size), limit: limit) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .system(String(cString: strerror(errno)))
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[..<n])
            if bytes.count > limit { throw .tooLarge(bytes: bytes.count, limit: limit) }
        }
        return try text(bytes)
    }

    /// `bytes` as a string, refused at the first NUL byte or byte sequence that is not UTF-8.
    public static func text(_ bytes: [UInt8]) throws(Refusal) -> String {
        var line = 1
        var lineStart = 0
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b < 0x80 {
                if b == 0 { throw .nul(line: line, column: i - lineStart + 1) }
                if b == 0x0A { line += 1; lineStart = i + 1 }
                i += 1
                continue
            }
            let n = sequenceLength(bytes, at: i)
            guard n > 0 else { throw .notUTF8(line: line, column: i - lineStart + 1, byte: b) }
            i += n
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The length of the well-formed UTF-8 sequence of 2 to 4 bytes at `i` (RFC 3629: no overlong
    /// forms, no surrogates, nothing above U+10FFFF), or 0.
    static func sequenceLength(_ b: [UInt8], at i: Int) -> Int {
        func cont(_ k: Int, _ low: UInt8 = 0x80, _ high: UInt8 = 0xBF) -> Bool {
            i + k < b.count && (low...high).contains(b[i + k])
        }
        switch b[i] {
        case 0xC2...0xDF: return cont(1) ? 2 : 0
        case 0xE0: return cont(1, 0xA0) && cont(2) ? 3 : 0
        case 0xE1...0xEC, 0xEE...0xEF: return cont(1) && cont(2) ? 3 : 0
        case 0xED: return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0
        case 0xF0: return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0
        case 0xF1...0xF3: return cont(1) && cont(2) && cont(3) ? 4 : 0
        case 0xF4: return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0
        default: return 0
        }
    }
}
