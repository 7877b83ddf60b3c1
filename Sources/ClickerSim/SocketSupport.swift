#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerTransport

/// Frames on the air socket: a 4-byte big-endian length, then that many bytes (type, then body).
enum AirFrame {
    /// Longest frame body accepted (a GATT value is at most 512 bytes; advertising data 31).
    static let maxLength = 1024

    enum Kind: UInt8 {
        // peripheral → host (each body starts with a 4-byte request id)
        case hello = 0x01  // version u16, address u64 (0 = assign), rssi i16 (0x7FFF = default)
        case advertise = 0x02  // companyID u16, interval µs u32, connectable u8, data
        case stopAdvertising = 0x03
        case publish = 0x04  // service 16, characteristic 16, value
        case shutdown = 0x05
        case listen = 0x06  // stream u32 (the peripheral's), companyID u16, window µs u32, interval µs u32
        case stopListening = 0x07  // stream u32
        case attacker = 0x08  // (empty) the device becomes an attacker's radio (AirAttacker.swift)
        // host → peripheral
        case result = 0x81  // request id u32, code u8, then (hello) address u64 or (error) UTF-8 message
        case report = 0x82  // unsolicited: stream u32, then a report (`ListenReportCoding`)
    }

    enum Code: UInt8 {
        case ok = 0, unsupported = 1, malformed = 2, notIntroduced = 3, addressInUse = 4, unknownType = 5
    }

    /// Version 1 throughout: listening (0x06, 0x07, 0x82) was added compatibly. An older host answers
    /// `listen` with `unknownType`; an older peripheral never asks, so it never gets a 0x82.
    static let version: UInt16 = 1

    static func encode(_ kind: Kind, _ body: [UInt8]) -> [UInt8] {
        let n = body.count + 1
        return [UInt8(truncatingIfNeeded: n >> 24), UInt8(truncatingIfNeeded: n >> 16),
                UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n), kind.rawValue] + body
    }
}

/// Appends big-endian integers.
struct ByteWriter {
    var bytes: [UInt8] = []
    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { bytes += [UInt8(v >> 8), UInt8(truncatingIfNeeded: v)] }
    mutating func u32(_ v: UInt32) { for k in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt32(k))) } }
    mutating func u64(_ v: UInt64) { for k in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(k))) } }
    mutating func raw(_ b: [UInt8]) { bytes += b }
}

/// Reads big-endian integers; every read is bounds-checked and returns nil past the end.
struct ByteReader {
    let bytes: ArraySlice<UInt8>
    var position: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        position = bytes.startIndex
    }

    var remaining: Int { bytes.endIndex - position }

    mutating func take(_ n: Int) -> ArraySlice<UInt8>? {
        guard n >= 0, remaining >= n else { return nil }
        defer { position += n }
        return bytes[position..<(position + n)]
    }

    mutating func u8() -> UInt8? { take(1)?.first }
    mutating func u16() -> UInt16? { take(2).map { $0.reduce(0) { $0 << 8 | UInt16($1) } } }
    mutating func u32() -> UInt32? { take(4).map { $0.reduce(0) { $0 << 8 | UInt32($1) } } }
    mutating func u64() -> UInt64? { take(8).map { $0.reduce(0) { $0 << 8 | UInt64($1) } } }
    mutating func rest() -> [UInt8] { Array(take(remaining) ?? []) }
}

/// Splits a byte stream into frames. Garbage (a length of 0 or above the maximum) is unrecoverable:
/// the stream has lost its framing, and the caller must drop the connection.
struct FrameAssembler {
    private var buffer: [UInt8] = []

    enum Next { case frame(kind: UInt8, body: ArraySlice<UInt8>), needMore, badLength(Int) }

    mutating func append(_ data: ArraySlice<UInt8>) { buffer += data }

    mutating func next() -> Next {
        guard buffer.count >= 4 else { return .needMore }
        let n = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
        guard n >= 1, n <= AirFrame.maxLength else { return .badLength(n) }
        guard buffer.count >= 4 + n else { return .needMore }
        let kind = buffer[4]
        let body = Array(buffer[5..<(4 + n)])
        buffer.removeFirst(4 + n)
        return .frame(kind: kind, body: body[...])
    }
}

enum SocketError {
    static func describe(_ what: String) -> String {
        "\(what): \(String(cString: strerror(errno)))"
    }
}

/// Unix-domain socket helpers.
enum UnixSocket {
    static func address(_ path: String) throws -> sockaddr_un {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw TransportError.unsupported("socket path must be 1...\(capacity - 1) bytes: \(path)")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
            raw[bytes.count] = 0
        }
        return addr
    }

    static func make() throws -> Int32 {
        #if canImport(Glibc)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw TransportError.radioUnavailable(SocketError.describe("socket")) }
        return fd
    }

    static func connect(_ fd: Int32, _ path: String) throws {
        var addr = try address(path)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else {
            // No socket file, or one nobody listens on (its host died): there is no air to join.
            if errno == ENOENT || errno == ECONNREFUSED { throw AirSocketError.noAir(path: path) }
            throw TransportError.radioUnavailable(SocketError.describe("connect \(path)"))
        }
    }

    static func bind(_ fd: Int32, _ path: String) throws {
        var addr = try address(path)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else { throw TransportError.radioUnavailable(SocketError.describe("bind \(path)")) }
    }

    static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }

    /// Writes all of `bytes` (blocking socket) without raising SIGPIPE. Returns false on failure.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8], flags: Int32 = 0) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                send(fd, raw.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL) | flags)
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }
}
