import XCTest
import Synchronization
import DBus
import DBusTestSupport

final class CallTests: XCTestCase {
    var bus: PrivateBus!
    var py: HelperProcess!
    var c: DBusConnection!

    override func setUp() async throws {
        bus = try PrivateBus()
        py = try SystemPython.start(script: PythonScripts.echoService, bus: bus)
        _ = try py.waitForLine { $0.hasPrefix("READY") }
        c = try await DBusConnection.connect(.address(bus.address))
    }

    override func tearDown() async throws {
        c?.close()
        py?.stop()
        bus?.stop()
    }

    func call(_ method: String, _ args: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws -> DBusMessage {
        try await pyCall(c, method, args, timeout: timeout)
    }
}

/// Calls the Python echo service.
func pyCall(_ c: DBusConnection, _ method: String, _ args: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws -> DBusMessage {
        try await c.call(destination: "org.example.PyEcho", path: "/echo", interface: "org.example.Echo",
                         method: method, arguments: args, timeout: timeout)
}

extension CallTests {

    func testRemoteErrorKeepsNameAndMessage() async throws {
        do {
            _ = try await call("Fail", [.string("org.bluez.Error.NotPermitted"), .string("Write not permitted")])
            XCTFail("no error")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, "org.bluez.Error.NotPermitted")
            XCTAssertEqual(e.message, "Write not permitted")
            XCTAssertFalse(e.isTimeout)
        }
    }

    func testTimeout() async throws {
        let start = ContinuousClock.now
        do {
            _ = try await call("Hang", timeout: .milliseconds(300))
            XCTFail("no timeout")
        } catch let e as DBusError {
            XCTAssertTrue(e.isTimeout, "\(e)")
        }
        let elapsed = ContinuousClock.now - start
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(290))
        XCTAssertLessThan(elapsed, .seconds(10))
        // Still usable afterwards.
        let r = try await call("Echo", [.int32(7)])
        XCTAssertEqual(try r.decode(Int32.self), 7)
    }

    func testShortTimeoutWhileLongOneIsPending() async throws {
        let c = self.c!
        async let long: DBusMessage = pyCall(c, "Hang", timeout: .seconds(30))
        let start = ContinuousClock.now
        await XCTAssertThrowsAsync { _ = try await pyCall(c, "Hang", timeout: .milliseconds(100)) }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5))
        c.close()
        do {
            _ = try await long
            XCTFail("pending call survived close")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, DBusError.disconnected)
        }
    }

    /// Waits until the echo service has received a `Hang` call (it signals `Hanging`).
    func hangingCall(_ body: () -> Void) async throws {
        let hanging = try await c.signals(matching: DBusMatchRule(sender: "org.example.PyEcho", interface: "org.example.Echo",
                                                                  member: "Hanging"))
        var it = hanging.makeAsyncIterator()
        body()
        _ = await it.next()
    }

    func testCancellation() async throws {
        let c = self.c!
        var task: Task<DBusMessage, Error>!
        // Cancelled only once the call is at the service, in flight.
        try await hangingCall { task = Task { try await pyCall(c, "Hang", timeout: .seconds(60)) } }
        task.cancel()
        let start = ContinuousClock.now
        do {
            _ = try await task.value
            XCTFail("not cancelled")
        } catch is CancellationError {
        }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(5))
    }

    func testPeerVanishingMidCall() async throws {
        do {
            _ = try await call("Vanish")
            XCTFail("no error")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, DBusError.noReply)
        }
        // The service is gone now.
        do {
            _ = try await call("Echo", [.int32(1)])
            XCTFail("no error")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, DBusError.serviceUnknown)
        }
    }

    func testManyConcurrentCalls() async throws {
        let c = self.c!
        try await withThrowingTaskGroup(of: (Int32, Int32).self) { group in
            for i in Int32(0)..<200 {
                group.addTask {
                    let r = try await pyCall(c, "Echo", [.int32(i), .string("x\(i)")])
                    let (v, s) = try r.decode(Int32.self, String.self)
                    XCTAssertEqual(s, "x\(i)")
                    return (i, v)
                }
            }
            var n = 0
            for try await (sent, got) in group {
                XCTAssertEqual(sent, got)
                n += 1
            }
            XCTAssertEqual(n, 200)
        }
    }

    func testBusDisappearingFailsCallsAndEndsStreams() async throws {
        let stream = try await c.signals(matching: DBusMatchRule(interface: "org.example.Never"))
        let c = self.c!
        var pending: Task<DBusMessage, Error>!
        try await hangingCall { pending = Task { try await pyCall(c, "Hang", timeout: .seconds(30)) } }
        bus.stop()
        do {
            _ = try await pending.value
            XCTFail("survived")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, DBusError.disconnected)
        }
        for await _ in stream {}
        XCTAssertFalse(c.isConnected)
    }
}
