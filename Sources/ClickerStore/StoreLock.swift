import Foundation

/// An exclusive flock on `DATABASE.lock`, held as long as the store that took it: a second tally
/// on the same database is refused instead of counting beside the first.
///
/// The lock file holds the holder's process ID and name, for the message the next one gets.
/// The kernel drops the lock when the process ends, however it ends.
final class StoreLock: Sendable {
    /// Open for the lock's lifetime; only `deinit` closes it.
    private let fd: Int32

    init(database: String) throws {
        let path = database + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw StoreError.cannotLock(path: path, errno: errno) }
        var st = stat()
        guard fstat(fd, &st) == 0, UInt32(st.st_mode) & UInt32(S_IFMT) == UInt32(S_IFREG), st.st_uid == geteuid() else {
            close(fd)
            throw StoreError.cannotLock(path: path, errno: EPERM)
        }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            if e == EINTR { continue }
            let holder = Self.holder(fd)
            close(fd)
            if e == EWOULDBLOCK { throw StoreError.inUse(path: database, holder: holder) }
            throw StoreError.cannotLock(path: path, errno: e)
        }
        let me = Array("\(getpid()) \(ProcessInfo.processInfo.processName)\n".utf8)
        _ = ftruncate(fd, 0)
        _ = me.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        self.fd = fd
    }

    deinit {
        _ = ftruncate(fd, 0)
        close(fd)  // releases the lock
    }

    /// What the holder wrote: `1234 clicker-tally`, or nil. Only printable ASCII is kept.
    static func holder(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 128)
        let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        let text = String(decoding: buffer[..<n].filter { (0x20..<0x7F).contains($0) }, as: UTF8.self)
        return text.isEmpty ? nil : text
    }
}
