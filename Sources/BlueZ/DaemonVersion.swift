import ClickerDoctor
import DBus
import Glibc
import OSThreads

/// bluetoothd's version, for the doctor: the running daemon's own executable (its process found from the
/// bus, `GetConnectionUnixProcessID` of org.bluez, then /proc/PID/exe) asked `--version`, else the
/// `bluetoothd` on PATH (or where distributions install it). Only an executable named `bluetoothd` is run,
/// and only an answer that reads as a version ("5.66") is taken. The process runs on a thread of its own.
enum DaemonVersion {
    static let installedPlaces = ["/usr/libexec/bluetooth/bluetoothd", "/usr/lib/bluetooth/bluetoothd", "/usr/sbin/bluetoothd"]

    static func find(_ conn: DBusConnection?, timeout: Duration) async -> DoctorFindings.DaemonVersion {
        if let conn, let pid = try? await conn.call(UInt32.self, destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                    interface: "org.freedesktop.DBus", method: "GetConnectionUnixProcessID",
                                                    arguments: [.string(BlueZ.service)], timeout: timeout),
           let exe = executable(of: pid), exe.hasSuffix("/bluetoothd"), let v = await version(of: exe) {
            return .init(version: v, source: "the running bluetoothd, \(exe) --version")
        }
        let path = (getenv("PATH").map { String(cString: $0) } ?? "").split(separator: ":").map { "\($0)/bluetoothd" }
        for candidate in path {
            if access(candidate, X_OK) == 0, let v = await version(of: candidate) {
                return .init(version: v, source: "bluetoothd --version on PATH (\(candidate))")
            }
        }
        for candidate in installedPlaces where access(candidate, X_OK) == 0 {
            if let v = await version(of: candidate) { return .init(version: v, source: "\(candidate) --version") }
        }
        return .init(version: nil, source: "no bluetoothd found on PATH or in \(installedPlaces.joined(separator: ", ")), and the running one not readable")
    }

    static func executable(of pid: UInt32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `exe --version`'s first line when it reads as a version.
    static func version(of exe: String) async -> String? {
        let output = await withCheckedContinuation { (c: CheckedContinuation<String?, Never>) in
            let started = OSThread.start(name: "bluetoothd-version") { c.resume(returning: run(exe, ["--version"])) }
            if started == nil { c.resume(returning: nil) }
        }
        guard let line = output?.split(separator: "\n").first?.strippingBlanks() else { return nil }
        return parse(String(line))
    }

    /// "5.66" or "5.82": digits, a dot, digits.
    static func parse(_ text: String) -> String? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 2, parts.count <= 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }) else { return nil }
        return text
    }

    /// Runs `exe` with `arguments` and its standard output on a pipe; at most 4 KiB of it. Blocking.
    static func run(_ exe: String, _ arguments: [String]) -> String? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addclose(&actions, fds[0])
        var pid: pid_t = 0
        let strings = [exe] + arguments
        let pointers = strings.map { strdup($0) }
        defer { pointers.forEach { free($0) } }
        var argv: [UnsafeMutablePointer<CChar>?] = pointers + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = [nil]
        let rc = posix_spawn(&pid, exe, &actions, nil, &argv, &envp)
        close(fds[1])
        defer { close(fds[0]) }
        guard rc == 0 else { return nil }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 512)
        while out.count < 4096 {
            let n = read(fds[0], &chunk, chunk.count)
            if n > 0 { out += chunk[..<n] } else if n < 0 && errno == EINTR { continue } else { break }
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return String(decoding: out, as: UTF8.self)
    }
}

extension Substring {
    fileprivate func strippingBlanks() -> Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" || c == "\r" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" || c == "\r" { s.removeLast() }
        return s
    }
}
