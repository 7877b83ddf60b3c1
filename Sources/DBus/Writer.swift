import CDBus

/// Appends values to an unsent message. Every value is checked against the D-Bus rules before it
/// reaches libdbus (which aborts the process on invalid input), so bad values throw instead.
struct DBusMessageWriter {
    var iter: DBusMessageIter

    init(message: OpaquePointer) {
        iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
    }

    init(sub: DBusMessageIter) { iter = sub }

    mutating func append(_ v: DBusValue) throws {
        let sig = v.signatureString
        guard dbus_signature_validate_single(sig, nil) != 0 else {
            throw DBusError(name: DBusError.invalidSignature, message: "value has invalid signature '\(sig)'")
        }
        try Self.check(v, depth: 0)
        try appendUnchecked(v)
    }

    /// Structural checks libdbus would otherwise enforce with an abort.
    static func check(_ v: DBusValue, depth: Int) throws {
        guard depth < 64 else { throw DBusError(name: DBusError.invalidArgs, message: "value nested too deeply") }
        switch v {
        case .string(let s):
            if s.utf8.contains(0) { throw DBusError(name: DBusError.invalidArgs, message: "string contains NUL") }
        case .array(let e, let items):
            guard e.isSingleCompleteType else {
                throw DBusError(name: DBusError.invalidSignature, message: "invalid array element signature '\(e)'")
            }
            guard !e.rawValue.hasPrefix("{") else {
                throw DBusError(name: DBusError.invalidSignature, message: "use .dictionary for dict entries")
            }
            for item in items {
                if e.rawValue == "y", case .byte = item { continue }
                guard item.signatureString == e.rawValue else {
                    throw DBusError(name: DBusError.invalidArgs,
                                    message: "array of '\(e)' contains a '\(item.signatureString)'")
                }
                try check(item, depth: depth + 1)
            }
        case .dictionary(let k, let val, let entries):
            guard k.rawValue.utf8.count == 1, let kc = k.rawValue.utf8.first, let code = DBusTypeCode(rawValue: kc), code.isBasic else {
                throw DBusError(name: DBusError.invalidSignature, message: "dictionary key type '\(k)' is not basic")
            }
            guard val.isSingleCompleteType else {
                throw DBusError(name: DBusError.invalidSignature, message: "invalid dictionary value signature '\(val)'")
            }
            for e in entries {
                guard e.key.signatureString == k.rawValue, e.value.signatureString == val.rawValue else {
                    throw DBusError(name: DBusError.invalidArgs,
                                    message: "dictionary a{\(k)\(val)} contains an entry {\(e.key.signatureString)\(e.value.signatureString)}")
                }
                try check(e.key, depth: depth + 1)
                try check(e.value, depth: depth + 1)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusError(name: DBusError.invalidArgs, message: "empty struct") }
            for f in fields { try check(f, depth: depth + 1) }
        case .variant(let inner):
            let s = inner.signatureString
            guard dbus_signature_validate_single(s, nil) != 0 else {
                throw DBusError(name: DBusError.invalidSignature, message: "variant holds invalid signature '\(s)'")
            }
            try check(inner, depth: depth + 1)
        default:
            break
        }
    }

    @inline(__always)
    private mutating func basic<T>(_ t: DBusTypeCode, _ value: T) throws {
        var v = value
        let ok = withUnsafePointer(to: &v) { dbus_message_iter_append_basic(&iter, t.cValue, UnsafeRawPointer($0)) }
        if ok == 0 { throw DBusError(name: DBusError.noMemory, message: "append failed") }
    }

    private mutating func cString(_ t: DBusTypeCode, _ s: String) throws {
        let ok = s.withCString { cs -> UInt32 in
            var p: UnsafePointer<CChar>? = cs
            return withUnsafePointer(to: &p) { dbus_message_iter_append_basic(&iter, t.cValue, UnsafeRawPointer($0)) }
        }
        if ok == 0 { throw DBusError(name: DBusError.noMemory, message: "append failed") }
    }

    private mutating func container(_ t: DBusTypeCode, _ sig: String?, _ body: (inout DBusMessageWriter) throws -> Void) throws {
        var sub = DBusMessageIter()
        let opened: UInt32
        if let sig {
            opened = sig.withCString { dbus_message_iter_open_container(&iter, t.cValue, $0, &sub) }
        } else {
            opened = dbus_message_iter_open_container(&iter, t.cValue, nil, &sub)
        }
        guard opened != 0 else { throw DBusError(name: DBusError.noMemory, message: "open container failed") }
        var w = DBusMessageWriter(sub: sub)
        do {
            try body(&w)
        } catch {
            dbus_message_iter_abandon_container(&iter, &w.iter)
            throw error
        }
        guard dbus_message_iter_close_container(&iter, &w.iter) != 0 else {
            throw DBusError(name: DBusError.noMemory, message: "close container failed")
        }
    }

    private mutating func appendFixedBytes(_ bytes: [UInt8]) throws {
        try container(.array, "y") { w in
            guard !bytes.isEmpty else { return }
            let ok = bytes.withUnsafeBufferPointer { buf -> UInt32 in
                var p: UnsafePointer<UInt8>? = buf.baseAddress
                return withUnsafePointer(to: &p) {
                    dbus_message_iter_append_fixed_array(&w.iter, DBusTypeCode.byte.cValue, UnsafeRawPointer($0), Int32(buf.count))
                }
            }
            if ok == 0 { throw DBusError(name: DBusError.noMemory, message: "append failed") }
        }
    }

    mutating func appendUnchecked(_ v: DBusValue) throws {
        switch v {
        case .byte(let x): try basic(.byte, x)
        case .boolean(let x): try basic(.boolean, UInt32(x ? 1 : 0))
        case .int16(let x): try basic(.int16, x)
        case .uint16(let x): try basic(.uint16, x)
        case .int32(let x): try basic(.int32, x)
        case .uint32(let x): try basic(.uint32, x)
        case .int64(let x): try basic(.int64, x)
        case .uint64(let x): try basic(.uint64, x)
        case .double(let x): try basic(.double, x)
        case .string(let s): try cString(.string, s)
        case .objectPath(let p): try cString(.objectPath, p.rawValue)
        case .signature(let g): try cString(.signature, g.rawValue)
        case .unixFD(let fd): try basic(.unixFD, fd.fd)
        case .bytes(let b): try appendFixedBytes(b)
        case .array(let e, let items):
            if e.rawValue == "y" {
                var bytes: [UInt8] = []
                bytes.reserveCapacity(items.count)
                for case .byte(let b) in items { bytes.append(b) }
                try appendFixedBytes(bytes)
            } else {
                try container(.array, e.rawValue) { w in
                    for item in items { try w.appendUnchecked(item) }
                }
            }
        case .dictionary(let k, let val, let entries):
            try container(.array, "{" + k.rawValue + val.rawValue + "}") { w in
                for e in entries {
                    try w.container(.dictEntry, nil) { ew in
                        try ew.appendUnchecked(e.key)
                        try ew.appendUnchecked(e.value)
                    }
                }
            }
        case .structure(let fields):
            try container(.structure, nil) { w in
                for f in fields { try w.appendUnchecked(f) }
            }
        case .variant(let inner):
            try container(.variant, inner.signatureString) { w in try w.appendUnchecked(inner) }
        }
    }
}
