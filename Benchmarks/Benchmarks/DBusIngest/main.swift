// DBusIngest: CPU per PropertiesChanged signal turned into an AdvertisementReport by the BlueZ central.
//
// For each rate: a private dbus-daemon, bluez-loadgen playing bluetoothd with N devices (each
// advertising a real sealed clicker ballot), and BlueZCentral in this process consuming the
// advertisement stream. Measured over the sending window: CPU of this process (getrusage) per report,
// whether every signal sent became a report, RSS. After measuring, every device's last payload is
// verified and tallied with ClickerWire/ClickerTally (outside the measured window).
//
// Side by side, in the same run and on the same generator: bleak (the Python BLE library; its
// BlueZ backend over dbus-fast) scanning with a BleakScanner whose detection callback keeps each
// device's manufacturer data for the clicker company ID, as the central does. Its process's CPU
// (getrusage, read by the script itself) per callback is measured over the same sending window,
// and the table gives the ratio clicker / bleak. The target is a ratio of at most 0.75.
//
// Run: swift run --package-path Benchmarks -c release DBusIngest [--rates 2000,20000,60000,0]
//          [--devices 1000] [--seconds 5] [--saturation-count 400000] [--python python3 | --no-bleak]
//          [--mode bluez | binding | daemon [--tally PATH] [--advertising extended|legacy|none] [--no-beacon]]
// `--mode daemon` runs the `clicker-tally daemon` binary with its beacon broadcasting (DaemonRun.swift).
// (rate 0 = as fast as the bus takes them). Needs dbus-daemon, libdbus-1-dev and, for the side by
// side, `python3 -m pip install bleak==3.1.0`.

import BlueZ
import ClickerCommandLine
import ClickerTally
import ClickerTransport
import ClickerWire
import DBus
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

struct Options {
    var rates: [Int] = [2000, 20000, 60000, 0]
    var devices = 1000
    var seconds = 5.0
    var saturationCount = 400_000
    var loadgen: String? = nil
    /// `bluez`: the BlueZ central (the figure that matters). `binding`: the D-Bus binding alone, with a
    /// decoder that only counts (the floor under the central: libdbus, dispatch thread, batching).
    var mode = "bluez"
    /// The Python that runs bleak side by side (`nil`: no bleak).
    var python: String? = "python3"
    /// `--mode daemon`: the clicker-tally binary to run (default: the release build of this checkout).
    var tally: String? = nil
    /// `--mode daemon`: what the generator's adapter offers a broadcaster (none, legacy, extended).
    var advertising = "extended"
    /// `--mode daemon`: whether the daemon broadcasts its beacon (its default) or runs with --no-beacon.
    var beacon = true

    init(_ args: [String]) {
        var i = 1
        while i < args.count {
            let a = args[i]
            let v = i + 1 < args.count ? args[i + 1] : ""
            switch a {
            case "--rates": rates = v.split(separator: ",").compactMap { Int($0) }
            case "--devices": devices = Int(v) ?? devices
            case "--seconds": seconds = Double(v) ?? seconds
            case "--saturation-count": saturationCount = Int(v) ?? saturationCount
            case "--loadgen": loadgen = v
            case "--mode": mode = v
            case "--python": python = v
            case "--no-bleak": python = nil; i -= 1
            case "--tally": tally = v
            case "--advertising": advertising = v
            case "--no-beacon": beacon = false; i -= 1
            default:
                FileHandle.standardError.write("unknown option \(a)\n".data(using: .utf8)!)
                exit(2)
            }
            i += 2
        }
    }
}

/// A child process (posix_spawn), its stdout read line by line on a thread.
final class Child: @unchecked Sendable {
    // @unchecked Sendable: pid/fds set once in init; `lines` is a Mutex; stdin fd closed once in stop().
    let pid: pid_t
    let lines = Lines()
    private var stdinFD: Int32

    /// `mergeStandardError`: the child's stderr goes into `lines` too (a daemon's log).
    init(_ path: String, _ args: [String], environment: [String: String]? = nil, mergeStandardError: Bool = false) throws {
        var fa = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fa)
        defer { posix_spawn_file_actions_destroy(&fa) }
        var out: [Int32] = [-1, -1]
        var inp: [Int32] = [-1, -1]
        guard pipe(&out) == 0, pipe(&inp) == 0 else { throw Failure("pipe failed") }
        posix_spawn_file_actions_adddup2(&fa, out[1], 1)
        if mergeStandardError { posix_spawn_file_actions_adddup2(&fa, out[1], 2) }
        posix_spawn_file_actions_adddup2(&fa, inp[0], 0)
        for fd in [out[0], out[1], inp[0], inp[1]] { posix_spawn_file_actions_addclose(&fa, fd) }
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + args).map { strdup($0) } + [nil]
        defer { for a in argv { free(a) } }
        var child: pid_t = 0
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for e in envp ?? [] { free(e) } }
        // The child starts with no signal blocked: a Swift worker thread may block some, and a spawned child
        // inherits the mask (bluez-loadgen would never see its SIGHUP or SIGTERM).
        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attr, &none)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK))
        let rc = envp.map { posix_spawnp(&child, path, &fa, &attr, argv, $0) } ?? posix_spawnp(&child, path, &fa, &attr, argv, environ)
        close(out[1])
        close(inp[0])
        guard rc == 0 else { throw Failure("cannot start \(path): error \(rc)") }
        pid = child
        stdinFD = inp[1]
        let fd = out[0]
        let thread = Thread { [lines] in
            var buffer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(fd, &chunk, chunk.count)
                if n <= 0 { break }
                buffer += chunk[0..<n]
                while let nl = buffer.firstIndex(of: 0x0A) {
                    let line = String(decoding: buffer[0..<nl], as: UTF8.self)
                    buffer.removeSubrange(0...nl)
                    lines.m.withLock { $0.append(line) }
                }
            }
            close(fd)
        }
        thread.start()
    }

    func waitLine(_ prefix: String, timeout: Double, after skipped: Int = 0) throws -> String {
        try waitLine(timeout: timeout, after: skipped, what: prefix) { $0.hasPrefix(prefix) }
    }

    /// The first line (after `skipped`) that contains `text`, waiting up to `timeout` seconds.
    func waitLine(containing text: String, timeout: Double) throws -> String {
        try waitLine(timeout: timeout, after: 0, what: text) { $0.contains(text) }
    }

    private func waitLine(timeout: Double, after skipped: Int, what: String, _ match: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let l = lines.m.withLock({ $0.dropFirst(skipped).first(where: match) }) { return l }
            usleep(2000)
        }
        throw Failure("no '\(what)' line from pid \(pid) within \(timeout) s; got \(lines.m.withLock { $0.suffix(40) })")
    }

    /// The last line that contains `text`, if any.
    func lastLine(containing text: String) -> String? { lines.m.withLock { $0.last { $0.contains(text) } } }

    /// Writes one line to the child's stdin.
    func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(stdinFD, $0.baseAddress, $0.count) }
    }

    /// Sends `request` and returns the child's next line starting with `prefix`.
    func ask(_ request: String, answer prefix: String, timeout: Double = 30) throws -> String {
        let skipped = lines.m.withLock { $0.count }
        send(request)
        return try waitLine(prefix, timeout: timeout, after: skipped)
    }

    func stop() {
        if stdinFD >= 0 {
            close(stdinFD)
            stdinFD = -1
        }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

final class Lines: Sendable {
    let m = Mutex<[String]>([])
}

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ s: String) { description = s }
}

func cpuSeconds() -> Double {
    var ru = rusage()
    getrusage(RUSAGE_SELF.rawValue, &ru)
    return Double(ru.ru_utime.tv_sec) + Double(ru.ru_utime.tv_usec) / 1e6 + Double(ru.ru_stime.tv_sec)
        + Double(ru.ru_stime.tv_usec) / 1e6
}

/// VmRSS and VmHWM, in MB, of this process or of `pid`.
func rssMB(of pid: pid_t? = nil) -> (current: Double, peak: Double) {
    let path = pid.map { "/proc/\($0)/status" } ?? "/proc/self/status"
    guard let s = try? String(contentsOfFile: path, encoding: .utf8) else { return (0, 0) }
    func field(_ name: String) -> Double {
        for line in s.split(separator: "\n") where line.hasPrefix(name) {
            let kb = line.split(separator: " ").compactMap { Double($0) }.first ?? 0
            return kb / 1024
        }
        return 0
    }
    return (field("VmRSS:"), field("VmHWM:"))
}

/// bleak scanning the private bus (DBUS_SYSTEM_BUS_ADDRESS points at it). Prints "scanning <version>"
/// once discovery runs; answers each stdin line with "count <callbacks with our company ID> cpu
/// <process CPU seconds>"; stops at the end of stdin.
let bleakScript = #"""
import asyncio, resource, sys
import bleak
from importlib.metadata import version
from bleak import BleakScanner

COMPANY = int(sys.argv[1])

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

async def main():
    count = 0
    last = {}
    def seen(device, adv):
        nonlocal count
        data = adv.manufacturer_data.get(COMPANY)
        if data is not None:
            count += 1
            last[device.address] = data
    done = asyncio.Event()
    def on_stdin():
        line = sys.stdin.readline()
        if not line:
            done.set()
        else:
            print(f"count {count} cpu {cpu():.6f}", flush=True)
    scanner = BleakScanner(detection_callback=seen, bluez={"adapter": "hci0"})
    await scanner.start()
    asyncio.get_running_loop().add_reader(sys.stdin.fileno(), on_stdin)
    # dbus-fast's unmarshaller is Cython-compiled in its wheels; a pure-Python fallback would be slower.
    import dbus_fast._private.unmarshaller as u
    build = "compiled" if u.__file__.endswith(".so") else "pure Python"
    print(f"scanning bleak {version('bleak')}, dbus-fast {version('dbus-fast')} ({build})", flush=True)
    await done.wait()
    await scanner.stop()

asyncio.run(main())
"""#

/// The bleak process's callback count and CPU seconds, asked over its stdin.
func bleakSample(_ bleak: Child) throws -> (count: Int, cpu: Double) {
    let parts = try bleak.ask("report", answer: "count ").split(separator: " ")
    guard parts.count == 4, let n = Int(parts[1]), let c = Double(parts[3]) else { throw Failure("bad line from bleak: \(parts)") }
    return (n, c)
}

/// The repository root, found from this source file (Benchmarks/Benchmarks/DBusIngest/main.swift).
let repoRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()

/// One poll, N voters with sealed ballots; returns (hex lines file content, join code, expected answers).
/// (`code`: the poll's; by default a fixed one, as `--mode bluez` and `binding` need no tally.)
func makeBallots(devices: Int, code: JoinCode? = nil) throws -> (String, JoinCode, [Answer: Int]) {
    let code = try code ?? JoinCode(voteID: 0x0BEE, secret: 0x2_1234_5678_9ABC)
    let secret = PollSecret(deriving: code)
    var lines: [String] = []
    var expected: [Answer: Int] = [:]
    let letters: [Character] = ["A", "B", "C", "D"]
    for i in 0..<devices {
        var keyBytes = [UInt8](repeating: 0, count: 32)
        for j in 0..<32 { keyBytes[j] = UInt8(truncatingIfNeeded: (i &* 131 &+ j &* 7 &+ 1) ^ (i >> 8)) }
        guard let key = DeviceKey(bytes: keyBytes), let answer = Answer.letter(letters[i % 4]) else {
            throw Failure("cannot build voter \(i)")
        }
        let sealer = BallotSealer(secret: secret, deviceKey: key)
        let payload = sealer.advertisement(question: 1, sequence: 1, answer: answer)
        expected[answer, default: 0] += 1
        let address = String(format: "C0:00:00:00:%02X:%02X", (i >> 8) & 0xFF, i & 0xFF)
        lines.append(address + " " + payload.map { String(format: "%02x", $0) }.joined())
    }
    return (lines.joined(separator: "\n") + "\n", code, expected)
}

struct RunResult {
    var rate: Int
    var sent: Int
    var sendSeconds: Double
    var received: Int
    var cpuPerSignalMicros: Double
    var rssMB: Double
    var peakRSSMB: Double
    var baselineRSSMB: Double
    var validBallots: Int
    var tallyMatches: Bool
    /// bleak on the same signals: callbacks in the window, CPU µs per callback (nil: bleak not run).
    var bleakReceived: Int? = nil
    var bleakCPUPerSignalMicros: Double? = nil
    /// What the bleak side ran, as its script printed it ("bleak 3.1.0, dbus-fast 5.2.0 (compiled)").
    var bleakVersion: String? = nil
}

final class Counter: Sendable {
    let count = Atomic<Int>(0)
    let last = Mutex<[DeviceAddress: [UInt8]]>([:])
}

func runOnce(rate: Int, options: Options, payloadFile: String, code: JoinCode, expected: [Answer: Int],
             loadgen: String, bleakScriptFile: String?) async throws -> RunResult {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dbus-ingest-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let daemon = try Child(repoRoot.appendingPathComponent("Tests/Harness/private-bus.sh").path, [dir.path])
    defer { daemon.stop() }
    let address = try daemon.waitLine("unix:", timeout: 10)

    let count = rate > 0 ? Int(Double(rate) * options.seconds) : options.saturationCount
    var args = ["--address", address, "--payloads", payloadFile, "--devices", String(options.devices), "--count", String(count),
                "--rate", String(rate)]
    if bleakScriptFile != nil { args += ["--discoveries", "2"] }
    let gen = try Child(loadgen, args)
    defer { gen.stop() }
    _ = try gen.waitLine("ready", timeout: 10)
    var bleak: Child? = nil
    var bleakVersion: String? = nil
    if let bleakScriptFile, let python = options.python {
        var env = ProcessInfo.processInfo.environment
        env["DBUS_SYSTEM_BUS_ADDRESS"] = address
        let b = try Child(python, [bleakScriptFile, String(BallotFormat.companyID)], environment: env)
        bleak = b
        bleakVersion = String(try b.waitLine("scanning", timeout: 30).dropFirst("scanning ".count))
    }
    defer { bleak?.stop() }

    let baseline = rssMB().current
    let counter = Counter()
    var central: BlueZCentral? = nil
    var rawConnection: DBusConnection? = nil
    let consumer: Task<Void, Never>
    if options.mode == "binding" {
        let conn = try await DBusConnection.connect(.address(address))
        rawConnection = conn
        let batches = try await conn.signalBatches(
            matching: .propertiesChanged(sender: "org.bluez", interface: "org.bluez.Device1"),
            maxBatch: 1024, bufferLimit: 1 << 16) { _, _ in 1 }
        consumer = Task {
            var n = 0
            for await batch in batches {
                n += batch.count
                counter.count.store(n, ordering: .relaxed)
            }
        }
        _ = try await conn.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.Adapter1",
                                method: "StartDiscovery")
    } else {
        let c = BlueZCentral(options: BlueZCentralOptions(bus: .address(address), discoveryRestartInterval: nil,
                                                          staleDeviceTimeout: nil, waitForRadio: false,
                                                          reportBufferLimit: 1 << 20))
        central = c
        // Consumed as the daemon does (PollController.run): in the batches the central delivers.
        let batches = c.advertisementBatches(companyID: BallotFormat.companyID)
        consumer = Task {
            var n = 0
            var last: [DeviceAddress: [UInt8]] = [:]
            do {
                for try await batch in batches {
                    for report in batch { last[report.address] = report.data }
                    n += batch.count
                    counter.count.store(n, ordering: .relaxed)
                }
            } catch {
                FileHandle.standardError.write("stream failed: \(error)\n".data(using: .utf8)!)
            }
            counter.count.store(n, ordering: .relaxed)
            counter.last.withLock { $0 = last }
        }
    }
    _ = try gen.waitLine("started", timeout: 20)
    let cpu0 = cpuSeconds()
    let bleak0 = try bleak.map(bleakSample)
    // Sending ends with the loadgen's JSON line; then wait until the reports stop growing.
    let summary = try gen.waitLine("{", timeout: options.seconds * 20 + 120)
    var seen = -1
    var bleakSeen = -1
    var bleak1: (count: Int, cpu: Double)? = nil
    let drainDeadline = Date().addingTimeInterval(30)
    while Date() < drainDeadline {
        let now = counter.count.load(ordering: .relaxed)
        bleak1 = try bleak.map(bleakSample)
        let bleakNow = bleak1?.count ?? count
        let bleakDone = bleakNow >= count || (bleakNow == bleakSeen && bleakNow > 0)
        if (now >= count || (now == seen && now > 0)) && bleakDone { break }
        seen = now
        bleakSeen = bleakNow
        try await Task.sleep(for: .milliseconds(250))
    }
    await central?.shutdown()
    rawConnection?.close()
    await consumer.value
    let cpu1 = cpuSeconds()
    let rss = rssMB()
    let received = counter.count.load(ordering: .relaxed)

    // Parse {"sent":N,"seconds":S,...}
    func number(_ key: String) -> Double { jsonNumber(key, in: summary) ?? 0 }
    let sent = Int(number("sent"))

    // Verify and tally the last payload of every device (outside the measured CPU).
    var pipeline = IngestPipeline(secret: PollSecret(deriving: code))
    pipeline.tally.open(QuestionSpec(number: 1, options: 4))
    var last = counter.last.withLock { $0 }
    if options.mode == "binding" {
        // The binding-only consumer keeps no payloads: verify the ballots as sent.
        for line in (try? String(contentsOfFile: payloadFile, encoding: .utf8))?.split(separator: "\n") ?? [] {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let a = DeviceAddress(parts[0]) else { continue }
            var bytes: [UInt8] = []
            var i = parts[1].startIndex
            while i < parts[1].endIndex, let j = parts[1].index(i, offsetBy: 2, limitedBy: parts[1].endIndex),
                  let b = UInt8(parts[1][i..<j], radix: 16) {
                bytes.append(b)
                i = j
            }
            last[a] = bytes
        }
    }
    var valid = 0
    for (addr, data) in last {
        let r = pipeline.ingest(AdvertisementReport(address: addr, rssi: -50, companyID: BallotFormat.companyID, data: data,
                                                    timestamp: RadioInstant(nanoseconds: 1)))
        if r.ballot != nil { valid += 1 }
    }
    var matches = false
    if let results = pipeline.tally.results(question: 1) {
        matches = results.countTable == expected
    }
    // The received reports include none of the CPU spent verifying above: cpu1 was taken before.
    var result = RunResult(rate: rate, sent: sent, sendSeconds: number("seconds"), received: received,
                           cpuPerSignalMicros: received > 0 ? (cpu1 - cpu0) / Double(received) * 1e6 : .nan,
                           rssMB: rss.current, peakRSSMB: rss.peak, baselineRSSMB: baseline, validBallots: valid,
                           tallyMatches: matches)
    if let b0 = bleak0, let b1 = bleak1 {
        let n = b1.count - b0.count
        result.bleakReceived = b1.count
        result.bleakVersion = bleakVersion
        result.bleakCPUPerSignalMicros = n > 0 ? (b1.cpu - b0.cpu) / Double(n) * 1e6 : .nan
    }
    return result
}

// glibc's allocator as clicker-tally sets it up first thing in main (arenas, mmap threshold).
Allocator.configure()
let options = Options(CommandLine.arguments)
let loadgen = options.loadgen ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("bluez-loadgen").path
guard FileManager.default.isExecutableFile(atPath: loadgen) else {
    print("bluez-loadgen not found at \(loadgen); build it: swift build --package-path Benchmarks -c release --product bluez-loadgen")
    exit(2)
}
let (ballots, code, expected) = try makeBallots(devices: options.devices)
let payloadFile = FileManager.default.temporaryDirectory.appendingPathComponent("dbus-ingest-ballots-\(getpid()).txt").path
try ballots.write(toFile: payloadFile, atomically: true, encoding: .utf8)
defer { try? FileManager.default.removeItem(atPath: payloadFile) }
var bleakScriptFile: String? = nil
if options.python != nil {
    let f = FileManager.default.temporaryDirectory.appendingPathComponent("dbus-ingest-bleak-\(getpid()).py").path
    try bleakScript.write(toFile: f, atomically: true, encoding: .utf8)
    bleakScriptFile = f
}
defer { if let f = bleakScriptFile { try? FileManager.default.removeItem(atPath: f) } }

print("DBusIngest (\(options.mode)): \(options.devices) devices, sealed ballots (\(BallotFormat.advertisementLength) bytes), "
      + "\(options.seconds) s per fixed rate, \(options.saturationCount) signals at saturation"
      + (options.python.map { "; bleak side by side (\($0))" } ?? ""))
print("rate/s(target)  sent/s(actual)      sent  received  lost  CPU µs/signal  bleak: lost  µs/signal  ratio  RSS MB (peak)  ballots ok  tally ok")
var allGood = true
var ratios: [(String, Double)] = []
var bleakVersions: Set<String> = []
// --mode daemon: the clicker-tally binary; by default this checkout's release build.
let tallyBinary = options.tally ?? repoRoot.appendingPathComponent(".build/release/clicker-tally").path
if options.mode == "daemon" {
    guard FileManager.default.isExecutableFile(atPath: tallyBinary) else {
        print("clicker-tally not found at \(tallyBinary); build it (scripts/release-build.sh --product clicker-tally) or give --tally PATH")
        exit(2)
    }
    print("the daemon: \(tallyBinary), beacon \(options.beacon ? "on" : "off (--no-beacon)"); the generator's adapter "
          + "offers \(options.advertising == "none" ? "no LE advertising" : options.advertising + " advertising")")
}
for rate in options.rates {
    var r: RunResult
    if options.mode == "daemon" {
        let beacon: BeaconActivity
        (r, beacon) = try await runDaemon(rate: rate, options: options, loadgen: loadgen, tally: tallyBinary,
                                          bleakScriptFile: bleakScriptFile)
        let perSecond = r.sendSeconds > 0 ? Double(beacon.framesWhileSending) / r.sendSeconds : 0
        print("  beacon: \(beacon.registrations) registration(s), \(beacon.framesWhileSending) frames put on the air while "
              + "sending (\(String(format: "%.1f", perSecond))/s)")
        if options.beacon && options.advertising != "none" && beacon.framesWhileSending == 0 { allGood = false }
    } else {
        r = try await runOnce(rate: rate, options: options, payloadFile: payloadFile, code: code, expected: expected,
                              loadgen: loadgen, bleakScriptFile: bleakScriptFile)
    }
    let target = rate == 0 ? "saturation" : String(rate)
    let actual = r.sendSeconds > 0 ? Double(r.sent) / r.sendSeconds : 0
    let ratio = r.bleakCPUPerSignalMicros.map { r.cpuPerSignalMicros / $0 }
    if let ratio { ratios.append((target, ratio)) }
    if let v = r.bleakVersion { bleakVersions.insert(v) }
    let line = [
        target.padding(toLength: 14, withPad: " ", startingAt: 0),
        String(format: "%14.0f", actual),
        String(format: "%9d", r.sent),
        String(format: "%9d", r.received),
        String(format: "%5d", r.sent - r.received),
        String(format: "%14.2f", r.cpuPerSignalMicros),
        r.bleakReceived.map { String(format: "%11d", r.sent - $0) } ?? "          -",
        r.bleakCPUPerSignalMicros.map { String(format: "%10.2f", $0) } ?? "         -",
        ratio.map { String(format: "%5.2f", $0) } ?? "    -",
        String(format: "%8.1f (%5.1f)", r.rssMB, r.peakRSSMB),
        String(format: "%7d/%d", r.validBallots, options.devices),
        r.tallyMatches ? "yes" : "NO",
    ].joined(separator: "  ")
    print(line)
    if r.sent != r.received || r.validBallots != options.devices || !r.tallyMatches { allGood = false }
}
if !ratios.isEmpty {
    print("the bleak side: " + bleakVersions.sorted().joined(separator: "; "))
    let missed = ratios.filter { $0.1 > 0.75 }
    print("CPU per signal, clicker / bleak: " + ratios.map { "\($0.0) \(String(format: "%.2f", $0.1))" }.joined(separator: ", ")
          + (missed.isEmpty ? "; target ≤ 0.75 met" : "; target ≤ 0.75 MISSED at " + missed.map(\.0).joined(separator: ", ")))
}
print(allGood ? "every signal counted; every ballot verified and tallied" : "LOSS OR INVALID BALLOTS (see table)")
exit(allGood ? 0 : 1)
