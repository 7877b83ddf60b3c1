#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Where the database lives and how its directory and file are created.
public enum StoreLocation {
    /// The database file name inside the state directory.
    public static let fileName = "clicker.sqlite"

    /// The state directory: `$STATE_DIRECTORY` (systemd `StateDirectory=`; first entry if several),
    /// else `$XDG_STATE_HOME/clicker`, else `$HOME/.local/state/clicker`.
    public static func defaultDirectory(environment: [String: String]) throws -> String {
        if let s = environment["STATE_DIRECTORY"], !s.isEmpty {
            // systemd separates several state directories with ':'.
            let first = s.split(separator: ":", omittingEmptySubsequences: true).first.map(String.init) ?? s
            return first
        }
        if let x = environment["XDG_STATE_HOME"], x.hasPrefix("/") {
            return x + "/clicker"
        }
        if let h = environment["HOME"], h.hasPrefix("/") {
            return h + "/.local/state/clicker"
        }
        throw StoreError.noStateDirectory
    }

    /// The default database path (see `defaultDirectory`).
    public static func defaultPath(environment: [String: String]) throws -> String {
        try defaultDirectory(environment: environment) + "/" + fileName
    }

    /// Creates `directory` (mode 0700) and missing parents (mode 0700 too). Existing directories keep their mode.
    static func makeDirectory(_ directory: String) throws {
        var isDir: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDir), isDir.boolValue { return }
        let parent = (directory as NSString).deletingLastPathComponent
        if !parent.isEmpty, parent != directory, parent != "/" {
            try makeDirectory(parent)
        }
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw StoreError.cannotCreateDirectory(path: directory, errno: errno)
        }
    }

    /// Creates the database file with mode 0600 if it does not exist, and tightens it (and the WAL/SHM
    /// side files, if present) to 0600.
    static func prepareFile(_ path: String) throws {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        if fd < 0 { throw StoreError.cannotCreateFile(path: path, errno: errno) }
        close(fd)
        tighten(path)
    }

    static func tighten(_ path: String) {
        for p in [path, path + "-wal", path + "-shm"] {
            _ = chmod(p, 0o600)
        }
    }
}
