import ClickerTestSupport
import XCTest
import Synchronization
import DBus
import DBusTestSupport

/// Number of match rules the bus holds for `name` (org.freedesktop.DBus.Debug.Stats).
func busMatchRuleCount(_ c: DBusConnection, for name: String) async throws -> UInt32 {
    let stats = try await c.call([String: DBusValue].self, destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                 interface: "org.freedesktop.DBus.Debug.Stats", method: "GetConnectionStats",
                                 arguments: [.string(name)])
    return try XCTUnwrap(stats["MatchRules"]).decode(UInt32.self)
}

/// Returns once the bus has handled everything `c` sent before (the bus handles one connection's
/// messages in order, routing each signal before it reads the next message).
func busRoundTrip(_ c: DBusConnection) async throws {
    _ = try await c.nameOwner("org.freedesktop.DBus")
}

final class SignalTests: XCTestCase {
    var bus: PrivateBus!

    override func setUpWithError() throws {
        bus = try PrivateBus()
    }

    override func tearDown() {
        bus?.stop()
    }

    func testSubscriptionsSeeOnlyTheirOwnMatches() async throws {
        let rx = try await DBusConnection.connect(.address(bus.address))
        let tx = try await DBusConnection.connect(.address(bus.address))
        defer { rx.close(); tx.close() }
        let pings = try await rx.signals(matching: DBusMatchRule(interface: "org.example.Sig", member: "Ping", path: "/a"))
        let pongs = try await rx.signals(matching: DBusMatchRule(interface: "org.example.Sig", member: "Pong",
                                                                 pathNamespace: "/ns", arguments: [0: "yes"]))
        try tx.emitSignal(path: "/a", interface: "org.example.Sig", name: "Pong", arguments: [.string("yes")])  // wrong path
        try tx.emitSignal(path: "/b", interface: "org.example.Sig", name: "Ping", arguments: [.int32(0)])      // wrong path
        try tx.emitSignal(path: "/a", interface: "org.example.Other", name: "Ping", arguments: [.int32(0)])    // wrong iface
        try tx.emitSignal(path: "/a", interface: "org.example.Sig", name: "Ping", arguments: [.int32(1)])
        try tx.emitSignal(path: "/ns/x/y", interface: "org.example.Sig", name: "Pong", arguments: [.string("no")])
        try tx.emitSignal(path: "/nsx", interface: "org.example.Sig", name: "Pong", arguments: [.string("yes")])
        try tx.emitSignal(path: "/ns/x/y", interface: "org.example.Sig", name: "Pong", arguments: [.string("yes"), .uint32(2)])
        try tx.emitSignal(path: "/ns", interface: "org.example.Sig", name: "Pong", arguments: [.string("yes"), .uint32(3)])
        try tx.emitSignal(path: "/a", interface: "org.example.Sig", name: "Ping", arguments: [.int32(4)])

        var pi = pings.makeAsyncIterator()
        var po = pongs.makeAsyncIterator()
        let p1 = await pi.next(), p2 = await pi.next()
        XCTAssertEqual(p1?.arguments, [.int32(1)])
        XCTAssertEqual(p2?.arguments, [.int32(4)])
        XCTAssertEqual(p1?.sender, tx.uniqueName)
        XCTAssertEqual(p1?.path, "/a")
        XCTAssertEqual(p1?.name, "Ping")
        let q1 = await po.next(), q2 = await po.next()
        XCTAssertEqual(q1?.arguments, [.string("yes"), .uint32(2)])
        XCTAssertEqual(q2?.arguments, [.string("yes"), .uint32(3)])
        // Nothing else arrives: a final marker is the next thing each stream sees.
        try tx.emitSignal(path: "/a", interface: "org.example.Sig", name: "Ping", arguments: [.int32(99)])
        let last = await pi.next()
        XCTAssertEqual(last?.arguments, [.int32(99)])
    }

    func testCancellingTheConsumerRemovesTheMatchRule() async throws {
        let rx = try await DBusConnection.connect(.address(bus.address))
        let tx = try await DBusConnection.connect(.address(bus.address))
        defer { rx.close(); tx.close() }
        let name = try XCTUnwrap(rx.uniqueName)
        let baseline = try await busMatchRuleCount(tx, for: name)
        let stream = try await rx.signals(matching: DBusMatchRule(interface: "org.example.Sig"))
        let withSub = try await busMatchRuleCount(tx, for: name)
        XCTAssertEqual(withSub, baseline + 1)
        XCTAssertEqual(rx.activeMatchCount, 1)
        let got = Mutex(0)
        let (delivered, deliver) = AsyncStream<Void>.makeStream()
        let consumer = Task {
            for await _ in stream {
                got.withLock { $0 += 1 }
                deliver.yield()
            }
        }
        try tx.emitSignal(path: "/", interface: "org.example.Sig", name: "S")
        let arrived = await first(of: delivered, within: .seconds(10))
        XCTAssertTrue(arrived, "the first signal reached the consumer")
        XCTAssertEqual(got.withLock { $0 }, 1)
        consumer.cancel()
        await consumer.value
        try await eventually("RemoveMatch") { try await busMatchRuleCount(tx, for: name) == baseline }
        try await eventually("local count") { rx.activeMatchCount == 0 }
        // With the rule gone, the bus no longer routes S to rx. A marker sent after it on the same
        // connection arrives after S would have (the bus keeps one sender's order): once it is in, rx
        // must have read exactly one signal, the marker.
        let markers = try await rx.signals(matching: DBusMatchRule(interface: "org.example.Mark"))
        var mi = markers.makeAsyncIterator()
        let before = rx.signalsReceived
        try tx.emitSignal(path: "/", interface: "org.example.Sig", name: "S")
        try tx.emitSignal(path: "/", interface: "org.example.Mark", name: "M")
        let marker = await mi.next()
        XCTAssertEqual(marker?.name, "M")
        XCTAssertEqual(rx.signalsReceived - before, 1, "rx still receives the unsubscribed signal")
        XCTAssertEqual(got.withLock { $0 }, 1)
    }

    func testWellKnownSenderIsTrackedAcrossOwners() async throws {
        let rx = try await DBusConnection.connect(.address(bus.address))
        let a = try await DBusConnection.connect(.address(bus.address))
        let b = try await DBusConnection.connect(.address(bus.address))
        defer { rx.close(); a.close(); b.close() }
        try await a.requestName("org.example.Emitter")
        let stream = try await rx.signals(matching: DBusMatchRule(sender: "org.example.Emitter", interface: "org.example.Sig"))
        // A second, broader subscription makes the bus route every sender's signals to rx: only the
        // connection's own sender matching keeps the non-owners' out of `stream`.
        let everyone = try await rx.signals(matching: DBusMatchRule(interface: "org.example.Sig"))
        defer { _ = everyone }
        var it = stream.makeAsyncIterator()
        func next() async -> String? {
            guard let s = await it.next() else { return nil }
            return (try? s.arguments.first?.decode(String.self)) ?? "?"
        }
        // The non-owner's signal goes first, and a round trip to the bus on its connection makes sure the
        // bus has routed it before the owner's: a filter that let it through would yield it first.
        try b.emitSignal(path: "/", interface: "org.example.Sig", name: "S", arguments: [.string("b-not-owner")])
        try await busRoundTrip(b)
        try a.emitSignal(path: "/", interface: "org.example.Sig", name: "S", arguments: [.string("a-owner")])
        let first = await next()
        XCTAssertEqual(first, "a-owner")
        // Ownership moves to b.
        try await a.releaseName("org.example.Emitter")
        try await b.requestName("org.example.Emitter")
        // The bus sends NameOwnerChanged to rx before it processes anything b sends afterwards, and rx
        // handles messages in order, so the owner is up to date when the next signals are matched.
        try a.emitSignal(path: "/", interface: "org.example.Sig", name: "S", arguments: [.string("a-not-owner")])
        try await busRoundTrip(a)
        try b.emitSignal(path: "/", interface: "org.example.Sig", name: "S", arguments: [.string("b-owner")])
        let second = await next()
        XCTAssertEqual(second, "b-owner")
    }

    /// The fast path: PropertiesChanged with a{qv} ManufacturerData and n RSSI from a Python peer,
    /// decoded on the dispatch thread straight from the message, delivered in batches.
    func testBatchedPropertiesChangedFromPython() async throws {
        let py = try SystemPython.start(script: PythonScripts.echoService, bus: bus)
        defer { py.stop() }
        _ = try py.waitForLine { $0.hasPrefix("READY") }
        let c = try await DBusConnection.connect(.address(bus.address))
        defer { c.close() }
        struct Report: Sendable, Equatable { var rssi: Int16; var company: UInt16; var first: UInt8 }
        let stats = DBusSubscriptionStats()
        let batches = try await c.signalBatches(
            matching: .propertiesChanged(sender: "org.example.PyEcho", interface: "org.bluez.Device1"), stats: stats
        ) { _, r in
            _ = try r.readString()
            var rssi: Int16 = 0
            var company: UInt16 = 0
            var first: UInt8 = 0
            try r.forEachDictEntry { e in
                let key = try e.withStringBytes { b -> Int in
                    b.elementsEqual("RSSI".utf8) ? 1 : b.elementsEqual("ManufacturerData".utf8) ? 2 : 0
                }
                if key == 1 {
                    var v = try e.enterVariant()
                    rssi = try v.readInt16()
                } else if key == 2 {
                    var v = try e.enterVariant()
                    try v.forEachDictEntry { m in
                        company = try m.readUInt16()
                        var bytes = try m.enterVariant()
                        first = try bytes.withBytes { $0.first ?? 0 }
                    }
                } else {
                    try e.skip()
                }
            }
            return Report(rssi: rssi, company: company, first: first)
        }
        let n = 2000
        _ = try await pyCall(c, "EmitMany", [.string("x"), .uint32(UInt32(n)), .int32(-42)], timeout: .seconds(60))
        var reports: [Report] = []
        for await batch in batches {
            reports += batch
            if reports.count >= n { break }
        }
        XCTAssertEqual(reports.count, n)
        XCTAssertEqual(reports.map(\.first), (0..<n).map { UInt8($0 & 255) })
        XCTAssertTrue(reports.allSatisfy { $0.rssi == -42 && $0.company == 0xFFFF })
        XCTAssertEqual(stats.delivered.load(ordering: .relaxed), n)
        XCTAssertEqual(stats.rejected.load(ordering: .relaxed), 0)
        XCTAssertLessThanOrEqual(stats.batches.load(ordering: .relaxed), n)
    }

    /// Signals whose body does not have the expected types are counted as rejected, never trap, and do
    /// not disturb the following ones.
    func testUnexpectedSignalBodiesAreRejected() async throws {
        let rx = try await DBusConnection.connect(.address(bus.address))
        let tx = try await DBusConnection.connect(.address(bus.address))
        defer { rx.close(); tx.close() }
        let stats = DBusSubscriptionStats()
        let stream = try await rx.signalBatches(matching: DBusMatchRule(interface: "org.example.Sig"), stats: stats) { _, r in
            try r.readInt32()
        }
        try tx.emitSignal(path: "/", interface: "org.example.Sig", name: "S", arguments: [.string("not an int")])
        try tx.emitSignal(path: "/", interface: "org.example.Sig", name: "S", arguments: [])
        try tx.emitSignal(path: "/", interface: "org.example.Sig", name: "S", arguments: [.variant(.int32(1))])
        try tx.emitSignal(path: "/", interface: "org.example.Sig", name: "S", arguments: [.int32(5)])
        var it = stream.makeAsyncIterator()
        let batch = await it.next()
        XCTAssertEqual(batch, [5])
        XCTAssertEqual(stats.rejected.load(ordering: .relaxed), 3)
    }

    /// The batches without a stream: handed over on the connection's own thread, every signal once and
    /// in order, and `finished` after the last one when the connection closes.
    func testBatchesHandedOverOnTheDispatchThread() async throws {
        let rx = try await DBusConnection.connect(.address(bus.address))
        let tx = try await DBusConnection.connect(.address(bus.address))
        defer { tx.close() }
        let (handed, cont) = AsyncStream<(values: [Int32], thread: String)>.makeStream()
        let stats = DBusSubscriptionStats()
        _ = try await rx.signalBatches(
            matching: DBusMatchRule(interface: "org.example.Inline"), maxBatch: 64, stats: stats,
            decode: { _, r in try r.readInt32() },
            deliver: { batch in
                let name = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?"
                cont.yield((batch, name.trimmingCharacters(in: .newlines)))
            },
            finished: { cont.finish() })
        let n = 500
        for i in 0..<n {
            try tx.emitSignal(path: "/", interface: "org.example.Inline", name: "S", arguments: [.int32(Int32(i))])
        }
        try await busRoundTrip(tx)
        var values: [Int32] = []
        var threads: Set<String> = []
        for await b in handed {
            values += b.values
            threads.insert(b.thread)
            if values.count == n { rx.close() }
        }
        XCTAssertEqual(values, (0..<Int32(n)).map { $0 })
        XCTAssertEqual(threads, ["clicker-dbus"])
        XCTAssertEqual(stats.delivered.load(ordering: .relaxed), n)
        XCTAssertLessThanOrEqual(stats.batches.load(ordering: .relaxed), n)
    }

    func testPropertiesChangedConvenienceAndNameOwnerChanged() async throws {
        let server = try await DBusConnection.connect(.address(bus.address))
        let client = try await DBusConnection.connect(.address(bus.address))
        defer { client.close() }
        let owners = try await client.nameOwnerChanges(for: "org.example.Server")
        var ownerIt = owners.makeAsyncIterator()
        try await server.requestName("org.example.Server")
        let obj = try server.export("/obj", interfaces: [
            DBusInterface("org.example.Thing", properties: [DBusProperty("Level", .int32, value: .int32(0))]),
        ])
        let changes = try await client.propertiesChanged(.propertiesChanged(sender: "org.example.Server", interface: "org.example.Thing"))
        var it = changes.makeAsyncIterator()
        try obj.setProperty("Level", .int32(3), interface: "org.example.Thing")
        let next = await it.next()
        let batch = try XCTUnwrap(next)
        XCTAssertEqual(batch.first?.changed, ["Level": .int32(3)])
        XCTAssertEqual(batch.first?.interface, "org.example.Thing")
        XCTAssertEqual(batch.first?.path, "/obj")
        let acquired = await ownerIt.next()
        XCTAssertEqual(acquired?.newOwner, server.uniqueName)
        let serverName = server.uniqueName
        server.close()
        let lost = await ownerIt.next()
        XCTAssertEqual(lost?.oldOwner, serverName)
        XCTAssertEqual(lost?.newOwner, "")
    }
}

