import Glibc

extension PrivateFiles {
    /// Creates `path` with `bytes`, mode 0600, only if nothing is there: returns false, writing
    /// nothing, when `path` exists (a file, a directory, even a dangling symbolic link).
    ///
    /// The data is written whole and flushed beside it by ``write(_:_:)`` under a random name, then
    /// hard-linked to `path` (link never replaces an existing name), so `path` never holds a partial file.
    public static func create(_ path: String, _ bytes: [UInt8]) throws(PrivateFileError) -> Bool {
        let tmp = path + ".new-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        try write(tmp, bytes)
        defer { unlink(tmp) }
        if link(tmp, path) != 0 {
            if errno == EEXIST { return false }
            throw .cannotWrite(path, errno: errno)
        }
        let dfd = open(directory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
        return true
    }
}
