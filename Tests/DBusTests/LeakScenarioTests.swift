import XCTest
import Synchronization
import ClickerTestSupport
import DBus
import DBusTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Exercises every resource-owning path (connections, calls, replies, errors, timeouts, cancellation,
/// signal subscriptions, exports, Unix fds, closing with work in flight), then checks that every
/// connection and dispatch thread is gone. `Tests/leaks/run.sh` runs this under valgrind memcheck,
/// which additionally fails on any definitely-lost block or memory error (leaked libdbus messages,
/// connections or pending replies would show up there).
final class LeakScenarioTests: XCTestCase {
    func testScenarioReleasesEverything() async throws {
        // Other test cases keep their (closed) connections in instance properties until the run ends,
        // so compare against the counts before the scenario.
        let before = DBusConnection.liveInstances
        // Under valgrind, child processes cannot be spawned, so Tests/leaks/run.sh starts the
        // daemon itself and passes its address.
        if let external = getenv("DBUS_LEAKCHECK_BUS_ADDRESS") {
            try await runScenario(String(cString: external))
        } else {
            let bus = try PrivateBus()
            defer { bus.stop() }
            try await runScenario(bus.address)
        }
        // Dispatch threads end asynchronously after close; wait for them and for their connections.
        let deadline = ContinuousClock.now + .seconds(20)
        func settled() -> Bool {
            let now = DBusConnection.liveInstances
            return now.connections <= before.connections && now.dispatchThreads <= before.dispatchThreads
        }
        while !settled() && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        XCTAssertLessThanOrEqual(DBusConnection.liveInstances.connections, before.connections)
        XCTAssertLessThanOrEqual(DBusConnection.liveInstances.dispatchThreads, before.dispatchThreads)
    }

    func runScenario(_ address: String) async throws {
        let server = try await DBusConnection.connect(.address(address))
        let clock = TestClock()
        let client = try await DBusConnection.connect(.address(address), clock: clock)
        // Each Hang call announces itself, so calls are cancelled or cut off while really in flight.
        let (hanging, hangingCont) = AsyncStream<Void>.makeStream()
        var hangs = hanging.makeAsyncIterator()
        try await server.requestName("org.example.Leak")
        server.addObjectManager(at: "/app")
        let obj = try server.export("/app/obj", interfaces: [
            DBusInterface("org.example.Leak", methods: [
                DBusMethod("Echo", in: nil, out: nil) { call in call.arguments },
                DBusMethod("Fail") { _ in throw DBusError(name: "org.example.Error.Leak", message: "x") },
                DBusMethod("Hang") { _ in
                    hangingCont.yield()  // announces the call: it is in flight now
                    try await Task.sleep(for: .seconds(30))
                    return []
                },
            ], properties: [
                DBusProperty("P", .string, access: .readwrite, value: .string("v")),
            ]),
        ])
        // Calls with every kind of value, including fds and big byte arrays.
        for sample in roundTripSamples {
            let r = try await client.call(destination: "org.example.Leak", path: "/app/obj", interface: "org.example.Leak",
                                          method: "Echo", arguments: sample)
            XCTAssertEqual(try r.arguments(), sample)
        }
        let fd = DBusUnixFD(takingOwnershipOf: open("/dev/null", O_RDONLY))
        let fdReply = try await client.call(destination: "org.example.Leak", path: "/app/obj", interface: "org.example.Leak",
                                            method: "Echo", arguments: [.unixFD(fd)])
        _ = try fdReply.decode(DBusUnixFD.self)
        // Errors, unknown methods, timeouts, cancellation.
        await XCTAssertThrowsAsync {
            _ = try await client.call(destination: "org.example.Leak", path: "/app/obj", interface: "org.example.Leak", method: "Fail")
        }
        await XCTAssertThrowsAsync {
            _ = try await client.call(destination: "org.example.Leak", path: "/app/obj", interface: "org.example.Leak", method: "Nope")
        }
        let timedOut = Task {
            try await client.call(destination: "org.example.Leak", path: "/app/obj", interface: "org.example.Leak",
                                  method: "Hang", timeout: .milliseconds(50))
        }
        _ = await hangs.next()
        clock.advance(by: .milliseconds(50))
        await XCTAssertThrowsAsync { _ = try await timedOut.value }
        let cancelled = Task {
            try await client.call(destination: "org.example.Leak", path: "/app/obj", interface: "org.example.Leak", method: "Hang")
        }
        _ = await hangs.next()
        cancelled.cancel()
        _ = try? await cancelled.value
        // Properties and object manager.
        _ = try await client.call(destination: "org.example.Leak", path: "/app/obj", interface: "org.freedesktop.DBus.Properties",
                                  method: "Set", arguments: [.string("org.example.Leak"), .string("P"), .variant(.string("w"))])
        _ = try await client.call(destination: "org.example.Leak", path: "/app", interface: "org.freedesktop.DBus.ObjectManager",
                                  method: "GetManagedObjects")
        _ = try await client.call(destination: "org.example.Leak", path: "/app", interface: "org.freedesktop.DBus.Introspectable",
                                  method: "Introspect")
        // Signals: plain stream, batches (with rejects), well-known sender, cancellation.
        let stream = try await client.signals(matching: DBusMatchRule(sender: "org.example.Leak", interface: "org.example.Leak"))
        let stats = DBusSubscriptionStats()
        let batches = try await client.signalBatches(matching: .propertiesChanged(sender: "org.example.Leak"), stats: stats) { _, r in
            try r.readString()
        }
        try obj.emitSignal(interface: "org.example.Leak", name: "S", arguments: [.bytes([1, 2, 3])])
        try obj.setProperty("P", .string("z"), interface: "org.example.Leak")
        var it = stream.makeAsyncIterator()
        _ = await it.next()
        var bit = batches.makeAsyncIterator()
        _ = await bit.next()
        let consumer = Task { for await _ in stream {} }
        consumer.cancel()
        await consumer.value
        // Short-lived connections, one closed with a call in flight, one dropped without close().
        for _ in 0..<5 {
            let c = try await DBusConnection.connect(.address(address))
            _ = try await c.nameOwner("org.example.Leak")
            c.close()
        }
        let busy = try await DBusConnection.connect(.address(address))
        let inflight = Task {
            try await busy.call(destination: "org.example.Leak", path: "/app/obj", interface: "org.example.Leak", method: "Hang")
        }
        _ = await hangs.next()
        busy.close()
        _ = try? await inflight.value
        obj.unexport()
        do {
            let dropped = try await DBusConnection.connect(.address(address))
            _ = try await dropped.signals(matching: DBusMatchRule(interface: "org.example.Never"))
        }
        client.close()
        server.close()
    }
}
