#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CDBus

/// The socket side of ``DBusSignalReader``: the bus address, connecting, authenticating, whole writes,
/// and the buffer messages are read into. Blocking calls: only the reader's own thread makes them.
enum WireSocket {
    static func failure(_ what: String) -> DBusError {
        DBusError(name: DBusError.failed, message: "\(what): \(String(cString: strerror(errno)))")
    }

    /// The first `unix:` entry of a bus address (`path=` or `abstract=`), parsed and unescaped by libdbus.
    static func unixAddress(_ address: String) throws -> (path: String, abstract: Bool) {
        guard !address.utf8.contains(0) else { throw DBusError(name: DBusError.invalidArgs, message: "bad address") }
        var err = CDBus.DBusError()
        dbus_error_init(&err)
        var entries: UnsafeMutablePointer<OpaquePointer?>?
        var count: Int32 = 0
        guard dbus_parse_address(address, &entries, &count, &err) != 0, let entries else { throw DBusError.consume(&err) }
        defer { dbus_address_entries_free(entries) }
        for i in 0..<Int(count) {
            guard let e = entries[i], let method = dbus_address_entry_get_method(e),
                  String(cString: method) == "unix" else { continue }
            if let p = dbus_address_entry_get_value(e, "path") { return (String(cString: p), false) }
            if let p = dbus_address_entry_get_value(e, "abstract") { return (String(cString: p), true) }
        }
        throw DBusError(name: DBusError.failed, message: "no unix:path= or unix:abstract= entry in '\(address)'")
    }

    /// A connected stream socket (close-on-exec).
    static func connect(path: String, abstract: Bool) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket") }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let name = Array(path.utf8)
        let offset = abstract ? 1 : 0   // an abstract name starts with a NUL
        let room = MemoryLayout.size(ofValue: addr.sun_path) - 1
        guard name.count + offset <= room else {
            _ = close(fd)
            throw DBusError(name: DBusError.invalidArgs, message: "socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { b in
            for (i, c) in name.enumerated() { b[offset + i] = c }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + offset + name.count + (abstract ? 0 : 1))
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        guard rc == 0 else {
            let e = failure("connect \(path)")
            _ = close(fd)
            throw e
        }
        return fd
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw failure("write")
            }
            done += n
        }
    }

    /// SASL EXTERNAL with our uid: the bus then knows who we are from the socket's credentials.
    static func authenticate(_ fd: Int32) throws {
        let uid = String(getuid()).utf8.map { String($0, radix: 16) }.joined()
        try writeAll(fd, [0] + Array("AUTH EXTERNAL \(uid)\r\n".utf8))
        var line: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256)
        // The bus answers with one line and says nothing more until BEGIN.
        while !(line.count >= 2 && line[line.count - 2] == 13 && line[line.count - 1] == 10) {
            guard line.count < 4096 else { throw DBusError(name: DBusError.failed, message: "authentication: reply too long") }
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw DBusError(name: DBusError.disconnected, message: "authentication: bus closed the connection") }
            line += chunk[0..<n]
        }
        let reply = String(decoding: line.dropLast(2), as: UTF8.self)
        guard reply.hasPrefix("OK ") else {
            throw DBusError(name: DBusError.accessDenied, message: "authentication refused: \(reply)")
        }
        try writeAll(fd, Array("BEGIN\r\n".utf8))
    }
}

/// The bytes read from the socket and not yet consumed, split into messages by their headers' lengths.
/// Grows to hold the largest message seen (at most ``DBusWireMessage/maximumLength``).
final class WireReadBuffer {
    private var storage: UnsafeMutableRawBufferPointer
    private var start = 0
    private var filled = 0

    init(capacity: Int) {
        storage = .allocate(byteCount: capacity, alignment: 8)
    }

    deinit { storage.deallocate() }

    /// Reads what the socket has (blocking unless `dontWait`): the byte count, 0 at the end of the
    /// stream, -1 with errno set.
    func read(from fd: Int32, dontWait: Bool) -> Int {
        if start == filled {
            start = 0
            filled = 0
        } else if filled == storage.count {
            compact()
        }
        let n = recv(fd, storage.baseAddress! + filled, storage.count - filled, dontWait ? Int32(MSG_DONTWAIT) : 0)
        if n > 0 { filled += n }
        return n
    }

    /// The next whole message, or nil until more bytes arrive. Throws when the bytes cannot begin a
    /// message (the stream's framing is lost). The bytes stay valid until the next `read`.
    func next() throws -> UnsafeRawBufferPointer? {
        guard filled - start >= DBusWireMessage.prefixLength else { return nil }
        let total = try DBusWireMessage.frameLength(UnsafeRawBufferPointer(rebasing: storage[start..<filled]))
        guard filled - start >= total else {
            if total > storage.count - start { makeRoom(for: total) }
            return nil
        }
        defer { start += total }
        return UnsafeRawBufferPointer(rebasing: storage[start..<(start + total)])
    }

    private func compact() {
        guard start > 0 else { return }
        let base = storage.baseAddress!
        memmove(base, base + start, filled - start)
        filled -= start
        start = 0
    }

    private func makeRoom(for total: Int) {
        compact()
        guard total > storage.count else { return }
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: total, alignment: 8)
        bigger.copyMemory(from: UnsafeRawBufferPointer(rebasing: storage[0..<filled]))
        storage.deallocate()
        storage = bigger
    }
}
