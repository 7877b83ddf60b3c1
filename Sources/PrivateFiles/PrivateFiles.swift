import Glibc

/// Errors of private-file handling, worded for the person at the keyboard.
public enum PrivateFileError: Error, Sendable, Equatable, CustomStringConvertible {
    case cannotCreateDirectory(String, errno: Int32)
    case cannotInspect(String, errno: Int32)
    case symlink(String)
    case notADirectory(String)
    case notARegularFile(String)
    case wrongOwner(String, owner: UInt32, expected: UInt32)
    case tooOpen(String, mode: UInt32)
    case cannotRead(String, errno: Int32)
    case tooLarge(String, limit: Int)
    case cannotWrite(String, errno: Int32)

    public var description: String {
        func octal(_ m: UInt32) -> String { "0" + String(m & 0o7777, radix: 8) }
        switch self {
        case .cannotCreateDirectory(let p, let e): return "cannot create \(p): \(errnoText(e))"
        case .cannotInspect(let p, let e): return "cannot inspect \(p): \(errnoText(e))"
        case .symlink(let p): return "\(p) is a symbolic link; refusing to use it (remove it, or point the path at a real directory)"
        case .notADirectory(let p): return "\(p) exists but is not a directory"
        case .notARegularFile(let p): return "\(p) is not a regular file"
        case .wrongOwner(let p, let o, let u):
            return "\(p) belongs to user \(o), not to you (user \(u)); refusing to use it"
        case .tooOpen(let p, let m):
            return "\(p) has mode \(octal(m)): other users may change it; run `chmod 700 \(p)` after checking its contents"
        case .cannotRead(let p, let e): return "cannot read \(p): \(errnoText(e))"
        case .tooLarge(let p, let limit): return "\(p) is larger than \(limit) bytes; it is not one of ours"
        case .cannotWrite(let p, let e): return "cannot write \(p): \(errnoText(e))"
        }
    }
}

func errnoText(_ e: Int32) -> String { String(cString: strerror(e)) }

/// Files that only their owner may read, written so that nobody else can plant, pre-create or
/// redirect them: the package's one private-file writer.
public enum PrivateFiles {
    /// Creates `path` (and missing parents) with mode 0700, then checks it with ``checkDirectory(_:)``.
    ///
    /// Parents that already exist (such as `$HOME`) are taken as they are; the last component must be
    /// a real directory (not a symbolic link), owned by the effective user, with no group or other
    /// permission bits.
    public static func makePrivateDirectory(_ path: String) throws(PrivateFileError) {
        var prefix = ""
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                throw .cannotCreateDirectory(prefix, errno: errno)
            }
        }
        try checkDirectory(path)
    }

    /// Refuses a directory that is a symbolic link, not a directory, owned by another user, or open
    /// to group or others.
    public static func checkDirectory(_ path: String) throws(PrivateFileError) {
        var st = stat()
        guard lstat(path, &st) == 0 else { throw .cannotInspect(path, errno: errno) }
        let type = UInt32(st.st_mode) & UInt32(S_IFMT)
        if type == UInt32(S_IFLNK) { throw .symlink(path) }
        guard type == UInt32(S_IFDIR) else { throw .notADirectory(path) }
        guard st.st_uid == geteuid() else { throw .wrongOwner(path, owner: st.st_uid, expected: geteuid()) }
        guard UInt32(st.st_mode) & 0o077 == 0 else { throw .tooOpen(path, mode: UInt32(st.st_mode)) }
    }

    /// Reads a whole file; nil only when it does not exist (ENOENT). A symbolic link, a directory, a
    /// file of another user, any other open or read error, or more than `limit` bytes is an error.
    public static func read(_ path: String, limit: Int = 1 << 20) throws(PrivateFileError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        if fd < 0 {
            if errno == ENOENT { return nil }
            if errno == ELOOP { throw .symlink(path) }
            throw .cannotRead(path, errno: errno)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .cannotRead(path, errno: errno) }
        guard UInt32(st.st_mode) & UInt32(S_IFMT) == UInt32(S_IFREG) else {
            if UInt32(st.st_mode) & UInt32(S_IFMT) == UInt32(S_IFDIR) { throw .cannotRead(path, errno: EISDIR) }
            throw .notARegularFile(path)
        }
        guard st.st_uid == geteuid() else { throw .wrongOwner(path, owner: st.st_uid, expected: geteuid()) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .cannotRead(path, errno: errno)
            }
            if n == 0 { return out }
            out += buf[0..<n]
            if out.count > limit { throw .tooLarge(path, limit: limit) }
        }
    }

    /// Replaces `path` atomically with `bytes`, mode 0600 whatever the old file's mode was.
    ///
    /// The data goes into a fresh temporary file beside it, made by `mkstemp` (random name, O_EXCL,
    /// which also refuses a symbolic link), flushed with fsync, then renamed over `path` (rename replaces a symbolic link
    /// rather than following it); the directory is flushed last so the rename survives a power cut.
    public static func write(_ path: String, _ bytes: [UInt8]) throws(PrivateFileError) {
        let directory = Self.directory(of: path)
        // The template is a non-empty C string, so its buffer always has a base address.
        var template = Array((path + ".tmp.XXXXXX").utf8CString)
        // mkstemp opens O_CREAT | O_EXCL: it never opens an existing file, nor follows a symbolic link.
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw .cannotWrite(path, errno: errno) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        let tmp = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        var failure: Int32 = 0
        if fchmod(fd, 0o600) != 0 { failure = errno }
        var offset = 0
        while failure == 0, offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress.map { $0 + offset }, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                failure = errno
            } else {
                offset += n
            }
        }
        if failure == 0, fsync(fd) != 0 { failure = errno }
        if close(fd) != 0, failure == 0 { failure = errno }
        if failure == 0, rename(tmp, path) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(tmp)
            throw .cannotWrite(path, errno: failure)
        }
        let dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 {
            _ = fsync(dfd)
            close(dfd)
        }
    }

    /// Removes the temporary files that ``write(_:_:)`` of `path` left when its process was killed
    /// between creating one and renaming it (`path.tmp.XXXXXX`, regular files of this user); returns
    /// how many. Call it only while no other process may be writing `path` (under the lock its
    /// writers hold).
    @discardableResult
    public static func removeLeftovers(of path: String) -> Int {
        let directory = Self.directory(of: path)
        let prefix = String(path.split(separator: "/").last ?? Substring(path)) + ".tmp."
        guard let dir = opendir(directory) else { return 0 }
        defer { closedir(dir) }
        var removed = 0
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            // mkstemp's six characters, nothing else.
            guard name.hasPrefix(prefix), name.utf8.count == prefix.utf8.count + 6 else { continue }
            let full = directory + "/" + name
            var st = stat()
            guard lstat(full, &st) == 0, UInt32(st.st_mode) & UInt32(S_IFMT) == UInt32(S_IFREG),
                  st.st_uid == geteuid() else { continue }
            if unlink(full) == 0 { removed += 1 }
        }
        return removed
    }

    /// The directory part of a path ("." for a bare name).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let d = String(path[..<slash])
        return d.isEmpty ? "/" : d
    }
}
