// Receive-cost experiment for the DBus binding (built by tools/dbus-receive-cost.sh together with
// Sources/DBus and the test's decoder, Tests/DBusTests/AdvReportDecoder.swift, optimised). Modes:
//   recv N [null] [pending]
//                  subscribe to BlueZ-shaped PropertiesChanged through the batched fast path, print the
//                  dispatch thread's CPU per signal once N signals arrived ("null": skip decoding;
//                  "pending": with a call of an hour's timeout awaiting its reply all the while, so the
//                  dispatch thread reads the reply deadline's clock at every wake-up)
//   send N         emit N such signals (200 device paths, RSSI n + ManufacturerData a{qv})
//   micro N        decoder / matcher / wrapper cost on one in-memory message
import Foundation
import Synchronization

let address = CommandLine.arguments[1]
let total = Int(CommandLine.arguments[2]) ?? 100_000
let mode = CommandLine.arguments.count > 3 ? CommandLine.arguments[3] : "recv"
let devices = 200
let paths = try (0..<devices).map { i in
    try DBusObjectPath(String(format: "/org/bluez/hci0/dev_AA_BB_CC_DD_%02X_%02X", i >> 8, i & 255))
}
if mode == "micro" {
    let msg = try DBusMessage.signal(path: paths[1], interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", arguments: [.string("org.bluez.Device1"),
                                      .stringVariantDictionary(["RSSI": .int16(-40),
                                                                "ManufacturerData": .uint16VariantDictionary([0xFFFF: .bytes(Array(0..<24))])]),
                                      .array(.string, [])])
    let match = CompiledMatch(.propertiesChanged(interface: "org.bluez.Device1"))
    var t0 = dbusThreadCPUNanos()
    var acc = 0
    for _ in 0..<total {
        var r = msg.reader()
        if let rep = try decodeAdvReport(msg, &r) { acc &+= Int(rep.rssi) }
    }
    var t1 = dbusThreadCPUNanos()
    print(String(format: "decode: %.0f ns/signal", Double(t1 - t0) / Double(total)), acc)
    t0 = dbusThreadCPUNanos()
    for _ in 0..<total { if match.matches(msg.raw) { acc &+= 1 } }
    t1 = dbusThreadCPUNanos()
    print(String(format: "match: %.0f ns/signal", Double(t1 - t0) / Double(total)), acc)
    t0 = dbusThreadCPUNanos()
    for _ in 0..<total { let m = DBusMessage(retaining: msg.raw); acc &+= Int(m.serial) }
    t1 = dbusThreadCPUNanos()
    print(String(format: "wrap: %.0f ns/signal", Double(t1 - t0) / Double(total)), acc)
    exit(0)
}
if mode == "send" {
    let tx = try await DBusConnection.connect(.address(address))
    try await tx.requestName("org.example.Blaster")
    // wait for the receiver's go
    try await Task.sleep(for: .milliseconds(300))
    for i in 0..<total {
        let payload = (0..<24).map { UInt8(truncatingIfNeeded: $0 &+ i) }
        try tx.emitSignal(path: paths[i % devices], interface: "org.freedesktop.DBus.Properties", name: "PropertiesChanged",
                          arguments: [.string("org.bluez.Device1"),
                                      .stringVariantDictionary(["RSSI": .int16(Int16(-40 - i % 50)),
                                                                "ManufacturerData": .uint16VariantDictionary([0xFFFF: .bytes(payload)])]),
                                      .array(.string, [])])
        if i % 5000 == 4999 { try await Task.sleep(for: .milliseconds(1)) }
    }
    // A call's reply comes after the bus has taken every signal sent before it (on a loaded machine
    // half a second was not always enough for them to leave, and the receiver waited for ever).
    _ = try await tx.nameOwner("org.example.Blaster")
    exit(0)
}
let rx = try await DBusConnection.connect(.address(address))
let stats = DBusSubscriptionStats()
var ru0 = rusage(); getrusage(RUSAGE_SELF.rawValue, &ru0)
let nullDecode = CommandLine.arguments.count > 4 && CommandLine.arguments[4] == "null"
let batches = try await rx.signalBatches(matching: .propertiesChanged(interface: "org.bluez.Device1"),
                                         maxBatch: 512, bufferLimit: 1 << 20, stats: stats, decode: nullDecode ? { _, _ in AdvReport(address: 1, rssi: 0, company: 0, payload: (0, 0), length: 0) } : decodeAdvReport)
var holder: DBusConnection? = nil  // open until the process ends
if CommandLine.arguments.count > 5 && CommandLine.arguments[5] == "pending" {
    // A second connection in this process takes the call and never answers it.
    let h = try await DBusConnection.connect(.address(address))
    holder = h
    let (arrived, arrival) = AsyncStream<Void>.makeStream()
    _ = try h.export("/hold", interfaces: [DBusInterface("org.example.Hold", methods: [
        DBusMethod("Hold") { _ in
            arrival.yield()
            try await Task.sleep(for: .seconds(3600))
            return []
        },
    ])])
    Task { _ = try? await rx.call(destination: h.uniqueName, path: "/hold", interface: "org.example.Hold",
                                  method: "Hold", timeout: .seconds(3600)) }
    var it = arrived.makeAsyncIterator()
    _ = await it.next()
}
print("READY")

let cpu0 = rx.dispatchThreadCPUNanoseconds!
var n = 0
var ccpu: UInt64 = 0
var counts: [UInt64: Int] = [:]
for await batch in batches {
    let t0 = dbusThreadCPUNanos()
    for r in batch { counts[r.address, default: 0] += 1 }
    n += batch.count
    ccpu += dbusThreadCPUNanos() - t0
    if n >= total { break }
}
let cpu1 = rx.dispatchThreadCPUNanoseconds!
var ru1 = rusage(); getrusage(RUSAGE_SELF.rawValue, &ru1)
func us(_ t: timeval) -> Double { Double(t.tv_sec) * 1e6 + Double(t.tv_usec) }
let proc = (us(ru1.ru_utime) + us(ru1.ru_stime) - us(ru0.ru_utime) - us(ru0.ru_stime)) * 1000 / Double(total)
rx.close()
holder?.close()
try await Task.sleep(for: .milliseconds(200))
print(String(format: "n=%d dispatch %.0f ns/signal consumer %.0f ns/signal process %.0f ns/signal batches=%d", n,
             Double(cpu1 - cpu0) / Double(total), Double(ccpu) / Double(total), proc, stats.batches.load(ordering: .relaxed)))
