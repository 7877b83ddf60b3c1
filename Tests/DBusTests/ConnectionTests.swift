import XCTest
import DBus
import DBusTestSupport

final class ConnectionTests: XCTestCase {
    var bus: PrivateBus!

    override func setUpWithError() throws {
        bus = try PrivateBus()
    }

    override func tearDown() {
        bus?.stop()
        bus = nil
    }

    func testConnectAndCallBusDriver() async throws {
        let c = try await DBusConnection.connect(.address(bus.address))
        defer { c.close() }
        let unique = try XCTUnwrap(c.uniqueName)
        XCTAssertTrue(unique.hasPrefix(":"))
        let names = try await c.call([String].self, destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                     interface: "org.freedesktop.DBus", method: "ListNames")
        XCTAssertTrue(names.contains(unique))
        XCTAssertTrue(names.contains("org.freedesktop.DBus"))
    }

    func testSystemBusHonoursEnvironment() async throws {
        setenv("DBUS_SYSTEM_BUS_ADDRESS", bus.address, 1)
        defer { unsetenv("DBUS_SYSTEM_BUS_ADDRESS") }
        let c = try await DBusConnection.system()
        defer { c.close() }
        let owner = try await c.nameOwner("org.freedesktop.DBus")
        XCTAssertEqual(owner, "org.freedesktop.DBus")
        XCTAssertNotNil(c.uniqueName)
    }

    func testSessionBusHonoursEnvironment() async throws {
        setenv("DBUS_SESSION_BUS_ADDRESS", bus.address, 1)
        defer { unsetenv("DBUS_SESSION_BUS_ADDRESS") }
        let c = try await DBusConnection.session()
        defer { c.close() }
        let names = try await c.call([String].self, destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                     interface: "org.freedesktop.DBus", method: "ListNames")
        XCTAssertTrue(names.contains(try XCTUnwrap(c.uniqueName)))
    }

    func testConnectFailureIsAnError() async throws {
        do {
            _ = try await DBusConnection.connect(.address("unix:path=\(bus.directory.path)/nonexistent"))
            XCTFail("connected to a missing socket")
        } catch let e as DBusError {
            XCTAssertTrue(e.name.hasPrefix("org.freedesktop.DBus.Error."), e.name)
        }
    }

    func testRequestAndReleaseName() async throws {
        let a = try await DBusConnection.connect(.address(bus.address))
        let b = try await DBusConnection.connect(.address(bus.address))
        defer { a.close(); b.close() }
        let changes = try await b.nameOwnerChanges(for: "org.example.Test")
        var it = changes.makeAsyncIterator()
        let r1 = try await a.requestName("org.example.Test")
        XCTAssertEqual(r1, .primaryOwner)
        let r2 = try await b.requestName("org.example.Test")
        XCTAssertEqual(r2, .exists)
        let got = await it.next()
        XCTAssertEqual(got, DBusNameOwnerChange(name: "org.example.Test", oldOwner: "", newOwner: a.uniqueName ?? "?"))
        let owner = try await b.nameOwner("org.example.Test")
        XCTAssertEqual(owner, a.uniqueName)
        let rel = try await a.releaseName("org.example.Test")
        XCTAssertEqual(rel, .released)
        let gone = await it.next()
        XCTAssertEqual(gone?.newOwner, "")
        let none = try await b.nameOwner("org.example.Test")
        XCTAssertNil(none)
        let rel2 = try await a.releaseName("org.example.Test")
        XCTAssertEqual(rel2, .nonExistent)
    }

    func testErrorReplyKeepsNameAndMessage() async throws {
        let c = try await DBusConnection.connect(.address(bus.address))
        defer { c.close() }
        do {
            _ = try await c.call(destination: "org.example.Nobody", path: "/", interface: "org.example.X", method: "Y")
            XCTFail("expected an error")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, DBusError.serviceUnknown)
            XCTAssertTrue(e.message.contains("org.example.Nobody"), e.message)
        }
    }

    func testInvalidNamesThrowInsteadOfAborting() async throws {
        let c = try await DBusConnection.connect(.address(bus.address))
        defer { c.close() }
        await XCTAssertThrowsAsync { _ = try await c.call(destination: "not a name", path: "/", interface: "a.b", method: "C") }
        await XCTAssertThrowsAsync { _ = try await c.call(destination: "a.b", path: "/", interface: "no", method: "C") }
        await XCTAssertThrowsAsync { _ = try await c.call(destination: "a.b", path: "/", interface: "a.b", method: "1x") }
        XCTAssertThrowsError(try c.emitSignal(path: "/", interface: "a.b", name: "S", arguments: [.string("nul\0inside")]))
        XCTAssertThrowsError(try c.emitSignal(path: "/", interface: "a.b", name: "S", arguments: [.array(.string, [.int32(1)])]))
        let badPath = "/bad//path", badSig = "a{vs}"
        XCTAssertThrowsError(try DBusObjectPath(badPath))
        XCTAssertThrowsError(try DBusSignature(badSig))
    }

    func testCloseFailsCallsAndFinishesStreams() async throws {
        let c = try await DBusConnection.connect(.address(bus.address))
        let stream = try await c.signals(matching: DBusMatchRule(interface: "org.example.Never"))
        c.close()
        var count = 0
        for await _ in stream { count += 1 }
        XCTAssertEqual(count, 0)
        await XCTAssertThrowsAsync { _ = try await c.nameOwner("org.freedesktop.DBus") }
        XCTAssertFalse(c.isConnected)
    }
}

func XCTAssertThrowsAsync(_ body: () async throws -> Void, file: StaticString = #filePath, line: UInt = #line) async {
    do {
        try await body()
        XCTFail("expected an error", file: file, line: line)
    } catch {}
}

/// The harness fails loudly, naming the package, when a tool is missing (it never skips).
final class HarnessTests: XCTestCase {
    func testMissingDaemonNamesThePackage() {
        XCTAssertThrowsError(try PrivateBus(daemonPath: "/nonexistent/dbus-daemon")) { error in
            XCTAssertTrue("\(error)".contains("'dbus-daemon'"), "\(error)")
        }
    }

    func testPythonWithoutDBusNamesThePackages() {
        // /bin/false stands in for an interpreter that cannot import dbus (like pyenv's python3).
        XCTAssertThrowsError(try SystemPython.requireDBus(python: "/bin/false")) { error in
            XCTAssertTrue("\(error)".contains("python3-dbus"), "\(error)")
        }
        XCTAssertThrowsError(try SystemPython.requireDBus(python: "/nonexistent/python3")) { error in
            XCTAssertTrue("\(error)".contains("python3-dbus"), "\(error)")
        }
    }

    func testRealToolsArePresent() throws {
        let bus = try PrivateBus()
        bus.stop()
        try SystemPython.requireDBus()
    }
}
