import XCTest
import Synchronization
import ClickerTestSupport
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

    /// A call's timeout passes on the connection's clock, not in real time. With a test clock 1 ms
    /// short of the timeout, a reply that arrives then is taken and a call without one still waits;
    /// once the clock reaches the timeout, that call fails with `NoReply`, long before the timeout has
    /// passed in real time. Nothing in the test sleeps.
    func testTheReplyDeadlineIsOnTheConnectionsClock() async throws {
        let clock = TestClock()
        let c = try await DBusConnection.connect(.address(bus.address), clock: clock)
        defer { c.close() }
        let timeout = Duration.seconds(30)
        let started = ContinuousClock.now
        var held: Task<DBusMessage, Error>!
        var unanswered: Task<DBusMessage, Error>!
        let ended = Flag()
        try await hangingCall { held = Task { try await pyCall(c, "Hold", timeout: timeout) } }
        try await hangingCall {
            unanswered = Task {
                defer { ended.set() }
                return try await pyCall(c, "Hang", timeout: timeout)
            }
        }
        clock.advance(by: timeout - .milliseconds(1))
        // Release's own reply comes after the held call's, and after the dispatch thread has looked at
        // the deadlines with the clock where it stands now.
        _ = try await pyCall(c, "Release")
        _ = try await held.value
        XCTAssertFalse(ended.isSet, "a call failed before its deadline")
        clock.advance(by: .milliseconds(1))
        do {
            _ = try await unanswered.value
            XCTFail("no timeout")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, DBusError.noReply)
            XCTAssertTrue(e.isTimeout)
        }
        XCTAssertLessThan(ContinuousClock.now - started, timeout, "timed out on the clock, not in real time")
        // Still usable afterwards.
        let r = try await pyCall(c, "Echo", [.int32(7)])
        XCTAssertEqual(try r.decode(Int32.self), 7)
    }

    /// A short timeout made while a long one waits fails at its own deadline on the connection's clock
    /// (the earlier deadline is the one the dispatch thread looks for); the long call fails only when
    /// the connection closes.
    func testShortTimeoutWhileLongOneIsPending() async throws {
        let clock = TestClock()
        let c = try await DBusConnection.connect(.address(bus.address), clock: clock)
        var long: Task<DBusMessage, Error>!
        var short: Task<DBusMessage, Error>!
        try await hangingCall { long = Task { try await pyCall(c, "Hang", timeout: .seconds(30)) } }
        try await hangingCall { short = Task { try await pyCall(c, "Hang", timeout: .milliseconds(100)) } }
        clock.advance(by: .milliseconds(100))
        do {
            _ = try await short.value
            XCTFail("no timeout")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, DBusError.noReply)
        }
        c.close()
        do {
            _ = try await long.value
            XCTFail("pending call survived close")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, DBusError.disconnected)
        }
    }

    /// Waits until the echo service has received a `Hang` or `Hold` call (it signals `Hanging`).
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

/// Whether something has happened, set from any task.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
