import ClickerTransport
import DBus
import Foundation
import Synchronization
import TallyDaemon
import XCTest

/// Tier-2 harness: a private dbus-daemon and python-dbusmock (clicker_bluez5 template) as bluetoothd.
/// Missing tools make the test FAIL with the package to install; nothing is skipped.
enum HarnessError: Error, CustomStringConvertible {
    case missingTool(String)
    case startFailed(String)
    case timeout(String)

    var description: String {
        switch self {
        case .missingTool(let s): "tier-2 harness: \(s)"
        case .startFailed(let s): "tier-2 harness: \(s)"
        case .timeout(let s): "tier-2 harness: timed out: \(s)"
        }
    }
}

enum HarnessFiles {
    /// Tests/Harness, found from this source file.
    static let directory: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Harness")
    static let python = "/usr/bin/python3"

    static func checkTools() throws {
        let fm = FileManager.default
        guard fm.isExecutableFile(atPath: "/usr/bin/dbus-daemon") else {
            throw HarnessError.missingTool("dbus-daemon not found; install it: apt-get install dbus-daemon")
        }
        guard fm.isExecutableFile(atPath: python) else {
            throw HarnessError.missingTool("\(python) not found; install it: apt-get install python3 python3-dbusmock")
        }
        let p = try Subprocess(python, ["-c", "import dbus, dbusmock, gi"])
        var status: Int32 = 0
        waitpid(p.pid, &status, 0)
        guard status == 0 else {
            throw HarnessError.missingTool(
                "python3-dbusmock (with python3-dbus, python3-gi) is missing for \(python); install it: apt-get install python3-dbusmock")
        }
    }
}


/// A child process started with posix_spawn and reaped with waitpid (Foundation's Process can hang in
/// waitUntilExit when called from async code).
final class Subprocess: @unchecked Sendable {
    // @unchecked Sendable: pid and the pipe fd are set once; `exited` is guarded by `lock`.
    let pid: pid_t
    /// Read end of the child's stdout when `captureOutput`, else -1.
    let stdoutFD: Int32
    private let lock = NSLock()
    private var exitStatus: Int32?

    init(_ path: String, _ arguments: [String], environment: [String: String]? = nil, captureOutput: Bool = false) throws {
        var fileActions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fileActions)
        defer { posix_spawn_file_actions_destroy(&fileActions) }
        var fds: [Int32] = [-1, -1]
        if captureOutput {
            guard pipe(&fds) == 0 else { throw HarnessError.startFailed("pipe failed") }
            posix_spawn_file_actions_adddup2(&fileActions, fds[1], 1)
            posix_spawn_file_actions_addclose(&fileActions, fds[0])
            posix_spawn_file_actions_addclose(&fileActions, fds[1])
        } else {
            posix_spawn_file_actions_addopen(&fileActions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&fileActions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let envp: [UnsafeMutablePointer<CChar>?] = env.map { strdup($0) } + [nil]
        defer { for e in envp { free(e) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, path, &fileActions, nil, argv, envp)
        if captureOutput { close(fds[1]) }
        guard rc == 0 else {
            if captureOutput { close(fds[0]) }
            throw HarnessError.startFailed("cannot start \(path): error \(rc)")
        }
        pid = child
        stdoutFD = captureOutput ? fds[0] : -1
    }

    /// Whether the child is still running (reaps it if it exited).
    var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        if exitStatus != nil { return false }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid {
            exitStatus = status
            return false
        }
        return r == 0
    }

    /// The first line the child printed on stdout.
    func firstLine(timeout: Duration) throws -> String {
        var data: [UInt8] = []
        let deadline = ContinuousClock.now + timeout
        var buf = [UInt8](repeating: 0, count: 512)
        while ContinuousClock.now < deadline {
            var p = pollfd(fd: stdoutFD, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) >= 0 else { break }
            if p.revents == 0 { continue }
            let n = read(stdoutFD, &buf, buf.count)
            if n <= 0 { break }
            data += buf[0..<n]
            if let nl = data.firstIndex(of: 0x0A) { return String(decoding: data[0..<nl], as: UTF8.self) }
        }
        throw HarnessError.startFailed("no output line from pid \(pid) (got '\(String(decoding: data, as: UTF8.self))')")
    }

    /// SIGTERM, then SIGKILL after a second; waits for the child.
    func stop() {
        lock.lock()
        defer { lock.unlock() }
        if exitStatus == nil {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            for _ in 0..<100 {
                if waitpid(pid, &status, WNOHANG) == pid {
                    exitStatus = status
                    break
                }
                usleep(10_000)
            }
            if exitStatus == nil {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                exitStatus = status
            }
        }
        if stdoutFD >= 0 { close(stdoutFD) }
    }
}

/// A private dbus-daemon in a temporary directory.
final class PrivateBus: @unchecked Sendable {
    // @unchecked Sendable: the fields are set once in init; Process is only terminated from stop().
    let directory: URL
    let address: String
    private let daemon: Subprocess

    /// `serviceDirectory`: where the daemon finds service files to start services on demand (none: it starts none).
    init(serviceDirectory: URL? = nil) throws {
        try HarnessFiles.checkTools()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("clicker-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        daemon = try Subprocess(HarnessFiles.directory.appendingPathComponent("private-bus.sh").path,
                                [directory.path] + (serviceDirectory.map { [$0.path] } ?? []), captureOutput: true)
        address = try daemon.firstLine(timeout: .seconds(10))
        guard address.hasPrefix("unix:") else { throw HarnessError.startFailed("dbus-daemon printed '\(address)'") }
    }

    var target: DBusBusTarget { .address(address) }

    func stop() {
        daemon.stop()
        // CLICKER_KEEP_BUS=1 keeps the directory (bus config, dbusmock logs) for debugging.
        if ProcessInfo.processInfo.environment["CLICKER_KEEP_BUS"] == nil {
            try? FileManager.default.removeItem(at: directory)
        }
    }

    deinit { stop() }
}

/// python-dbusmock playing bluetoothd on a private bus, plus a client connection to drive it.
final class BlueZMock: @unchecked Sendable {
    // @unchecked Sendable: fields set once in init; the process is only stopped from kill().
    let process: Subprocess
    let control: DBusConnection
    static let mockInterface = "org.bluez.Mock"

    init(bus: PrivateBus, parameters: String? = nil) async throws {
        var args = ["-m", "dbusmock", "--template", HarnessFiles.directory.appendingPathComponent("clicker_bluez5.py").path,
                    "-l", bus.directory.appendingPathComponent("mock-\(UUID().uuidString.prefix(8)).log").path]
        if let parameters { args += ["-p", parameters] }
        var env = ProcessInfo.processInfo.environment
        env["DBUS_SYSTEM_BUS_ADDRESS"] = bus.address
        process = try Subprocess(HarnessFiles.python, args, environment: env)
        control = try await DBusConnection.connect(bus.target)
        let deadline = Date().addingTimeInterval(15)
        while try await control.nameOwner("org.bluez") == nil {
            guard process.isRunning else { throw HarnessError.startFailed("dbusmock exited; see its log in \(bus.directory.path)") }
            guard Date() < deadline else { throw HarnessError.timeout("dbusmock did not take org.bluez") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Kills the mock (as if bluetoothd crashed).
    func kill() { process.stop() }

    deinit {
        kill()
        control.close()
    }

    @discardableResult
    func mock(_ method: String, _ args: [DBusValue] = []) async throws -> DBusMessage {
        try await control.call(destination: "org.bluez", path: "/", interface: Self.mockInterface, method: method,
                               arguments: args, timeout: .seconds(10))
    }

    @discardableResult
    func addAdapter(_ name: String = "hci0") async throws -> String {
        try await mock("AddAdapter", [.string(name), .string("clicker-test")]).decode(String.self)
    }

    @discardableResult
    func addDevice(_ address: String, adapter: String = "hci0") async throws -> String {
        try await mock("AddDevice", [.string(adapter), .string(address), .string("voter")]).decode(String.self)
    }

    func advertise(_ address: String, company: UInt16 = 0xFFFF, data: [UInt8], rssi: Int16 = -50,
                   adapter: String = "hci0") async throws {
        try await mock("SetManufacturerData", [.string(adapter), .string(address), .uint16(company), .bytes(data), .int16(rssi)])
    }

    func setPowered(_ on: Bool, adapter: String = "hci0") async throws {
        try await mock("SetAdapterPowered", [.string(adapter), .boolean(on)])
    }

    func addCharacteristic(_ address: String, service: UUID128, characteristic: UUID128, value: [UInt8],
                           adapter: String = "hci0") async throws {
        try await mock("AddGattCharacteristic", [.string(adapter), .string(address), .string(service.description),
                                                 .string(characteristic.description), .bytes(value)])
    }

    func setConnectBehaviour(_ address: String, _ behaviour: String, resolveDelayMs: UInt32 = 50,
                             adapter: String = "hci0") async throws {
        try await mock("SetConnectBehaviour", [.string(adapter), .string(address), .string(behaviour), .uint32(resolveDelayMs)])
    }

    /// Emits the device's Connected and ServicesResolved (a link coming up or dropping).
    func setConnection(_ address: String, connected: Bool, resolved: Bool, adapter: String = "hci0") async throws {
        try await mock("SetDeviceConnection", [.string(adapter), .string(address), .boolean(connected), .boolean(resolved)])
    }

    /// Makes ReadValue fail with `org.bluez.Error.<name>` ("" to stop).
    func setReadError(_ address: String, _ name: String, adapter: String = "hci0") async throws {
        try await mock("SetReadError", [.string(adapter), .string(address), .string(name)])
    }

    func removeAdapter(_ name: String = "hci0") async throws {
        try await mock("RemoveAdapterWithDevices", [.string(name)])
    }

    func managedObjects() async throws -> [DBusObjectPath: [String: [String: DBusValue]]] {
        try await control.call([DBusObjectPath: [String: [String: DBusValue]]].self, destination: "org.bluez", path: "/",
                               interface: "org.freedesktop.DBus.ObjectManager", method: "GetManagedObjects")
    }

    func property(_ path: DBusObjectPath, _ interface: String, _ name: String) async throws -> DBusValue {
        try await control.call(DBusValue.self, destination: "org.bluez", path: path,
                               interface: "org.freedesktop.DBus.Properties", method: "Get",
                               arguments: [.string(interface), .string(name)])
    }

    /// Names of the methods called on `path`, in order (dbusmock's call log).
    func calls(_ path: DBusObjectPath) async throws -> [String] {
        let reply = try await control.call(destination: "org.bluez", path: path,
                                           interface: "org.freedesktop.DBus.Mock", method: "GetCalls")
        guard case .array(_, let items)? = try reply.arguments().first else { return [] }
        return items.compactMap { item -> String? in
            guard case .structure(let fields) = item, fields.count >= 2, case .string(let name) = fields[1] else { return nil }
            return name
        }
    }

    /// (sender, path, properties read back by the fake bluetoothd at registration).
    func advertisements(adapter: String = "hci0") async throws -> [(String, String, [String: DBusValue])] {
        let reply = try await mock("GetAdvertisements", [.string(adapter)])
        guard case .array(_, let items)? = try reply.arguments().first else { return [] }
        return items.compactMap { item in
            guard case .structure(let f) = item, f.count == 3, case .string(let sender) = f[0],
                  case .objectPath(let path) = f[1], let props = try? [String: DBusValue](dbusValue: f[2]) else { return nil }
            return (sender, path.rawValue, props)
        }
    }

    /// (sender, app path, objects read back at registration).
    func applications(adapter: String = "hci0") async throws -> [(String, String, [DBusObjectPath: [String: [String: DBusValue]]])] {
        let reply = try await mock("GetApplications", [.string(adapter)])
        guard case .array(_, let items)? = try reply.arguments().first else { return [] }
        return items.compactMap { item in
            guard case .structure(let f) = item, f.count == 3, case .string(let sender) = f[0],
                  case .objectPath(let path) = f[1],
                  let objs = try? [DBusObjectPath: [String: [String: DBusValue]]](dbusValue: f[2]) else { return nil }
            return (sender, path.rawValue, objs)
        }
    }
}

/// Collects a stream's elements in the background so tests can wait for conditions.
final class Collector<Element: Sendable>: Sendable {
    let items = Mutex<[Element]>([])
    let failure = Mutex<(any Error)?>(nil)
    let finished = Mutex<Bool>(false)
    let task = Mutex<Task<Void, Never>?>(nil)
    /// A notice after each item collected and at the stream's end.
    let changes = ChangeFeed()

    init(_ stream: AsyncThrowingStream<Element, any Error>) {
        let t = Task { [self] in
            do {
                for try await x in stream { self.add(x) }
            } catch {
                self.failure.withLock { $0 = error }
            }
            self.finish()
        }
        task.withLock { $0 = t }
    }

    init(_ stream: AsyncStream<Element>) {
        let t = Task { [self] in
            for await x in stream { self.add(x) }
            self.finish()
        }
        task.withLock { $0 = t }
    }

    private func add(_ x: Element) {
        items.withLock { $0.append(x) }
        changes.signal()
    }

    private func finish() {
        finished.withLock { $0 = true }
        changes.signal()
    }

    var snapshot: [Element] { items.withLock { $0 } }
    var error: (any Error)? { failure.withLock { $0 } }
    var isFinished: Bool { finished.withLock { $0 } }

    func cancel() { task.withLock { $0?.cancel() } }

    /// Waits until `condition` holds on the collected items, looking again at each item and at the
    /// stream's end (events, not a timer); fails the test after `timeout`, the guard of a broken run.
    @discardableResult
    func wait(_ what: String, timeout: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
              until condition: ([Element]) -> Bool) async throws -> [Element] {
        let notices = changes.subscribe()   // before the first look: no item slips in between
        var s = snapshot
        if condition(s) { return s }
        let deadline = ContinuousClock.now + timeout
        let guardTimer = Task { [changes] in
            try? await Task.sleep(for: timeout)
            changes.signal()
        }
        defer { guardTimer.cancel() }
        for await _ in notices {
            s = snapshot
            if condition(s) { return s }
            if isFinished || ContinuousClock.now >= deadline { break }
        }
        s = snapshot
        if condition(s) { return s }
        XCTFail("timed out waiting for \(what); have \(s.count) items; error: \(String(describing: error))", file: file, line: line)
        throw HarnessError.timeout(what)
    }

    /// Waits until the stream has ended (its error, if any, is `error`).
    func end(_ what: String = "the stream to end", timeout: Duration = .seconds(10), file: StaticString = #filePath,
             line: UInt = #line) async throws {
        try await wait(what, timeout: timeout, file: file, line: line) { _ in self.isFinished }
    }
}
