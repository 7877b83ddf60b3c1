// DBusIngest --mode daemon: the tally as shipped, the `clicker-tally daemon` binary, against the same
// generator and bleak side by side. The generator's adapter offers LE advertising (`--advertising
// extended`: as bluetoothd 5.82 with experimental features; `legacy`: as 5.66; `none`: no
// LEAdvertisingManager1), so the daemon's beacon really broadcasts while it counts: it registers its
// advertisement, and every frame it puts on the air is a PropertiesChanged the generator applies (and
// answers with a TxPower write, as bluetoothd does). The daemon draws its own join code, so in extended
// frames its beacon is signed (protocol 4); the ballots are sealed with that code once it is known.
//
// Measured over the sending window: the daemon's CPU (utime + stime of /proc/PID/stat) per report it
// took in (its own `reports` counter, from `--log-statistics`), against bleak's CPU per callback.
// Afterwards: every device counted once with the right answer (the daemon's Results over D-Bus), and
// how many frames the beacon changed while the generator was sending.

import ClickerTransport
import ClickerWire
import DBus
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// utime + stime of a process, in seconds.
func processCPUSeconds(_ pid: pid_t) -> Double? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return nil }
    // Fields after "pid (comm)": state is field 3, utime 14, stime 15.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let utime = Double(fields[11]), let stime = Double(fields[12]) else { return nil }
    return (utime + stime) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// A number from a one-line JSON object ({"sent":N,...} or the daemon's statistics).
func jsonNumber(_ key: String, in line: String) -> Double? {
    guard let r = line.range(of: "\"\(key)\":") else { return nil }
    return Double(line[r.upperBound...].prefix { "0123456789.eE+-".contains($0) })
}

/// The daemon's `reports` counter, from its latest `statistics {...}` log line.
func daemonReports(_ daemon: Child) -> Int? {
    daemon.lastLine(containing: "statistics {").flatMap { jsonNumber("reports", in: $0) }.map { Int($0) }
}

/// What the beacon did, from the generator's end line.
struct BeaconActivity {
    var registrations: Int
    var framesWhileSending: Int
}

func runDaemon(rate: Int, options: Options, loadgen: String, tally: String,
               bleakScriptFile: String?) async throws -> (RunResult, BeaconActivity) {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dbus-ingest-\(UUID().uuidString.prefix(8))")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let bus = try Child(repoRoot.appendingPathComponent("Tests/Harness/private-bus.sh").path, [dir.path])
    defer { bus.stop() }
    let address = try bus.waitLine("unix:", timeout: 10)

    // The devices advertise nothing of ours until the poll's code is known: one zero byte, which the
    // tally counts as someone else's data.
    let payloadFile = dir.appendingPathComponent("payloads.txt").path
    let placeholder = (0..<options.devices).map { i in
        String(format: "C0:00:00:00:%02X:%02X 00", (i >> 8) & 0xFF, i & 0xFF)
    }.joined(separator: "\n") + "\n"
    try placeholder.write(toFile: payloadFile, atomically: true, encoding: .utf8)
    let count = rate > 0 ? Int(Double(rate) * options.seconds) : options.saturationCount
    let scanners = bleakScriptFile != nil ? 2 : 1
    let gen = try Child(loadgen, ["--address", address, "--payloads", payloadFile, "--devices", String(options.devices),
                                  "--count", String(count), "--rate", String(rate), "--discoveries", String(scanners),
                                  "--advertising", options.advertising, "--reload-first"])
    defer { gen.stop() }
    _ = try gen.waitLine("ready", timeout: 10)

    var env = ProcessInfo.processInfo.environment
    env["DBUS_SYSTEM_BUS_ADDRESS"] = address
    env["XDG_STATE_HOME"] = dir.appendingPathComponent("state").path
    env["XDG_RUNTIME_DIR"] = dir.path
    // As the unit runs it, except that GATT read-backs are off: the generator serves no GATT, and a read
    // is one per new ballot, not per signal. Statistics every half second give the reports taken in.
    let daemon = try Child(tally, ["daemon", "--bus", "system", "--radio", "bluez", "--adapter", "hci0",
                                   "--no-gatt-confirm", "--log-statistics", "0.5"] + (options.beacon ? [] : ["--no-beacon"]),
                           environment: env, mergeStandardError: true)
    defer { daemon.stop() }

    let conn = try await DBusConnection.connect(.address(address))
    defer { conn.close() }
    func tallyCall(_ method: String, _ arguments: [DBusValue] = []) async throws -> String {
        try await conn.call(String.self, destination: "org.clicker.Tally1", path: DBusObjectPath("/org/clicker/Tally1"),
                            interface: "org.clicker.Tally1", method: method, arguments: arguments, timeout: .seconds(20))
    }
    var codeText: String? = nil
    let up = Date().addingTimeInterval(60)
    while codeText == nil, Date() < up {
        codeText = try? await tallyCall("JoinCode")
        if codeText == nil { try await Task.sleep(for: .milliseconds(200)) }
    }
    guard let codeText else { throw Failure("the daemon did not answer JoinCode within 60 s") }
    let code = try JoinCode(parsing: codeText)
    if options.beacon && options.advertising != "none" {
        _ = try daemon.waitLine(containing: "radio: beacon in", timeout: 30)
    }

    let (ballots, _, expected) = try makeBallots(devices: options.devices, code: code)
    try ballots.write(toFile: payloadFile, atomically: true, encoding: .utf8)
    kill(gen.pid, SIGHUP)
    _ = try gen.waitLine("reloaded", timeout: 10)

    var bleak: Child? = nil
    var bleakVersion: String? = nil
    if let bleakScriptFile, let python = options.python {
        let b = try Child(python, [bleakScriptFile, String(BallotFormat.companyID)], environment: env)
        bleak = b
        bleakVersion = String(try b.waitLine("scanning", timeout: 30).dropFirst("scanning ".count))
    }
    defer { bleak?.stop() }

    _ = try gen.waitLine("started", timeout: 30)
    // The reports taken in before sending (the mirror's first data): nothing of ours was sent before "started".
    let reports0 = daemonReports(daemon) ?? 0
    guard let cpu0 = processCPUSeconds(daemon.pid) else { throw Failure("the daemon is gone") }
    let bleak0 = try bleak.map(bleakSample)
    let summary = try gen.waitLine("{", timeout: options.seconds * 20 + 120)
    // Until the daemon's count and bleak's stop growing.
    var seen = -1
    var bleakSeen = -1
    var bleak1: (count: Int, cpu: Double)? = nil
    var reports1 = reports0
    let drainDeadline = Date().addingTimeInterval(30)
    while Date() < drainDeadline {
        try await Task.sleep(for: .milliseconds(600))
        reports1 = daemonReports(daemon) ?? reports1
        bleak1 = try bleak.map(bleakSample)
        let bleakNow = bleak1?.count ?? count
        let bleakDone = bleakNow >= count || (bleakNow == bleakSeen && bleakNow > 0)
        if (reports1 - reports0 >= count || reports1 == seen) && bleakDone { break }
        seen = reports1
        bleakSeen = bleakNow
    }
    guard let cpu1 = processCPUSeconds(daemon.pid) else { throw Failure("the daemon is gone") }
    let rss = rssMB(of: daemon.pid)
    let received = reports1 - reports0

    // Every device counted once, with its answer.
    let results = try await tallyCall("Results", [.uint32(0)])
    var counted: [Answer: Int] = [:]
    if let object = try JSONSerialization.jsonObject(with: Data(results.utf8)) as? [String: Any],
       let counts = object["counts"] as? [String: Int] {
        for (letter, n) in counts { if let c = letter.first, let a = Answer.letter(c), n > 0 { counted[a] = n } }
    }
    let sent = Int(jsonNumber("sent", in: summary) ?? 0)
    var result = RunResult(rate: rate, sent: sent, sendSeconds: jsonNumber("seconds", in: summary) ?? 0, received: received,
                           cpuPerSignalMicros: received > 0 ? (cpu1 - cpu0) / Double(received) * 1e6 : .nan,
                           rssMB: rss.current, peakRSSMB: rss.peak, baselineRSSMB: 0,
                           validBallots: counted.values.reduce(0, +), tallyMatches: counted == expected)
    if let b0 = bleak0, let b1 = bleak1 {
        let n = b1.count - b0.count
        result.bleakReceived = b1.count
        result.bleakVersion = bleakVersion
        result.bleakCPUPerSignalMicros = n > 0 ? (b1.cpu - b0.cpu) / Double(n) * 1e6 : .nan
    }
    let beacon = BeaconActivity(registrations: Int(jsonNumber("adv_registrations", in: summary) ?? 0),
                                framesWhileSending: Int(jsonNumber("adv_changes_while_sending", in: summary) ?? 0))
    return (result, beacon)
}
