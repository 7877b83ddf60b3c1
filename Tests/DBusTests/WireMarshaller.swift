@testable import DBus

/// A marshaller written from the specification, for the wire-format tests: it writes either byte
/// order (libdbus writes only the machine's), and the tests check its bytes with libdbus's demarshaller
/// before our reader reads them.
struct WireMarshaller {
    var bytes: [UInt8] = []
    let bigEndian: Bool

    mutating func pad(_ n: Int) { while bytes.count % n != 0 { bytes.append(0) } }

    mutating func int<T: FixedWidthInteger>(_ v: T) {
        pad(MemoryLayout<T>.size)
        withUnsafeBytes(of: bigEndian ? v.bigEndian : v.littleEndian) { bytes += $0 }
    }

    mutating func string(_ s: String) {
        int(UInt32(s.utf8.count))
        bytes += Array(s.utf8) + [0]
    }

    mutating func signature(_ s: String) {
        bytes.append(UInt8(s.utf8.count))
        bytes += Array(s.utf8) + [0]
    }

    mutating func value(_ v: DBusValue) {
        switch v {
        case .byte(let x): bytes.append(x)
        case .boolean(let x): int(UInt32(x ? 1 : 0))
        case .int16(let x): int(x)
        case .uint16(let x): int(x)
        case .int32(let x): int(x)
        case .uint32(let x): int(x)
        case .int64(let x): int(x)
        case .uint64(let x): int(x)
        case .double(let x): int(x.bitPattern)
        case .string(let x): string(x)
        case .objectPath(let x): string(x.rawValue)
        case .signature(let x): signature(x.rawValue)
        case .unixFD: fatalError("not used by the tests")
        case .bytes(let b): int(UInt32(b.count)); bytes += b
        case .array(let sig, let items):
            array(alignment: WireSignature.alignment(Array(sig.rawValue.utf8)[0])) { m in for i in items { m.value(i) } }
        case .dictionary(_, _, let entries):
            array(alignment: 8) { m in
                for e in entries {
                    m.pad(8)
                    m.value(e.key)
                    m.value(e.value)
                }
            }
        case .structure(let fields):
            pad(8)
            for f in fields { value(f) }
        case .variant(let inner):
            signature(inner.signatureString)
            value(inner)
        }
    }

    mutating func array(alignment: Int, _ body: (inout WireMarshaller) -> Void) {
        pad(4)
        let at = bytes.count
        int(UInt32(0))
        pad(alignment)
        let start = bytes.count
        body(&self)
        let n = UInt32(bytes.count - start)
        withUnsafeBytes(of: bigEndian ? n.bigEndian : n.littleEndian) { for i in 0..<4 { bytes[at + i] = $0[i] } }
    }

    /// A whole signal message.
    static func signal(path: String, interface: String, member: String, arguments: [DBusValue], serial: UInt32 = 7,
                       bigEndian: Bool) -> [UInt8] {
        message(type: 4, fields: [(1, .objectPath(DBusObjectPath(unchecked: path))), (2, .string(interface)), (3, .string(member))],
                arguments: arguments, serial: serial, bigEndian: bigEndian)
    }

    /// A whole message of any type with the given header fields (the signature field is added).
    static func message(type: UInt8, fields: [(UInt8, DBusValue)], arguments: [DBusValue], serial: UInt32 = 7,
                        bigEndian: Bool = false) -> [UInt8] {
        var body = WireMarshaller(bigEndian: bigEndian)
        for a in arguments { body.value(a) }
        let sig = arguments.map(\.signatureString).joined()
        var m = WireMarshaller(bigEndian: bigEndian)
        m.bytes = [bigEndian ? UInt8(ascii: "B") : UInt8(ascii: "l"), type, 0, 1]
        m.int(UInt32(body.bytes.count))
        m.int(serial)
        var all = fields.map { DBusValue.structure([.byte($0.0), .variant($0.1)]) }
        if !sig.isEmpty { all.append(.structure([.byte(8), .variant(.signature(DBusSignature(unchecked: sig)))])) }
        m.value(.array(DBusSignature(unchecked: "(yv)"), all))
        m.pad(8)
        return m.bytes + body.bytes
    }
}
