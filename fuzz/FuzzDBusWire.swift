// libFuzzer target: our D-Bus wire-format reader (`DBusWireMessage`, `DBusWireCursor`), which reads
// BlueZ's signals straight from the bus socket. Compiled against an instrumented DBus module (see
// run.sh). The input is one message's bytes.
// Properties: nothing traps and nothing allocates past what the input holds; a message accepted is as
// long as its header says; when both our reader and libdbus (`dbus_message_demarshal`, which checks
// everything) accept a message, they read the same header fields and, when our reader reads the body,
// the same arguments (libdbus checks more, names of interfaces and members for one, so it may refuse
// what our reader accepts; the decoders only compare those names with known ones).

import CDBus
@testable import DBus

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

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDBusWire(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    if size >= DBusWireMessage.prefixLength, let total = try? DBusWireMessage.frameLength(bytes) {
        guard total >= DBusWireMessage.prefixLength, total <= DBusWireMessage.maximumLength else {
            fatalError("frame length \(total) out of bounds")
        }
    }
    guard let ours = try? DBusWireMessage(parsing: bytes) else { return 0 }
    guard (try? DBusWireMessage.frameLength(bytes)) == size else { fatalError("accepted a message of another length") }
    let args = try? ours.arguments()
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    let raw = data.withMemoryRebound(to: CChar.self, capacity: size) { dbus_message_demarshal($0, Int32(size), &error) }
    dbus_error_free(&error)
    guard let raw else { return 0 }
    let theirs = DBusMessage(adopting: raw)
    guard ours.path == theirs.path, ours.interface == theirs.interface, ours.member == theirs.member,
          ours.sender == theirs.sender, ours.errorName == theirs.errorName, ours.serial == theirs.serial,
          ours.replySerial == theirs.replySerial, ours.signature == theirs.signature.rawValue else {
        fatalError("header fields differ from libdbus's")
    }
    guard let args else { return 0 }
    guard let expected = try? theirs.arguments() else { fatalError("libdbus cannot iterate a body it accepted") }
    guard args.map(canonical) == expected.map(canonical) else {
        fatalError("arguments differ: ours \(args), libdbus \(expected)")
    }
    return 0
}
