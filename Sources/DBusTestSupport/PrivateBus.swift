import Foundation

/// Why a test environment could not be set up. Tests should let this propagate so that the test
/// fails with the message (which names the Debian package to install) instead of being skipped.
public struct TestEnvironmentError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A private `dbus-daemon` on a unix socket in a fresh temporary directory, with a permissive policy
/// (every name may be owned, every method return and signal delivered). Stop it with ``stop()``
/// (also done on deinit).
public final class PrivateBus: @unchecked Sendable {
    // @unchecked Sendable: `process` is only touched under `lock`; other stored properties are immutable.
    /// The bus address, e.g. `unix:path=/tmp/dbus-test-XXXX/bus`.
    public let address: String
    /// The temporary directory holding the config file and the socket.
    public let directory: URL
    private let process: Process
    private let lock = NSLock()
    private var stopped = false

    public static let daemonPath = "/usr/bin/dbus-daemon"

    /// Starts the daemon and waits until its socket accepts connections. Throws a
    /// ``TestEnvironmentError`` naming the Debian package if `daemonPath` is missing.
    public init(daemonPath: String = PrivateBus.daemonPath) throws {
        guard FileManager.default.isExecutableFile(atPath: daemonPath) else {
            throw TestEnvironmentError("\(daemonPath) not found: install the Debian package 'dbus-daemon' (apt-get install dbus-daemon)")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dbus-test-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let socket = dir.appendingPathComponent("bus").path
        let config = """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:path=\(socket)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
          <limit name="max_incoming_bytes">1000000000</limit>
          <limit name="max_outgoing_bytes">1000000000</limit>
          <limit name="max_message_size">100000000</limit>
          <limit name="max_replies_per_connection">100000</limit>
        </busconfig>
        """
        let configURL = dir.appendingPathComponent("bus.conf")
        try config.write(to: configURL, atomically: true, encoding: .utf8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: daemonPath)
        p.arguments = ["--config-file=\(configURL.path)", "--nofork", "--nopidfile", "--nosyslog"]
        p.standardOutput = FileHandle.nullDevice
        let logURL = dir.appendingPathComponent("daemon.log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        p.standardError = try FileHandle(forWritingTo: logURL)
        try p.run()
        self.process = p
        self.directory = dir
        self.address = "unix:path=\(socket)"
        // Wait until the socket accepts connections (up to 10 s; the file exists before listen()).
        let deadline = Date().addingTimeInterval(10)
        while !Self.canConnect(socket) {
            guard p.isRunning, Date() < deadline else {
                stop()
                throw TestEnvironmentError("dbus-daemon did not start (config \(configURL.path))")
            }
            usleep(5_000)
        }
    }

    static func canConnect(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { buf in
            for (i, b) in bytes.enumerated() { buf[i] = b }
            buf[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return rc == 0
    }

    /// The daemon's process id.
    public var pid: Int32 { process.processIdentifier }

    /// Terminates the daemon and removes the temporary directory. Idempotent.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        // SIGKILL: children spawned from a dispatch worker thread inherit its blocked-signal mask, so
        // SIGTERM may never arrive.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        waitForTermination(process)
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }

    /// Environment for child processes: both bus variables point at this daemon.
    public var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["DBUS_SESSION_BUS_ADDRESS"] = address
        env["DBUS_SYSTEM_BUS_ADDRESS"] = address
        return env
    }
}

/// A child process (e.g. a Python D-Bus service) whose stdout is read line by line.
public final class HelperProcess: @unchecked Sendable {
    // @unchecked Sendable: mutable state (`lines`, `buffer`, `stopped`) is only touched under `lock`.
    private let process: Process
    private let lock = NSCondition()
    private var lines: [String] = []
    private var buffer = Data()
    private var stopped = false
    private var stderrText = Data()

    /// Starts `executable` with `arguments` and `environment`.
    public init(executable: String, arguments: [String], environment: [String: String]) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.environment = environment
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        self.process = p
        out.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            guard let self else { return }
            self.lock.lock()
            self.buffer.append(d)
            while let nl = self.buffer.firstIndex(of: 0x0a) {
                let line = String(decoding: self.buffer[self.buffer.startIndex..<nl], as: UTF8.self)
                self.buffer.removeSubrange(self.buffer.startIndex...nl)
                self.lines.append(line)
            }
            if d.isEmpty { h.readabilityHandler = nil }
            self.lock.broadcast()
            self.lock.unlock()
        }
        err.fileHandleForReading.readabilityHandler = { [weak self] h in
            let d = h.availableData
            if d.isEmpty { h.readabilityHandler = nil }
            guard let self else { return }
            self.lock.lock()
            self.stderrText.append(d)
            self.lock.unlock()
        }
        try p.run()
    }

    /// Waits (blocking, up to `timeout` seconds) for a stdout line satisfying `predicate`, consuming the
    /// lines before it.
    public func waitForLine(timeout: TimeInterval = 10, where predicate: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        lock.lock()
        defer { lock.unlock() }
        while true {
            if let i = lines.firstIndex(where: predicate) {
                let l = lines[i]
                lines.removeSubrange(...i)
                return l
            }
            if !process.isRunning && lines.isEmpty {
                throw TestEnvironmentError("helper exited (status \(process.terminationStatus)): \(String(decoding: stderrText, as: UTF8.self))")
            }
            if !lock.wait(until: min(deadline, Date().addingTimeInterval(0.1))) && Date() >= deadline {
                throw TestEnvironmentError("helper printed no matching line in \(timeout)s; stderr: \(String(decoding: stderrText, as: UTF8.self))")
            }
        }
    }

    /// Everything the helper wrote to stderr so far.
    public var standardError: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: stderrText, as: UTF8.self)
    }

    public var isRunning: Bool { process.isRunning }
    public var processIdentifier: Int32 { process.processIdentifier }

    /// Sends SIGKILL (a peer vanishing without goodbye).
    public func kill() {
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        waitForTermination(process)
    }

    /// Terminates the helper and waits for it. Idempotent.
    public func stop() {
        lock.lock()
        let already = stopped
        stopped = true
        lock.unlock()
        guard !already else { return }
        if process.isRunning { Foundation.kill(process.processIdentifier, SIGKILL) }
        waitForTermination(process)
    }

    /// Waits for the process to exit and returns its status.
    public func waitForExit() -> Int32 {
        waitForTermination(process, timeout: 3600)
        return process.terminationStatus
    }

    deinit { stop() }
}

/// Python with Debian's `python3-dbus` and `python3-gi` (not the pyenv `python3` on PATH).
public enum SystemPython {
    public static let path = "/usr/bin/python3"

    /// Throws (naming the packages) unless `/usr/bin/python3` can import `dbus` and `gi.repository.GLib`.
    public static func requireDBus(python path: String = SystemPython.path) throws {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestEnvironmentError("\(path) not found: install the Debian packages 'python3', 'python3-dbus' and 'python3-gi'")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = ["-c", "import dbus, dbus.service, dbus.mainloop.glib; from gi.repository import GLib"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        waitForTermination(p)
        guard p.terminationStatus == 0 else {
            throw TestEnvironmentError("\(path) cannot import dbus / gi: install the Debian packages 'python3-dbus' and 'python3-gi'")
        }
    }

    /// Runs a Python script (given as source text) against `bus`; extra `arguments` follow the script.
    public static func start(script: String, arguments: [String] = [], bus: PrivateBus) throws -> HelperProcess {
        try requireDBus()
        let file = bus.directory.appendingPathComponent("helper-\(UUID().uuidString.prefix(8)).py")
        try script.write(to: file, atomically: true, encoding: .utf8)
        var env = bus.environment
        env["PYTHONUNBUFFERED"] = "1"
        return try HelperProcess(executable: path, arguments: [file.path] + arguments, environment: env)
    }

    /// Runs a script to completion and returns (status, stdout, stderr).
    public static func run(script: String, arguments: [String] = [], bus: PrivateBus, timeout: TimeInterval = 30) throws -> (Int32, String, String) {
        try requireDBus()
        let file = bus.directory.appendingPathComponent("script-\(UUID().uuidString.prefix(8)).py")
        try script.write(to: file, atomically: true, encoding: .utf8)
        return try runProcess(path, [file.path] + arguments, environment: bus.environment, timeout: timeout)
    }
}

/// Runs a process to completion (killing it after `timeout`), returning (status, stdout, stderr).
public func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                       timeout: TimeInterval = 30) throws -> (Int32, String, String) {
    guard FileManager.default.isExecutableFile(atPath: executable) else {
        throw TestEnvironmentError("\(executable) not found")
    }
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    if let environment { p.environment = environment }
    let outFile = FileManager.default.temporaryDirectory.appendingPathComponent("out-\(UUID().uuidString)")
    let errFile = FileManager.default.temporaryDirectory.appendingPathComponent("err-\(UUID().uuidString)")
    _ = FileManager.default.createFile(atPath: outFile.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errFile.path, contents: nil)
    defer {
        try? FileManager.default.removeItem(at: outFile)
        try? FileManager.default.removeItem(at: errFile)
    }
    let outH = try FileHandle(forWritingTo: outFile)
    let errH = try FileHandle(forWritingTo: errFile)
    p.standardOutput = outH
    p.standardError = errH
    try p.run()
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning && Date() < deadline { usleep(2_000) }
    if p.isRunning { kill(p.processIdentifier, SIGKILL) }
    waitForTermination(p, timeout: 1)
    try? outH.close()
    try? errH.close()
    let out = (try? String(contentsOf: outFile, encoding: .utf8)) ?? ""
    let err = (try? String(contentsOf: errFile, encoding: .utf8)) ?? ""
    return (p.terminationStatus, out, err)
}

/// `dbus-send` from the `dbus-bin` package.
public enum DBusSend {
    public static let path = "/usr/bin/dbus-send"

    /// Runs `dbus-send --bus=<bus> --print-reply <arguments…>`; returns (status, stdout, stderr).
    public static func call(bus: PrivateBus, _ arguments: [String]) throws -> (Int32, String, String) {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestEnvironmentError("\(path) not found: install the Debian package 'dbus-bin'")
        }
        return try runProcess(path, ["--bus=\(bus.address)", "--print-reply"] + arguments)
    }
}

/// Waits for `p` to end by polling `isRunning` (Foundation's `waitUntilExit` can hang when several
/// children exit concurrently); escalates to SIGKILL after `timeout` seconds.
func waitForTermination(_ p: Process, timeout: TimeInterval = 10) {
    let deadline = Date().addingTimeInterval(timeout)
    while p.isRunning {
        if Date() > deadline {
            kill(p.processIdentifier, SIGKILL)
            let hard = Date().addingTimeInterval(5)
            while p.isRunning && Date() < hard { usleep(2_000) }
            return
        }
        usleep(1_000)
    }
}
