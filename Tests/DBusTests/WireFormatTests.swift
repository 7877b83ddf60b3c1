import CDBus
import Synchronization
import XCTest
@testable import DBus

/// A small seeded generator, so every run draws the same values.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Doubles compared by bit pattern (a NaN equals itself), recursively.
func canonical(_ v: DBusValue) -> DBusValue {
    switch v {
    case .double(let d): return .uint64(d.bitPattern)
    case .variant(let x): return .variant(canonical(x))
    case .structure(let f): return .structure(f.map(canonical))
    case .array(let s, let items): return .array(s, items.map(canonical))
    case .dictionary(let k, let s, let entries):
        return .dictionary(key: k, value: s, entries.map { DBusDictEntry(canonical($0.key), canonical($0.value)) })
    default: return v
    }
}

/// Values of the types BlueZ's signals carry, nested at random.
struct ValueMaker {
    var rng: SplitMix64

    mutating func string() -> String {
        let pool = ["", "a", "RSSI", "ManufacturerData", "org.bluez.Device1", "é ü ✓", "x y z 0123456789"]
        return pool[Int.random(in: 0..<pool.count, using: &rng)]
    }

    mutating func value(depth: Int) -> DBusValue {
        let kinds = depth >= 4 ? 12 : 19
        switch Int.random(in: 0..<kinds, using: &rng) {
        case 0: return .byte(.random(in: .min ... .max, using: &rng))
        case 1: return .int16(.random(in: .min ... .max, using: &rng))
        case 2: return .uint16(.random(in: .min ... .max, using: &rng))
        case 3: return .int32(.random(in: .min ... .max, using: &rng))
        case 4: return .uint32(.random(in: .min ... .max, using: &rng))
        case 5: return .int64(.random(in: .min ... .max, using: &rng))
        case 6: return .uint64(.random(in: .min ... .max, using: &rng))
        case 7: return .double(Double(bitPattern: rng.next()))
        case 8: return .string(string())
        case 9: return .objectPath(["/", "/org/bluez/hci0", "/org/bluez/hci0/dev_C0_AA_01_00_00_01"][Int.random(in: 0..<3, using: &rng)])
        case 10: return .signature(["", "a{sv}", "sa{sv}as", "(yv)"][Int.random(in: 0..<4, using: &rng)])
        case 11: return .boolean(.random(using: &rng))
        case 12: return .bytes((0..<Int.random(in: 0..<40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 13: return .stringArray((0..<Int.random(in: 0..<4, using: &rng)).map { _ in string() })
        case 14:
            var d: [UInt16: DBusValue] = [:]
            for _ in 0..<Int.random(in: 0..<3, using: &rng) { d[.random(in: 0...0xFFFF, using: &rng)] = value(depth: depth + 1) }
            return .uint16VariantDictionary(d)
        case 15:
            var d: [String: DBusValue] = [:]
            for _ in 0..<Int.random(in: 0..<4, using: &rng) { d[string()] = value(depth: depth + 1) }
            return .stringVariantDictionary(d)
        case 16: return .variant(value(depth: depth + 1))
        case 17: return .structure((0..<Int.random(in: 1..<4, using: &rng)).map { _ in value(depth: depth + 1) })
        default:
            // An array of one element type (an empty one keeps its element signature).
            let sample = value(depth: depth + 1)
            if case .bytes = sample { return sample }
            let items = (0..<Int.random(in: 0..<3, using: &rng)).map { _ in sample }
            return .array(sample.signature, items)
        }
    }
}

func demarshalled(_ bytes: [UInt8]) -> DBusMessage? {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    let raw = bytes.withUnsafeBytes { b in
        b.baseAddress.flatMap { dbus_message_demarshal($0.assumingMemoryBound(to: CChar.self), Int32(b.count), &error) }
    }
    return raw.map { DBusMessage(adopting: $0) }
}

/// Parses with our reader: the header fields and every argument.
func parsed(_ bytes: [UInt8]) throws -> (path: String?, interface: String?, member: String?, signature: String, args: [DBusValue]) {
    try bytes.withUnsafeBytes { b in
        let m = try DBusWireMessage(parsing: b)
        return (m.path?.rawValue, m.interface, m.member, m.signature, try m.arguments())
    }
}

final class WireFormatTests: XCTestCase {
    let device: DBusObjectPath = "/org/bluez/hci0/dev_C0_AA_01_00_00_01"

    func libdbusSignal(_ path: DBusObjectPath, _ interface: String, _ member: String, _ args: [DBusValue]) throws -> [UInt8] {
        let msg = try DBusMessage.signal(path: path, interface: interface, member: member, arguments: args)
        return try XCTUnwrap(msg.marshalled(serial: 9))
    }

    /// BlueZ's three signal shapes as libdbus writes them, read back field by field.
    func testBlueZSignalsMarshalledByLibdbusParse() throws {
        let change: [DBusValue] = [
            .string("org.bluez.Device1"),
            .stringVariantDictionary(["RSSI": .int16(-61),
                                      "ManufacturerData": .uint16VariantDictionary([0xFFFF: .bytes([1, 2, 3, 4]), 0x004C: .bytes([])])]),
            .stringArray(["TxPower"]),
        ]
        let added: [DBusValue] = [
            .objectPath(device),
            .dictionary(key: .string, value: "a{sv}", [
                DBusDictEntry(.string("org.bluez.Device1"), .stringVariantDictionary([
                    "Address": .string("C0:AA:01:00:00:01"), "Paired": .boolean(false), "RSSI": .int16(-70),
                    "UUIDs": .stringArray(["0000180f-0000-1000-8000-00805f9b34fb"]), "Adapter": .objectPath("/org/bluez/hci0"),
                    "Class": .uint32(0x5a020c), "Appearance": .uint16(0x03c1), "TxPower": .int16(4),
                    "ServiceData": .stringVariantDictionary(["180f": .bytes([0x50])]), "Timestamp": .uint64(1 << 40),
                    "Offset": .int64(-5), "Weight": .double(0.25), "Kind": .byte(3), "Count": .int32(-9),
                    "Sig": .signature("a{sv}"), "Nested": .variant(.variant(.string("deep"))),
                ])),
                DBusDictEntry(.string("org.freedesktop.DBus.Properties"), .stringVariantDictionary([:])),
            ]),
        ]
        let removed: [DBusValue] = [.objectPath(device), .stringArray(["org.bluez.Device1", "org.bluez.Battery1"])]
        for (path, iface, member, args) in [(device, "org.freedesktop.DBus.Properties", "PropertiesChanged", change),
                                           ("/", "org.freedesktop.DBus.ObjectManager", "InterfacesAdded", added),
                                           ("/", "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved", removed)] as [(DBusObjectPath, String, String, [DBusValue])] {
            let bytes = try libdbusSignal(path, iface, member, args)
            let libdbus = try XCTUnwrap(demarshalled(bytes))
            let ours = try parsed(bytes)
            XCTAssertEqual(ours.path, path.rawValue)
            XCTAssertEqual(ours.interface, iface)
            XCTAssertEqual(ours.member, member)
            XCTAssertEqual(ours.signature, libdbus.signature.rawValue)
            XCTAssertEqual(ours.args.map(canonical), try libdbus.arguments().map(canonical), member)
        }
        // The property shapes the central reads, against the libdbus reader's decoding.
        let bytes = try libdbusSignal(device, "org.freedesktop.DBus.Properties", "PropertiesChanged", change)
        let libdbus = try XCTUnwrap(demarshalled(bytes))
        var r = libdbus.reader()
        _ = try r.readString()
        let expected = try [String: DBusValue](from: &r)
        try bytes.withUnsafeBytes { b in
            var c = try DBusWireMessage(parsing: b).body()
            XCTAssertTrue(try c.readStringEquals("org.bluez.Device1"))
            XCTAssertEqual(try c.readPropertyDictionary(), expected)
            XCTAssertEqual(try c.readStringArray(), ["TxPower"])
            XCTAssertTrue(c.isAtEnd)
        }
    }

    /// Seeded random nested values: libdbus's bytes (this machine's order) and big-endian bytes (checked
    /// by libdbus first) read back as libdbus reads them.
    func testRandomNestedValuesInBothByteOrders() throws {
        var maker = ValueMaker(rng: SplitMix64(state: 0xC11C_4E12))
        for round in 0..<400 {
            let args = (0..<Int.random(in: 1...4, using: &maker.rng)).map { _ in maker.value(depth: 0) }
            let little = try libdbusSignal(device, "org.example.Wire", "Values", args)
            XCTAssertEqual(little.first, UInt8(ascii: "l"))
            let expected = try XCTUnwrap(demarshalled(little)).arguments().map(canonical)
            XCTAssertEqual(try parsed(little).args.map(canonical), expected, "round \(round), little-endian")
            let big = WireMarshaller.signal(path: device.rawValue, interface: "org.example.Wire", member: "Values",
                                            arguments: args, bigEndian: true)
            let checked = try XCTUnwrap(demarshalled(big), "round \(round): libdbus refuses the big-endian bytes")
            XCTAssertEqual(try checked.arguments().map(canonical), expected, "round \(round): big-endian bytes as libdbus reads them")
            let ours = try parsed(big)
            XCTAssertEqual(ours.args.map(canonical), expected, "round \(round), big-endian")
            XCTAssertEqual(ours.path, device.rawValue)
        }
    }

    func testEveryTruncationIsRefused() throws {
        let bytes = try libdbusSignal(device, "org.freedesktop.DBus.Properties", "PropertiesChanged",
                                      [.string("org.bluez.Device1"), .stringVariantDictionary(["RSSI": .int16(-1)]), .stringArray([])])
        for n in 0..<bytes.count {
            XCTAssertThrowsError(try parsed(Array(bytes.prefix(n))), "prefix of \(n) bytes")
        }
        XCTAssertNoThrow(try parsed(bytes))
    }

    /// A valid message with its body replaced (and the header's body length adjusted).
    func withBody(_ signature: String, _ body: [UInt8]) -> [UInt8] {
        var m = WireMarshaller(bigEndian: false)
        m.bytes = [UInt8(ascii: "l"), 4, 0, 1]
        m.int(UInt32(body.count))
        m.int(UInt32(5))
        m.value(.array("(yv)", [
            .structure([.byte(1), .variant(.objectPath("/a"))]),
            .structure([.byte(2), .variant(.string("org.example.Wire"))]),
            .structure([.byte(3), .variant(.string("Bad"))]),
            .structure([.byte(8), .variant(.signature(DBusSignature(unchecked: signature)))]),
        ]))
        m.pad(8)
        return m.bytes + body
    }

    func reason(_ bytes: [UInt8]) -> DBusWireError.Reason? {
        do {
            _ = try parsed(bytes)
            return nil
        } catch let e as DBusWireError {
            return e.reason
        } catch {
            return nil
        }
    }

    func le32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian) { Array($0) } }

    func testMalformedBodiesGiveTheirReason() {
        XCTAssertEqual(reason(withBody("i", [1, 0, 0, 0])), nil, "the baseline parses")
        XCTAssertEqual(reason(withBody("i", [1, 0, 0])), .truncated)
        XCTAssertEqual(reason(withBody("yi", [7, 1, 0, 0, 5, 0, 0, 0])), .badPadding, "non-zero padding before an int")
        XCTAssertEqual(reason(withBody("b", le32(2))), .badBoolean)
        XCTAssertEqual(reason(withBody("s", le32(3) + Array("abc".utf8) + [1])), .badString, "no NUL terminator")
        XCTAssertEqual(reason(withBody("s", le32(3) + [0x61, 0, 0x62, 0])), .badString, "a NUL inside")
        XCTAssertEqual(reason(withBody("s", le32(2) + [0xC3, 0x28, 0])), .badString, "not UTF-8")
        XCTAssertEqual(reason(withBody("s", le32(100) + Array("abc".utf8) + [0])), .truncated, "length past the end")
        XCTAssertEqual(reason(withBody("o", le32(3) + Array("a/b".utf8) + [0])), .badObjectPath)
        XCTAssertEqual(reason(withBody("ai", le32(8) + le32(1))), .truncated, "array length past the end")
        XCTAssertEqual(reason(withBody("ai", le32(1 << 27) + le32(1))), .tooLarge, "array over 64 MiB")
        XCTAssertEqual(reason(withBody("v", [1, UInt8(ascii: "a"), 0])), .badSignature, "an incomplete type in a variant")
        XCTAssertEqual(reason(withBody("v", [2, UInt8(ascii: "i"), UInt8(ascii: "i"), 0] + le32(1) + le32(1))), .badSignature,
                       "two types in a variant")
        XCTAssertEqual(reason(withBody("i", le32(1) + [0])), .trailingBytes)
        XCTAssertEqual(reason(withBody("h", le32(0))), .unsupported)
        // 65 variants, one inside the other, around a byte.
        var deep: [UInt8] = []
        for _ in 0..<65 { deep += [1, UInt8(ascii: "v"), 0] }
        deep += [1, UInt8(ascii: "y"), 0, 7]
        XCTAssertEqual(reason(withBody("v", deep)), .tooDeep)
        var shallow: [UInt8] = []
        for _ in 0..<60 { shallow += [1, UInt8(ascii: "v"), 0] }
        shallow += [1, UInt8(ascii: "y"), 0, 7]
        XCTAssertEqual(reason(withBody("v", shallow)), nil, "60 nested variants are within the limit")
    }

    func testBadSignaturesAndHeadersAreRefused() {
        XCTAssertEqual(reason(withBody(String(repeating: "a", count: 33) + "y", le32(0))), .badSignature, "33 nested arrays")
        XCTAssertEqual(reason(withBody("a{vs}", le32(0) + le32(0))), .badSignature, "a variant as a key")
        XCTAssertEqual(reason(withBody("()", [])), .badSignature, "an empty structure")
        XCTAssertEqual(reason(withBody("{sv}", [])), .badSignature, "a dictionary entry outside an array")
        var bytes = withBody("y", [1])
        bytes[0] = UInt8(ascii: "X")
        XCTAssertEqual(reason(bytes), .badHeader, "endianness byte")
        bytes = withBody("y", [1])
        bytes[3] = 2
        XCTAssertEqual(reason(bytes), .badHeader, "protocol version")
        bytes = withBody("y", [1])
        bytes[8...11] = [0, 0, 0, 0]
        XCTAssertEqual(reason(bytes), .badHeader, "serial 0")
        bytes = withBody("y", [1])
        bytes[4...7] = ArraySlice(le32(1 << 28))
        XCTAssertThrowsError(try bytes.withUnsafeBytes { try DBusWireMessage.frameLength($0) }) { e in
            XCTAssertEqual((e as? DBusWireError)?.reason, .tooLarge, "a body over 128 MiB is refused from the prefix")
        }
    }

    /// Seeded byte flips in valid messages: nothing traps, and whatever both readers accept they read
    /// alike.
    func testMutatedMessagesNeverTrapAndAgreeWithLibdbus() throws {
        var maker = ValueMaker(rng: SplitMix64(state: 77))
        var accepted = 0, compared = 0
        for _ in 0..<300 {
            let args = (0..<Int.random(in: 1...3, using: &maker.rng)).map { _ in maker.value(depth: 1) }
            let big = Bool.random(using: &maker.rng)
            var bytes = WireMarshaller.signal(path: "/x", interface: "org.example.Wire", member: "M", arguments: args, bigEndian: big)
            for _ in 0..<Int.random(in: 1...3, using: &maker.rng) {
                bytes[Int.random(in: 0..<bytes.count, using: &maker.rng)] = .random(in: 0...255, using: &maker.rng)
            }
            guard let ours = try? parsed(bytes) else { continue }
            accepted += 1
            guard let libdbus = demarshalled(bytes), let theirs = try? libdbus.arguments() else { continue }
            compared += 1
            XCTAssertEqual(ours.args.map(canonical), theirs.map(canonical))
            XCTAssertEqual(ours.path, libdbus.path?.rawValue)
        }
        XCTAssertGreaterThan(compared, 0, "some mutations keep the message valid")
        XCTAssertGreaterThanOrEqual(accepted, compared)
    }

    /// A signal whose header parses but whose body does not is dropped and counted by the batch.
    func testUndecodableSignalIsCountedNotDelivered() throws {
        let stats = DBusSubscriptionStats()
        let delivered = Mutex<[[DBusValue]]>([])
        let batch = WireBatch(maxBatch: 10, stats: stats, decode: { try $0.arguments() },
                              deliver: { b in delivered.withLock { $0 += b } })
        for bytes in [withBody("i", [1, 0, 0, 0]), withBody("b", le32(9)), withBody("i", [2, 0, 0, 0])] {
            try bytes.withUnsafeBytes { batch.add(try DBusWireMessage(parsing: $0)) }
        }
        batch.flush()
        XCTAssertEqual(delivered.withLock { $0 }, [[.int32(1)], [.int32(2)]])
        XCTAssertEqual(stats.rejected.load(ordering: .relaxed), 1)
        XCTAssertEqual(stats.delivered.load(ordering: .relaxed), 2)
        XCTAssertEqual(stats.batches.load(ordering: .relaxed), 1)
    }
}
