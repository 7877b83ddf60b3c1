import Glibc
import PrivateFiles

/// Errors from the voter's on-device state.
public enum VoterStateError: Error, CustomStringConvertible, Equatable {
    /// Neither XDG_STATE_HOME nor HOME names an absolute directory.
    case noStateDirectory
    case corrupt(String)
    case damagedSequences(String, line: Int)

    public var description: String {
        switch self {
        case .noStateDirectory:
            "no state directory: set XDG_STATE_HOME or HOME to an absolute path (the device key is kept there)"
        case .corrupt(let p): "\(p) is damaged; delete it to start afresh (a new voter ID will be made)"
        case .damagedSequences(let p, let line):
            "\(p) is damaged at line \(line); move it aside to start afresh (ballots already sent this poll may then count as stale)"
        }
    }
}

/// The voter's state directory: `$XDG_STATE_HOME/clicker`, else `$HOME/.local/state/clicker`.
///
/// It must be a real directory owned by this user with mode 0700 (created so when missing); files
/// in it are read without following symbolic links and written atomically with mode 0600 by
/// ``PrivateFiles``.
public struct StateDirectory: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    /// Resolves the directory from the environment without touching the disk. There is no fallback:
    /// a shared place such as /tmp would let another local user plant the device key.
    public static func standard(environment: [String: String]) throws(VoterStateError) -> StateDirectory {
        if let x = environment["XDG_STATE_HOME"], x.hasPrefix("/") {
            return StateDirectory(path: x + "/clicker")
        }
        if let h = environment["HOME"], h.hasPrefix("/") {
            return StateDirectory(path: h + "/.local/state/clicker")
        }
        throw .noStateDirectory
    }

    /// Creates the directory (and parents) with mode 0700 if missing, and refuses one that is a
    /// symbolic link, belongs to another user or is open to group or others.
    public func create() throws(PrivateFileError) {
        try PrivateFiles.makePrivateDirectory(path)
    }

    /// Reads a whole file, or nil when it does not exist; any other failure is an error.
    public func read(_ name: String) throws(PrivateFileError) -> [UInt8]? {
        try create()
        return try PrivateFiles.read(path + "/" + name)
    }

    /// Replaces a file atomically, mode 0600, flushed to disk before the rename.
    public func write(_ name: String, _ bytes: [UInt8]) throws(PrivateFileError) {
        try create()
        try PrivateFiles.write(path + "/" + name, bytes)
    }

    /// Runs `body` holding the exclusive lock `name` of this directory (see ``FileLock``).
    func withLock<T>(_ name: String, _ body: () throws -> T) throws -> T {
        try create()
        return try FileLock.withExclusiveLock(path + "/" + name, body)
    }
}
