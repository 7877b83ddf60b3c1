import XCTest
import Synchronization
import DBus
import DBusTestSupport

final class ExportTests: XCTestCase {
    var bus: PrivateBus!
    var server: DBusConnection!
    var client: DBusConnection!

    override func setUp() async throws {
        bus = try PrivateBus()
        server = try await DBusConnection.connect(.address(bus.address))
        client = try await DBusConnection.connect(.address(bus.address))
        try await server.requestName("org.example.Server")
    }

    override func tearDown() async throws {
        server?.close()
        client?.close()
        bus?.stop()
    }

    func props(_ method: String, _ args: [DBusValue], path: DBusObjectPath = "/obj") async throws -> DBusMessage {
        try await client.call(destination: "org.example.Server", path: path, interface: "org.freedesktop.DBus.Properties",
                              method: method, arguments: args)
    }

    func testPropertiesGetGetAllSetAndChangeSignals() async throws {
        let accepted = Mutex<[String]>([])
        let counter = Mutex<UInt32>(10)
        let obj = try server.export("/obj", interfaces: [
            DBusInterface("org.example.Thing", properties: [
                DBusProperty("Name", .string, access: .readwrite, value: .string("initial"), setter: { v in
                    let s = try v.decode(String.self)
                    guard !s.isEmpty else { throw DBusError(name: "org.example.Error.Empty", message: "empty name") }
                    accepted.withLock { $0.append(s) }
                }),
                DBusProperty("Data", "ay", value: .bytes([1, 2, 3])),
                DBusProperty("Secret", .string, access: .write, value: .string("hidden")),
                DBusProperty("Counter", .uint32, emitsChanged: .false, getter: {
                    counter.withLock { $0 += 1; return .uint32($0) }
                }),
                DBusProperty("Mode", .string, emitsChanged: .invalidates, value: .string("a")),
            ]),
        ])
        let changes = try await client.propertiesChanged(.propertiesChanged(sender: "org.example.Server"))
        var it = changes.makeAsyncIterator()

        let name0 = try await props("Get", [.string("org.example.Thing"), .string("Name")]).decode(DBusValue.self)
        XCTAssertEqual(name0, .string("initial"))
        let counter0 = try await props("Get", [.string("org.example.Thing"), .string("Counter")]).decode(DBusValue.self)
        XCTAssertEqual(counter0, .uint32(11))
        let all = try await props("GetAll", [.string("org.example.Thing")]).decode([String: DBusValue].self)
        XCTAssertEqual(Set(all.keys), ["Name", "Data", "Counter", "Mode"])  // write-only Secret is not listed
        XCTAssertEqual(all["Data"], .bytes([1, 2, 3]))

        // Remote Set: accepted, stored, announced.
        _ = try await props("Set", [.string("org.example.Thing"), .string("Name"), .variant(.string("renamed"))])
        XCTAssertEqual(accepted.withLock { $0 }, ["renamed"])
        XCTAssertEqual(try obj.property("Name", interface: "org.example.Thing"), DBusValue.string("renamed"))
        let c1 = await it.next()
        XCTAssertEqual(c1?.first?.changed, ["Name": .string("renamed")])
        XCTAssertEqual(c1?.first?.path, "/obj")

        // Refusals keep their error names.
        await assertDBusError("org.example.Error.Empty") {
            _ = try await self.props("Set", [.string("org.example.Thing"), .string("Name"), .variant(.string(""))])
        }
        await assertDBusError(DBusError.propertyReadOnly) {
            _ = try await self.props("Set", [.string("org.example.Thing"), .string("Data"), .variant(.bytes([]))])
        }
        await assertDBusError(DBusError.invalidArgs) {
            _ = try await self.props("Set", [.string("org.example.Thing"), .string("Name"), .variant(.int32(1))])
        }
        await assertDBusError(DBusError.unknownProperty) {
            _ = try await self.props("Get", [.string("org.example.Thing"), .string("Nope")])
        }
        await assertDBusError(DBusError.unknownInterface) {
            _ = try await self.props("GetAll", [.string("org.example.Nope")])
        }
        await assertDBusError(DBusError.invalidArgs) {
            _ = try await self.props("Get", [.string("org.example.Thing")])
        }

        // Local changes: PropertiesChanged with values, invalidations, nothing for unchanged values.
        try obj.setProperty("Name", .string("renamed"), interface: "org.example.Thing")   // unchanged: no signal
        try obj.setProperty("Mode", .string("b"), interface: "org.example.Thing")
        let c2 = await it.next()
        XCTAssertEqual(c2?.first?.changed, [:])
        XCTAssertEqual(c2?.first?.invalidated, ["Mode"])
        try obj.setProperties(["Name": .string("x"), "Data": .bytes([9])], interface: "org.example.Thing")
        let c3 = await it.next()
        XCTAssertEqual(c3?.first?.changed, ["Name": .string("x"), "Data": .bytes([9])])
        XCTAssertThrowsError(try obj.setProperty("Name", .int32(1), interface: "org.example.Thing"))
        XCTAssertThrowsError(try obj.setProperty("Nope", .int32(1), interface: "org.example.Thing"))

        // dbus-send sees the same value.
        let (status, out, err) = try await Task.detached { [bus] in
            try DBusSend.call(bus: bus!, ["--dest=org.example.Server", "/obj", "org.freedesktop.DBus.Properties.Get",
                                          "string:org.example.Thing", "string:Name"])
        }.value
        XCTAssertEqual(status, 0, err)
        XCTAssertTrue(out.contains("string \"x\""), out)
    }

    func testObjectManagerAnnouncesAndListsObjects() async throws {
        server.addObjectManager(at: "/app")
        let added = try await client.signals(matching: DBusMatchRule(sender: "org.example.Server",
                                                                     interface: "org.freedesktop.DBus.ObjectManager"))
        var it = added.makeAsyncIterator()
        let service = try server.export("/app/service0", interfaces: [
            DBusInterface("org.bluez.GattService1", properties: [
                DBusProperty("UUID", .string, value: .string("0000feed-0000-1000-8000-00805f9b34fb")),
                DBusProperty("Primary", .boolean, value: .boolean(true)),
            ]),
        ])
        let s1 = await it.next()
        XCTAssertEqual(s1?.name, "InterfacesAdded")
        XCTAssertEqual(s1?.path, "/app")
        XCTAssertEqual(s1?.arguments.first, .objectPath("/app/service0"))
        let ifaces = try XCTUnwrap(s1?.arguments.last).decode([String: [String: DBusValue]].self)
        XCTAssertEqual(ifaces["org.bluez.GattService1"]?["Primary"], .boolean(true))

        try server.export("/app/service0/char0", interfaces: [
            DBusInterface("org.bluez.GattCharacteristic1", properties: [
                DBusProperty("Service", .objectPath, value: .objectPath("/app/service0")),
            ]),
        ])
        _ = await it.next()
        try server.export("/elsewhere", interfaces: [DBusInterface("org.example.Other")])  // not managed

        let managed = try await client.call([DBusObjectPath: [String: [String: DBusValue]]].self,
                                            destination: "org.example.Server", path: "/app",
                                            interface: "org.freedesktop.DBus.ObjectManager", method: "GetManagedObjects")
        XCTAssertEqual(Set(managed.keys), ["/app/service0", "/app/service0/char0"])
        XCTAssertEqual(managed["/app/service0/char0"]?["org.bluez.GattCharacteristic1"]?["Service"], .objectPath("/app/service0"))

        try service.addInterface(DBusInterface("org.example.Extra", properties: [DBusProperty("X", .byte, value: .byte(1))]))
        let s3 = await it.next()
        XCTAssertEqual(s3?.name, "InterfacesAdded")
        XCTAssertEqual(try s3?.arguments.last?.decode([String: [String: DBusValue]].self).keys.sorted(), ["org.example.Extra"])
        service.removeInterface("org.example.Extra")
        let s4 = await it.next()
        XCTAssertEqual(s4?.name, "InterfacesRemoved")
        XCTAssertEqual(s4?.arguments, [.objectPath("/app/service0"), .stringArray(["org.example.Extra"])])

        service.unexport()
        let s5 = await it.next()
        XCTAssertEqual(s5?.name, "InterfacesRemoved")
        XCTAssertEqual(s5?.arguments, [.objectPath("/app/service0"), .stringArray(["org.bluez.GattService1"])])
        let after = try await client.call([DBusObjectPath: [String: [String: DBusValue]]].self,
                                          destination: "org.example.Server", path: "/app",
                                          interface: "org.freedesktop.DBus.ObjectManager", method: "GetManagedObjects")
        XCTAssertEqual(Set(after.keys), ["/app/service0/char0"])
    }

    func testIntrospectionIsCompleteAndWellFormed() async throws {
        server.addObjectManager(at: "/app")
        try server.export("/app/svc/char", interfaces: [
            DBusInterface("org.bluez.GattCharacteristic1", methods: [
                DBusMethod("ReadValue", in: [DBusArgument("options", "a{sv}")], out: [DBusArgument("value", "ay")]) { _ in [.bytes([])] },
            ], properties: [
                DBusProperty("UUID", .string, value: .string("u")),
                DBusProperty("Value", "ay", access: .readwrite, emitsChanged: .invalidates, value: .bytes([])),
            ], signals: [DBusSignalDescription("Changed", [DBusArgument("what", .string)])]),
        ])
        func introspect(_ path: String) async throws -> String {
            let path = try DBusObjectPath(path)
            return try await client.call(String.self, destination: "org.example.Server", path: path,
                                         interface: "org.freedesktop.DBus.Introspectable", method: "Introspect")
        }
        let leaf = try await introspect("/app/svc/char")
        for needle in ["<interface name=\"org.bluez.GattCharacteristic1\">", "<method name=\"ReadValue\">",
                       "<arg name=\"options\" type=\"a{sv}\" direction=\"in\"/>",
                       "<arg name=\"value\" type=\"ay\" direction=\"out\"/>",
                       "<property name=\"UUID\" type=\"s\" access=\"read\"/>",
                       "<property name=\"Value\" type=\"ay\" access=\"readwrite\">",
                       "value=\"invalidates\"", "<signal name=\"Changed\">",
                       "<interface name=\"org.freedesktop.DBus.Properties\">"] {
            XCTAssertTrue(leaf.contains(needle), "missing \(needle)")
        }
        let root = try await introspect("/")
        XCTAssertTrue(root.contains("<node name=\"app\"/>"), root)
        let app = try await introspect("/app")
        XCTAssertTrue(app.contains("<node name=\"svc\"/>"), app)
        XCTAssertTrue(app.contains("org.freedesktop.DBus.ObjectManager"), app)
        let mid = try await introspect("/app/svc")
        XCTAssertTrue(mid.contains("<node name=\"char\"/>"), mid)
        // Well-formed XML according to Python's parser.
        for xml in [leaf, root, app, mid] {
            let (status, _, err) = try await Task.detached { [bus] in
                try SystemPython.run(script: "import sys, xml.etree.ElementTree as E; E.fromstring(sys.argv[1]); print('ok')",
                                     arguments: [xml], bus: bus!)
            }.value
            XCTAssertEqual(status, 0, err)
        }
        // Unknown paths get libdbus's empty node.
        let nothing = try await introspect("/nothing/here")
        XCTAssertFalse(nothing.contains("org.bluez"), nothing)
        XCTAssertFalse(nothing.contains("<node name="), nothing)
    }

    func testMethodDispatchAndErrors() async throws {
        try server.export("/obj", interfaces: [
            DBusInterface("org.example.Calc", methods: [
                DBusMethod("Add", in: [DBusArgument("a", .int32), DBusArgument("b", .int32)], out: [DBusArgument("sum", .int32)]) { call in
                    var r = call.reader()
                    let a = try r.readInt32(), b = try r.readInt32()
                    let (s, overflow) = a.addingReportingOverflow(b)
                    if overflow { throw DBusError(name: "org.example.Error.Overflow", message: "\(a)+\(b)") }
                    return [.int32(s)]
                },
                DBusMethod("Broken", out: [DBusArgument("x", .string)]) { _ in [.int32(1)] },
                DBusMethod("Throws") { _ in
                    struct Local: Error {}
                    throw Local()
                },
            ]),
        ])
        func calc(_ m: String, _ args: [DBusValue], interface: String? = "org.example.Calc", path: DBusObjectPath = "/obj") async throws -> DBusMessage {
            try await client.call(destination: "org.example.Server", path: path, interface: interface, method: m, arguments: args)
        }
        let sum1 = try await calc("Add", [.int32(2), .int32(40)]).decode(Int32.self)
        XCTAssertEqual(sum1, 42)
        let sum2 = try await calc("Add", [.int32(2), .int32(3)], interface: nil).decode(Int32.self)
        XCTAssertEqual(sum2, 5)
        await assertDBusError("org.example.Error.Overflow", message: "2147483647+1") {
            _ = try await calc("Add", [.int32(.max), .int32(1)])
        }
        await assertDBusError(DBusError.invalidArgs) { _ = try await calc("Add", [.int32(1)]) }
        await assertDBusError(DBusError.invalidArgs) { _ = try await calc("Add", [.string("1"), .int32(1)]) }
        await assertDBusError(DBusError.unknownMethod) { _ = try await calc("Sub", []) }
        await assertDBusError(DBusError.unknownInterface) { _ = try await calc("Add", [], interface: "org.example.Nope") }
        await assertDBusError(DBusError.unknownMethod) { _ = try await calc("Add", [], path: "/other") }
        await assertDBusError(DBusError.failed) { _ = try await calc("Broken", []) }
        await assertDBusError(DBusError.failed) { _ = try await calc("Throws", []) }
        // Duplicate export and bad declarations are refused.
        XCTAssertThrowsError(try server.export("/obj", interfaces: []))
        XCTAssertThrowsError(try server.export("/x", interfaces: [DBusInterface("bad")]))
        XCTAssertThrowsError(try server.export("/x", interfaces: [
            DBusInterface("org.example.A", properties: [DBusProperty("P", .string, value: .int32(1))]),
        ]))
    }

    func testAsyncHandlersDoNotBlockOtherCalls() async throws {
        // Slow waits, inside its handler, until Fast has run: that can only happen if a running handler
        // does not hold up the next call. (If it did, Slow would give up after 20 s and say so.)
        let (started, startedCont) = AsyncStream<Void>.makeStream()
        let (fastRan, fastRanCont) = AsyncStream<Void>.makeStream()
        try server.export("/obj", interfaces: [
            DBusInterface("org.example.Slow", methods: [
                DBusMethod("Slow", out: [DBusArgument("r", .string)]) { _ in
                    startedCont.yield()
                    let sawFast = await withTaskGroup(of: Bool.self) { group in
                        group.addTask { for await _ in fastRan { return true }; return false }
                        group.addTask { try? await Task.sleep(for: .seconds(20)); return false }
                        let first = await group.next() ?? false
                        group.cancelAll()
                        return first
                    }
                    return [.string(sawFast ? "slow after fast" : "fast never ran")]
                },
                DBusMethod("Fast", out: [DBusArgument("r", .string)]) { _ in
                    fastRanCont.yield()
                    return [.string("fast")]
                },
            ]),
        ])
        let client = self.client!
        async let slow = client.call(String.self, destination: "org.example.Server", path: "/obj",
                                     interface: "org.example.Slow", method: "Slow")
        var it = started.makeAsyncIterator()
        _ = await it.next()  // Slow's handler is running
        let fast = try await client.call(String.self, destination: "org.example.Server", path: "/obj",
                                         interface: "org.example.Slow", method: "Fast")
        XCTAssertEqual(fast, "fast")
        let s = try await slow
        XCTAssertEqual(s, "slow after fast")
    }

    /// The shapes the BlueZ peripheral backend exports, driven by a Python stand-in for bluetoothd.
    func testBlueZStyleGattApplicationAndAdvertisement() async throws {
        let released = Mutex(false)
        let readOptions = Mutex<[String: DBusValue]>([:])
        server.addObjectManager(at: "/app")
        try server.export("/app/service0", interfaces: [
            DBusInterface("org.bluez.GattService1", properties: [
                DBusProperty("UUID", .string, value: .string("0000feed-0000-1000-8000-00805f9b34fb")),
                DBusProperty("Primary", .boolean, value: .boolean(true)),
            ]),
        ])
        try server.export("/app/service0/char0", interfaces: [
            DBusInterface("org.bluez.GattCharacteristic1", methods: [
                DBusMethod("ReadValue", in: [DBusArgument("options", "a{sv}")], out: [DBusArgument("value", "ay")]) { call in
                    var r = call.reader()
                    let options = try [String: DBusValue](from: &r)
                    readOptions.withLock { $0 = options }
                    let offset = Int(try options["offset"]?.decode(UInt16.self) ?? 0)
                    let ballot: [UInt8] = [0xB0, 0xB1, 0xB2, 0xB3, 0xB4]
                    return [.bytes(Array(ballot.dropFirst(min(offset, ballot.count))))]
                },
            ], properties: [
                DBusProperty("UUID", .string, value: .string("0000beef-0000-1000-8000-00805f9b34fb")),
                DBusProperty("Service", .objectPath, value: .objectPath("/app/service0")),
                DBusProperty("Flags", "as", value: .stringArray(["read"])),
            ]),
        ])
        try server.export("/adv", interfaces: [
            DBusInterface("org.bluez.LEAdvertisement1", methods: [
                DBusMethod("Release") { _ in
                    released.withLock { $0 = true }
                    return []
                },
            ], properties: [
                DBusProperty("Type", .string, value: .string("peripheral")),
                DBusProperty("ManufacturerData", "a{qv}", value: .uint16VariantDictionary([0xFFFF: .bytes([1, 2, 3])])),
            ]),
        ])
        let unique = try XCTUnwrap(server.uniqueName)
        let (status, out, err) = try await Task.detached { [bus] in
            try SystemPython.run(script: PythonScripts.gattClient, arguments: [unique], bus: bus!)
        }.value
        XCTAssertEqual(status, 0, err)
        let lines = out.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.filter { $0.hasPrefix("OBJ") }, [
            "OBJ /app/service0 org.bluez.GattService1 Primary,UUID",
            "OBJ /app/service0/char0 org.bluez.GattCharacteristic1 Flags,Service,UUID",
        ])
        XCTAssertTrue(lines.contains("CHAR-UUID 0000beef-0000-1000-8000-00805f9b34fb"), out)
        XCTAssertTrue(lines.contains("CHAR-SERVICE /app/service0"), out)
        XCTAssertTrue(lines.contains("CHAR-FLAGS read"), out)
        XCTAssertTrue(lines.contains("READ b2b3b4"), out)
        XCTAssertTrue(lines.contains("ADV-TYPE peripheral"), out)
        XCTAssertTrue(lines.contains("ADV-MD ffff=010203"), out)
        XCTAssertTrue(lines.contains("RELEASED"), out)
        XCTAssertTrue(released.withLock { $0 })
        XCTAssertEqual(readOptions.withLock { $0 }, ["offset": .uint16(2)])
    }

    /// The tally daemon's kind of interface: methods called from dbus-send, a signal seen by a subscriber.
    func testTallyStyleInterfaceFromDBusSend() async throws {
        let open = Mutex<String?>(nil)
        let obj = try server.export("/org/clicker/Tally", interfaces: [
            DBusInterface("org.clicker.Tally1", methods: [
                DBusMethod("OpenQuestion", in: [DBusArgument("text", .string), DBusArgument("choices", .byte)],
                           out: [DBusArgument("vote_id", .uint32)]) { call in
                    let (text, _) = try call.message.decode(String.self, UInt8.self)
                    open.withLock { $0 = text }
                    try call.object.emitSignal(interface: "org.clicker.Tally1", name: "QuestionOpened",
                                               arguments: [.uint32(7), .string(text)])
                    return [.uint32(7)]
                },
                DBusMethod("Status", out: [DBusArgument("status", "a{sv}")]) { _ in
                    [.stringVariantDictionary(["open": .boolean(open.withLock { $0 } != nil),
                                                "question": .string(open.withLock { $0 } ?? "")])]
                },
            ], signals: [DBusSignalDescription("QuestionOpened", [DBusArgument("vote_id", .uint32), DBusArgument("text", .string)])]),
        ])
        _ = obj
        let opened = try await client.signals(matching: DBusMatchRule(sender: "org.example.Server", interface: "org.clicker.Tally1",
                                                                      member: "QuestionOpened"))
        var it = opened.makeAsyncIterator()
        let (status, out, err) = try await Task.detached { [bus] in
            try DBusSend.call(bus: bus!, ["--dest=org.example.Server", "/org/clicker/Tally", "org.clicker.Tally1.OpenQuestion",
                                          "string:Best colour?", "byte:4"])
        }.value
        XCTAssertEqual(status, 0, err)
        XCTAssertTrue(out.contains("uint32 7"), out)
        let sig = await it.next()
        XCTAssertEqual(sig?.arguments, [.uint32(7), .string("Best colour?")])
        let st = try await client.call([String: DBusValue].self, destination: "org.example.Server", path: "/org/clicker/Tally",
                                       interface: "org.clicker.Tally1", method: "Status")
        XCTAssertEqual(st, ["open": .boolean(true), "question": .string("Best colour?")])
    }
}

func assertDBusError(_ name: String, message: String? = nil, file: StaticString = #filePath, line: UInt = #line,
                     _ body: () async throws -> Void) async {
    do {
        try await body()
        XCTFail("expected \(name)", file: file, line: line)
    } catch let e as DBusError {
        XCTAssertEqual(e.name, name, e.message, file: file, line: line)
        if let message { XCTAssertEqual(e.message, message, file: file, line: line) }
    } catch {
        XCTFail("expected \(name), got \(error)", file: file, line: line)
    }
}
