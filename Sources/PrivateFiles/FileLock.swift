import Glibc

/// An exclusive advisory lock (flock) on a lock file beside the data it guards.
///
/// The data file itself is replaced by rename on every write, so a lock on it would be a lock on an
/// inode that the next writer unlinks; the lock file is never replaced.
public enum FileLock {
    /// Runs `body` while holding an exclusive flock on `path` (created 0600 if missing, never
    /// through a symbolic link). Blocks until the lock is free: call it off the cooperative pool.
    public static func withExclusiveLock<T>(_ path: String, _ body: () throws -> T) throws -> T {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        if fd < 0 {
            if errno == ELOOP { throw PrivateFileError.symlink(path) }
            throw PrivateFileError.cannotWrite(path, errno: errno)
        }
        defer { close(fd) }  // closing the last descriptor releases the lock
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw PrivateFileError.cannotRead(path, errno: errno) }
        guard UInt32(st.st_mode) & UInt32(S_IFMT) == UInt32(S_IFREG) else { throw PrivateFileError.notARegularFile(path) }
        guard st.st_uid == geteuid() else {
            throw PrivateFileError.wrongOwner(path, owner: st.st_uid, expected: geteuid())
        }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw PrivateFileError.cannotWrite(path, errno: errno) }
        }
        return try body()
    }
}
