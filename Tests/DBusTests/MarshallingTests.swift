import XCTest
import Synchronization
import DBus
import DBusTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Values covering every basic type and the container shapes BlueZ and the tally daemon use.
var roundTripSamples: [[DBusValue]] { [
    [.byte(255)], [.byte(0)], [.boolean(true)], [.boolean(false)],
    [.int16(.min)], [.int16(.max)], [.uint16(.max)], [.int32(.min)], [.uint32(.max)],
    [.int64(.min)], [.uint64(.max)], [.double(-3.25e-7)], [.double(.infinity)],
    [.string("h\u{e9}llo \u{2713}")], [.string("")],
    [.objectPath("/org/bluez/hci0/dev_AA_BB")], [.objectPath("/")], [.signature("a{sv}(iu)")], [.signature("")],
    [.bytes([0, 1, 255])], [.bytes([])], [.bytes(Array(repeating: 0xAB, count: 70000))],
    [.array(.string, [])], [.stringArray(["a", "b"])], [.array(.int32, [.int32(1), .int32(-1)])],
    [.array(.uint64, [.uint64(1), .uint64(.max)])], [.array(.double, [.double(0.5)])],
    [.array(.boolean, [.boolean(true), .boolean(false)])], [.array(.int16, [.int16(-2)])],
    [.objectPathArray(["/a", "/b/c"])],
    [.array("as", [.stringArray(["x"]), .stringArray([])])],
    [.array("ay", [.bytes([1, 2]), .bytes([])])],
    [.stringVariantDictionary(["a": .int32(1), "b": .string("x"), "c": .bytes([7])])],
    [.dictionary(key: .string, value: .variant, [])],
    [.uint16VariantDictionary([0xFFFF: .bytes([9, 8, 7])])],
    [.dictionary(key: .objectPath, value: "a{sa{sv}}", [
        DBusDictEntry(.objectPath("/a"), .dictionary(key: .string, value: "a{sv}", [
            DBusDictEntry(.string("org.x.I"), .stringVariantDictionary(["P": .uint32(7), "Q": .stringArray(["z"])])),
        ])),
    ])],
    [.dictionary(key: .int64, value: .string, [DBusDictEntry(.int64(-1), .string("neg"))])],
    [.structure([.int32(1), .string("s"), .array(.double, [.double(1.5)])])],
    [.array("(ii)", [.structure([.int32(1), .int32(2)]), .structure([.int32(3), .int32(4)])])],
    [.structure([.structure([.byte(1)]), .variant(.uint16(2))])],
    [.variant(.int32(5))], [.variant(.variant(.string("deep")))], [.variant(.bytes([1]))],
    [.variant(.stringVariantDictionary(["k": .boolean(true)]))],
    [.string("a"), .int32(2), .boolean(false), .objectPath("/x")],
] }

final class MarshallingTests: XCTestCase {
    var bus: PrivateBus!

    override func setUpWithError() throws {
        bus = try PrivateBus()
    }

    override func tearDown() {
        bus?.stop()
        bus = nil
    }

    func startPythonEcho() throws -> HelperProcess {
        let helper = try SystemPython.start(script: PythonScripts.echoService, bus: bus)
        _ = try helper.waitForLine { $0.hasPrefix("READY") }
        return helper
    }

    /// Swift → Python echo → Swift, every sample.
    func testEveryTypeRoundTripsThroughPythonEcho() async throws {
        let py = try startPythonEcho()
        defer { py.stop() }
        let c = try await DBusConnection.connect(.address(bus.address))
        defer { c.close() }
        for sample in roundTripSamples {
            let reply = try await c.call(destination: "org.example.PyEcho", path: "/echo", interface: "org.example.Echo",
                                         method: "Echo", arguments: sample)
            XCTAssertEqual(reply.signature.rawValue, sample.map(\.signature.rawValue).joined())
            XCTAssertEqual(try reply.arguments(), sample, "sample \(sample.map(\.signature))")
        }
    }

    /// Python → Swift echo → Python, every type (checked on the Python side, including types and
    /// signatures), plus a Unix fd.
    func testPythonCallsSwiftEchoWithEveryType() async throws {
        let c = try await DBusConnection.connect(.address(bus.address))
        defer { c.close() }
        let seen = Mutex(0)
        try c.export("/echo", interfaces: [
            DBusInterface("org.example.Echo", methods: [
                DBusMethod("Echo", in: nil, out: nil) { call in
                    seen.withLock { $0 += 1 }
                    return call.arguments
                },
            ]),
        ])
        let unique = try XCTUnwrap(c.uniqueName)
        let (status, out, err) = try await Task.detached { [bus] in
            try SystemPython.run(script: PythonScripts.echoClient, arguments: [unique], bus: bus!)
        }.value
        XCTAssertEqual(status, 0, err)
        let failures = out.split(separator: "\n").filter { $0.hasPrefix("FAIL") }
        XCTAssertEqual(failures, [], out)
        XCTAssertTrue(out.contains("DONE 29 0"), out)
        XCTAssertEqual(seen.withLock { $0 }, 29)
    }

    /// dbus-send → Swift: the handler sees exactly the typed values dbus-send marshalled, and the echo
    /// comes back in dbus-send's printout.
    func testDBusSendCallsSwiftEcho() async throws {
        let c = try await DBusConnection.connect(.address(bus.address))
        defer { c.close() }
        let received = Mutex<[DBusValue]>([])
        try c.export("/echo", interfaces: [
            DBusInterface("org.example.Echo", methods: [
                DBusMethod("Echo", in: nil, out: nil) { call in
                    received.withLock { $0 = call.arguments }
                    return call.arguments
                },
            ]),
        ])
        try await c.requestName("org.example.SwiftEcho")
        let (status, out, err) = try await Task.detached { [bus] in
            try DBusSend.call(bus: bus!, ["--dest=org.example.SwiftEcho", "/echo", "org.example.Echo.Echo",
                                          "byte:255", "boolean:true", "int16:-5", "uint16:7", "int32:-9", "uint32:9",
                                          "int64:-1", "uint64:18446744073709551615", "double:2.5", "string:hi",
                                          "objpath:/a/b", "array:string:x,y", "array:byte:1,2",
                                          "dict:string:int32:a,1", "variant:int32:5"])
        }.value
        XCTAssertEqual(status, 0, err)
        let expected: [DBusValue] = [
            .byte(255), .boolean(true), .int16(-5), .uint16(7), .int32(-9), .uint32(9), .int64(-1), .uint64(.max),
            .double(2.5), .string("hi"), .objectPath("/a/b"), .stringArray(["x", "y"]), .bytes([1, 2]),
            .dictionary(key: .string, value: .int32, [DBusDictEntry(.string("a"), .int32(1))]), .variant(.int32(5)),
        ]
        XCTAssertEqual(received.withLock { $0 }, expected)
        for needle in ["byte 255", "boolean true", "int16 -5", "uint16 7", "int32 -9", "uint32 9", "int64 -1",
                       "uint64 18446744073709551615", "double 2.5", "string \"hi\"", "object path \"/a/b\"",
                       "string \"x\"", "variant", "int32 5"] {
            XCTAssertTrue(out.contains(needle), "missing \(needle) in\n\(out)")
        }
    }

    func testUnixFDRoundTrip() async throws {
        let py = try startPythonEcho()
        defer { py.stop() }
        let c = try await DBusConnection.connect(.address(bus.address))
        defer { c.close() }
        let fd = open("/dev/null", O_RDONLY)
        let sent = DBusUnixFD(takingOwnershipOf: fd)
        let reply = try await c.call(destination: "org.example.PyEcho", path: "/echo", interface: "org.example.Echo",
                                     method: "Echo", arguments: [.unixFD(sent)])
        let back = try reply.decode(DBusUnixFD.self)
        XCTAssertNotEqual(back.fd, fd)
        var a = stat(), b = stat()
        XCTAssertEqual(fstat(fd, &a), 0)
        XCTAssertEqual(fstat(back.fd, &b), 0)
        XCTAssertEqual(a.st_ino, b.st_ino)
        XCTAssertEqual(a.st_dev, b.st_dev)
    }

    /// Typed decoding of a BlueZ-shaped `a{oa{sa{sv}}}`.
    func testTypedDecodingOfManagedObjects() async throws {
        let py = try startPythonEcho()
        defer { py.stop() }
        let c = try await DBusConnection.connect(.address(bus.address))
        defer { c.close() }
        let objects = try await c.call([DBusObjectPath: [String: [String: DBusValue]]].self,
                                       destination: "org.example.PyEcho", path: "/echo",
                                       interface: "org.example.Echo", method: "Managed")
        XCTAssertEqual(objects.count, 2)
        let adapter = try XCTUnwrap(objects["/org/bluez/hci0"]?["org.bluez.Adapter1"])
        XCTAssertEqual(try adapter["Address"]?.decode(String.self), "00:11:22:33:44:55")
        XCTAssertEqual(try adapter["Powered"]?.decode(Bool.self), true)
        let dev = try XCTUnwrap(objects["/org/bluez/hci0/dev_AA"]?["org.bluez.Device1"])
        XCTAssertEqual(try dev["RSSI"]?.decode(Int16.self), -60)
        let mfr = try XCTUnwrap(dev["ManufacturerData"]).decode([UInt16: DBusValue].self)
        XCTAssertEqual(try mfr[0xFFFF]?.decode([UInt8].self), [1, 2])
        // Wrong expectations are errors, not traps.
        XCTAssertThrowsError(try dev["RSSI"]?.decode(String.self)) { XCTAssertTrue($0 is DBusDecodingError) }
        XCTAssertThrowsError(try adapter["Address"]?.decode([UInt8].self))
    }

    /// A reply with an unexpected signature becomes a DBusDecodingError naming both signatures.
    func testWrongSignatureReplyIsADecodingError() async throws {
        let py = try startPythonEcho()
        defer { py.stop() }
        let c = try await DBusConnection.connect(.address(bus.address))
        defer { c.close() }
        do {
            _ = try await c.call([String].self, destination: "org.example.PyEcho", path: "/echo",
                                 interface: "org.example.Echo", method: "WrongType")
            XCTFail("decoded an int as [String]")
        } catch let e as DBusDecodingError {
            XCTAssertEqual(e.found, "i")
            XCTAssertEqual(e.expected, "a")
        }
        // Reading past the end, into containers of the wrong kind, etc.
        let reply = try await c.call(destination: "org.example.PyEcho", path: "/echo", interface: "org.example.Echo",
                                     method: "WrongType")
        var r = reply.reader()
        XCTAssertThrowsError(try r.enterArray())
        XCTAssertThrowsError(try r.enterVariant())
        XCTAssertThrowsError(try r.readBytes())
        XCTAssertThrowsError(try r.readString())
        XCTAssertEqual(try r.readInt32(), 42)
        XCTAssertTrue(r.isAtEnd)
        XCTAssertThrowsError(try r.readInt32()) { XCTAssertEqual(($0 as? DBusDecodingError)?.found, "end of arguments") }
        XCTAssertThrowsError(try r.read())
        XCTAssertThrowsError(try reply.decode(Int32.self, String.self))
    }

    /// Values that libdbus would abort on are rejected before reaching it.
    func testInvalidOutgoingValuesAreRejected() async throws {
        let c = try await DBusConnection.connect(.address(bus.address))
        defer { c.close() }
        let bad: [DBusValue] = [
            .string("a\0b"),
            .array(.string, [.int32(1)]),
            .array("{sv}", []),
            .array("", []),
            .dictionary(key: .variant, value: .string, []),
            .dictionary(key: .string, value: .int32, [DBusDictEntry(.string("a"), .string("b"))]),
            .structure([]),
            .variant(.structure([])),
        ]
        for v in bad {
            XCTAssertThrowsError(try c.emitSignal(path: "/", interface: "org.example.X", name: "S", arguments: [v]), "\(v)")
        }
        // The connection is still healthy.
        let owner = try await c.nameOwner("org.freedesktop.DBus")
        XCTAssertEqual(owner, "org.freedesktop.DBus")
    }
}
