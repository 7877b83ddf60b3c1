import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A private PostgreSQL server for tests and benchmarks, from the distribution's binaries
/// (Debian's `postgresql`: /usr/lib/postgresql/<major>/bin): `initdb` into a fresh temporary
/// directory, then `pg_ctl start` on a free loopback port with its unix socket in that directory.
/// `stop()` (or deinit) stops it and removes the directory.
///
/// initdb refuses to run as root, so as root (CI) the directory is handed to the `postgres` user and
/// the server runs as that user through `runuser`. Connections use TCP on 127.0.0.1 with a password
/// (SCRAM), so that a wrong password is refused as it would be on a real server.
public final class PostgresTestServer: @unchecked Sendable {
    // @unchecked Sendable: `stopped` is only touched under `lock`; everything else is immutable.
    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    public static let user = "clicker"
    public static let password = "clicker-test"

    public let port: UInt16
    public let directory: String
    private let bin: String
    private let runAs: [String]
    /// The server's options (port, sockets, durability), the same at every start.
    private let options: String
    private let lock = NSLock()
    private var stopped = false

    /// The directory holding `initdb` and `pg_ctl`: `$CLICKER_POSTGRES_BIN`, else the newest
    /// /usr/lib/postgresql/<major>/bin that has both; nil when there is none.
    public static func binaries() -> String? {
        let fm = FileManager.default
        func usable(_ dir: String) -> Bool { fm.isExecutableFile(atPath: dir + "/initdb") && fm.isExecutableFile(atPath: dir + "/pg_ctl") }
        if let dir = ProcessInfo.processInfo.environment["CLICKER_POSTGRES_BIN"] { return usable(dir) ? dir : nil }
        let majors = (try? fm.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        return majors.compactMap(Int.init).sorted(by: >).map { "/usr/lib/postgresql/\($0)/bin" }.first(where: usable)
    }

    /// Starts a server. `durable: false` (tests) turns fsync off; `true` (benchmarks) keeps the
    /// server's defaults, a flush per commit as SQLite's `synchronous=FULL`.
    public init(durable: Bool = false) throws {
        guard let bin = Self.binaries() else {
            throw Unavailable("no PostgreSQL server binaries (initdb, pg_ctl) in /usr/lib/postgresql/*/bin "
                              + "or $CLICKER_POSTGRES_BIN: install Debian's postgresql package (scripts/setup.sh --test)")
        }
        self.bin = bin
        var template = Array("/tmp/clicker-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Unavailable("mkdtemp failed: errno \(errno)") }
        directory = String(cString: made)
        if getuid() == 0 {
            guard let pw = getpwnam("postgres") else {
                try? FileManager.default.removeItem(atPath: directory)
                throw Unavailable("running as root and there is no postgres user to run the server as")
            }
            guard chown(directory, pw.pointee.pw_uid, pw.pointee.pw_gid) == 0 else {
                try? FileManager.default.removeItem(atPath: directory)
                throw Unavailable("cannot hand \(directory) to the postgres user: errno \(errno)")
            }
            runAs = ["/usr/sbin/runuser", "-u", "postgres", "--"]
        } else {
            runAs = []
        }
        port = try Self.freePort()
        var options = "-p \(port) -k \(directory) -h 127.0.0.1"
        if !durable { options += " -F -c synchronous_commit=off -c full_page_writes=off" }
        self.options = options
        do {
            try Self.run(runAs, ["/bin/sh", "-c", "umask 077 && printf %s \"$0\" > \"$1\"", Self.password, directory + "/pw"])
            try Self.run(runAs, [bin + "/initdb", "-D", directory + "/data", "-U", Self.user, "--pwfile=\(directory)/pw",
                                 "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"])
            try start()
        } catch {
            let log = (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(atPath: directory)
            throw Unavailable("\(error)\(log.isEmpty ? "" : "\nserver log:\n\(log.suffix(2000))")")
        }
    }

    deinit { stop() }

    /// Starts the server (again, after ``halt()``) on the same port and data, and waits until it
    /// accepts connections.
    public func start() throws {
        try Self.run(runAs, [bin + "/pg_ctl", "-D", directory + "/data", "-l", directory + "/log", "-w", "-t", "30",
                             "-o", options, "start"])
    }

    /// Stops the server, ending its connections, and keeps its data for ``start()``: a database
    /// that goes away and comes back.
    public func halt() throws {
        try Self.run(runAs, [bin + "/pg_ctl", "-D", directory + "/data", "-m", "fast", "-w", "stop"])
    }

    /// The URL of `database` on this server, over TCP with the test password.
    public func url(database: String = "postgres", password: String = PostgresTestServer.password) -> String {
        "postgres://\(Self.user):\(password)@127.0.0.1:\(port)/\(database)"
    }

    /// Creates an empty database (a fresh one per test) and returns its URL.
    public func makeDatabase(_ name: String) throws -> String {
        try psql("CREATE DATABASE \"\(name)\"")
        return url(database: name)
    }

    /// Runs `sql` in `database` with psql, as the server's superuser.
    public func psql(_ sql: String, database: String = "postgres") throws {
        try Self.run(runAs, [bin + "/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", directory, "-p", String(port), "-U", Self.user,
                             "-d", database, "-c", sql])
    }

    /// Stops the server at once and removes its directory. Idempotent.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        try? Self.run(runAs, [bin + "/pg_ctl", "-D", directory + "/data", "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A loopback port nothing listens on now (the kernel's pick for port 0).
    public static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Unavailable("socket: errno \(errno)") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0
            }
        }
        guard ok else { throw Unavailable("bind to a loopback port: errno \(errno)") }
        return UInt16(bigEndian: addr.sin_port)
    }

    /// Runs `command` (as `prefix` says) and waits for it to exit; a non-zero exit throws with its
    /// output. posix_spawn and waitpid, not Foundation's Process: the server `pg_ctl start` leaves
    /// running inherits the descriptors its parent had, and Process waits for the end of a socket of
    /// its own that the server would then hold. The output goes to a file for the same reason.
    static func run(_ prefix: [String], _ command: [String]) throws {
        // In /, which the postgres user can read (initdb fails in a directory it cannot).
        let all = prefix + ["/usr/bin/env", "-C", "/"] + command
        var template = Array("/tmp/clicker-pg-out-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw Unavailable("mkstemp failed: errno \(errno)") }
        let outputPath = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { close(fd); unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fd, 1)
        posix_spawn_file_actions_adddup2(&actions, fd, 2)
        var argv: [UnsafeMutablePointer<CChar>?] = all.map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var pid = pid_t()
        let rc = posix_spawn(&pid, all[0], &actions, nil, &argv, environ)
        guard rc == 0 else { throw Unavailable("cannot run \(all[0]): errno \(rc)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED and WEXITSTATUS are macros: an exit leaves the signal bits 0, the status in bits 8–15.
        let exited = status & 0x7F == 0
        guard exited && (status >> 8) & 0xFF == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            let how = exited ? "exited with status \((status >> 8) & 0xFF)" : "was killed by signal \(status & 0x7F)"
            throw Unavailable("\(((command.first ?? "") as NSString).lastPathComponent) \(how): \(text.suffix(1500))")
        }
    }
}
