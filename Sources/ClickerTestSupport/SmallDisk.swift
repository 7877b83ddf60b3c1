#if canImport(Glibc)
import Foundation
import Glibc

/// A real full disk for tests: a small tmpfs at a fresh temporary path, and a file that takes its
/// every block, so that the next write on it fails with ENOSPC. Mounting needs root (CAP_SYS_ADMIN),
/// as CI runs; `mount` returns nil elsewhere, with the reason, for the test to skip saying so.
public enum SmallDisk {
    /// Mounts a tmpfs of `size` (as tmpfs takes it: "2m", "64k"); the mount point, or the reason it failed.
    public static func mount(size: String) -> Result<String, MountFailed> {
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("full-disk-\(UUID())").path
        do {
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
        } catch {
            return .failure(MountFailed(description: "cannot create \(mountPoint): \(error)"))
        }
        guard Glibc.mount("tmpfs", mountPoint, "tmpfs", 0, "size=\(size),mode=0700") == 0 else {
            let e = errno
            rmdir(mountPoint)
            return .failure(MountFailed(description: "cannot mount a \(size) tmpfs at \(mountPoint) "
                                        + "(\(String(cString: strerror(e)))): a real full disk needs root (CAP_SYS_ADMIN)"))
        }
        return .success(mountPoint)
    }

    public struct MountFailed: Error, CustomStringConvertible {
        public let description: String
    }

    public static func unmount(_ mountPoint: String) {
        umount2(mountPoint, Int32(MNT_DETACH))
        rmdir(mountPoint)
    }

    /// Writes `path` (a new file) until a write fails or `limit` bytes are written; the bytes written
    /// and the errno of the failed write (ENOSPC once the disk is full; 0 if none failed).
    public static func fill(_ path: String, limit: Int) -> (filled: Int, failure: Int32) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return (0, errno) }
        defer { close(fd) }
        let block = [UInt8](repeating: 0x5A, count: 4096)
        var filled = 0, failure: Int32 = 0
        while failure == 0, filled < limit {
            let n = block.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 { failure = errno } else { filled += n }
        }
        return (filled, failure)
    }
}
#endif
