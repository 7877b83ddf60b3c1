import Glibc

/// Errors from the voter's on-device state.
public enum VoterStateError: Error, CustomStringConvertible, Equatable {
    case cannotCreateDirectory(String, errno: Int32)
    case cannotWrite(String, errno: Int32)
    case corrupt(String)

    public var description: String {
        switch self {
        case .cannotCreateDirectory(let p, let e): "cannot create \(p): \(String(cString: strerror(e)))"
        case .cannotWrite(let p, let e): "cannot write \(p): \(String(cString: strerror(e)))"
        case .corrupt(let p): "\(p) is damaged; delete it to start afresh (a new voter ID will be made)"
        }
    }
}

/// The voter's state directory: `$XDG_STATE_HOME/clicker`, else `~/.local/state/clicker`.
///
/// Files in it are small, written atomically (temporary file + rename) with mode 0600.
public struct StateDirectory: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// Resolves the directory from the environment without touching the disk.
    public static func standard(environment: [String: String]) -> StateDirectory {
        if let x = environment["XDG_STATE_HOME"], x.hasPrefix("/") {
            return StateDirectory(path: x + "/clicker")
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return StateDirectory(path: home + "/.local/state/clicker")
    }

    /// Creates the directory (and parents) with mode 0700 if it does not exist.
    public func create() throws {
        var prefix = ""
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                throw VoterStateError.cannotCreateDirectory(prefix, errno: errno)
            }
        }
    }

    /// Reads a whole file, or nil when it does not exist.
    public func read(_ name: String) -> [UInt8]? {
        let fd = open(path + "/" + name, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buf.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out += buf[0..<n]
            if out.count > 1 << 20 { break }  // state files are tiny; refuse to slurp anything huge
        }
        return out
    }

    /// Replaces a file atomically, mode 0600, flushed to disk before the rename.
    public func write(_ name: String, _ bytes: [UInt8]) throws {
        try create()
        let final = path + "/" + name
        let tmp = final + ".tmp.\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw VoterStateError.cannotWrite(tmp, errno: errno) }
        var ok = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count
        ok = ok && fsync(fd) == 0
        let e = errno
        close(fd)
        guard ok, rename(tmp, final) == 0 else {
            unlink(tmp)
            throw VoterStateError.cannotWrite(final, errno: ok ? errno : e)
        }
    }
}
