import CDBus

/// A forward cursor over the arguments of a message (or of one container inside it), reading values
/// directly from the libdbus buffer without building intermediate trees.
///
/// Every read checks the type first and throws ``DBusDecodingError`` on a mismatch; nothing traps.
/// A reader keeps its message alive.
public struct DBusMessageReader {
    @usableFromInline var iter: DBusMessageIter
    @usableFromInline let message: DBusMessage
    /// The libdbus type code under the cursor (0 at the end or for an empty body), cached so that each
    /// value costs one type query. Valid only when `pending` is false.
    @usableFromInline var type: Int32
    /// Moving past the last value read is deferred until the reader is used again, so a reader that is
    /// dropped after its last read (a variant's content, a dictionary entry's value) never pays for
    /// libdbus skipping over what was just read.
    @usableFromInline var pending = false

    init(message: DBusMessage) {
        self.message = message
        self.iter = DBusMessageIter()
        let hasBody = dbus_message_iter_init(message.raw, &iter) != 0
        self.type = hasBody ? dbus_message_iter_get_arg_type(&iter) : 0
    }

    init(sub: DBusMessageIter, message: DBusMessage) {
        self.iter = sub
        self.message = message
        self.type = dbus_message_iter_get_arg_type(&iter)
    }

    /// The type code of the value under the cursor, or `nil` at the end.
    public var currentType: DBusTypeCode? {
        mutating get {
            resolve()
            return type == 0 ? nil : DBusTypeCode(rawValue: UInt8(truncatingIfNeeded: type))
        }
    }

    /// Whether all values have been consumed.
    public var isAtEnd: Bool {
        mutating get {
            resolve()
            return type == 0
        }
    }

    /// The signature of the value under the cursor (`""` at the end).
    public var currentSignature: String {
        mutating get {
            resolve()
            guard type != 0 else { return "" }
            guard let p = dbus_message_iter_get_signature(&iter) else { return "?" }
            defer { dbus_free(p) }
            return String(cString: p)
        }
    }

    @inline(__always) @usableFromInline
    mutating func expect(_ t: DBusTypeCode) throws {
        resolve()
        if type != t.cValue { throw mismatch(String(UnicodeScalar(t.rawValue))) }
    }

    @usableFromInline
    mutating func mismatch(_ expected: String) -> DBusDecodingError {
        let found = isAtEnd ? "end of arguments" : currentSignature
        return DBusDecodingError(expected: expected, found: found)
    }

    /// Moves past the value under the cursor (performed on the next use, see `pending`).
    @inline(__always) @usableFromInline
    mutating func advance() {
        pending = true
    }

    @inline(__always) @usableFromInline
    mutating func resolve() {
        guard pending else { return }
        pending = false
        type = dbus_message_iter_next(&iter) != 0 ? dbus_message_iter_get_arg_type(&iter) : 0
    }

    @inline(__always) @usableFromInline
    mutating func basic<T>(_ t: DBusTypeCode, _ zero: T) throws -> T {
        try expect(t)
        var v = zero
        withUnsafeMutablePointer(to: &v) { dbus_message_iter_get_basic(&iter, UnsafeMutableRawPointer($0)) }
        advance()
        return v
    }

    /// Skips the value under the cursor.
    public mutating func skip() throws {
        guard !isAtEnd else { throw mismatch("a value") }
        advance()
    }

    public mutating func readByte() throws -> UInt8 { try basic(.byte, UInt8(0)) }
    public mutating func readBool() throws -> Bool { try basic(.boolean, UInt32(0)) != 0 }
    public mutating func readInt16() throws -> Int16 { try basic(.int16, Int16(0)) }
    public mutating func readUInt16() throws -> UInt16 { try basic(.uint16, UInt16(0)) }
    public mutating func readInt32() throws -> Int32 { try basic(.int32, Int32(0)) }
    public mutating func readUInt32() throws -> UInt32 { try basic(.uint32, UInt32(0)) }
    public mutating func readInt64() throws -> Int64 { try basic(.int64, Int64(0)) }
    public mutating func readUInt64() throws -> UInt64 { try basic(.uint64, UInt64(0)) }
    public mutating func readDouble() throws -> Double { try basic(.double, Double(0)) }

    @usableFromInline
    mutating func cString(_ t: DBusTypeCode) throws -> UnsafePointer<CChar> {
        try expect(t)
        var p: UnsafePointer<CChar>? = nil
        withUnsafeMutablePointer(to: &p) { dbus_message_iter_get_basic(&iter, UnsafeMutableRawPointer($0)) }
        guard let p else { throw DBusDecodingError(expected: String(UnicodeScalar(t.rawValue)), found: "null string") }
        return p
    }

    public mutating func readString() throws -> String { String(cString: try cString(.string)).consumingAdvance(&self) }
    public mutating func readObjectPath() throws -> DBusObjectPath {
        DBusObjectPath(unchecked: String(cString: try cString(.objectPath))).consumingAdvance(&self)
    }
    public mutating func readSignature() throws -> DBusSignature {
        DBusSignature(unchecked: String(cString: try cString(.signature))).consumingAdvance(&self)
    }

    /// Calls `body` with the UTF-8 bytes (no terminator) of the string or object path under the cursor,
    /// without allocating. The buffer is only valid inside `body`.
    public mutating func withStringBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        resolve()
        switch type {
        case DBusTypeCode.string.cValue, DBusTypeCode.objectPath.cValue, DBusTypeCode.signature.cValue: break
        default: throw mismatch("s")
        }
        var cp: UnsafePointer<CChar>? = nil
        withUnsafeMutablePointer(to: &cp) { dbus_message_iter_get_basic(&iter, UnsafeMutableRawPointer($0)) }
        guard let p = cp else { throw DBusDecodingError(expected: "s", found: "null string") }
        let n = strlenC(p)
        let r = try body(UnsafeRawBufferPointer(start: UnsafeRawPointer(p), count: n))
        advance()
        return r
    }

    /// Whether the string under the cursor equals `s`; consumes it. Allocation-free.
    public mutating func readStringEquals(_ s: StaticString) throws -> Bool {
        try withStringBytes { buf in
            buf.count == s.utf8CodeUnitCount && (buf.count == 0 || memcmpC(buf.baseAddress!, UnsafeRawPointer(s.utf8Start), buf.count) == 0)
        }
    }

    /// Takes ownership of the (duplicated) file descriptor under the cursor.
    public mutating func readUnixFD() throws -> DBusUnixFD {
        let fd = try basic(.unixFD, Int32(-1))
        guard fd >= 0 else { throw DBusDecodingError(expected: "h", found: "invalid descriptor") }
        return DBusUnixFD(takingOwnershipOf: fd)
    }

    /// Reads an `ay` through the fixed-array fast path.
    public mutating func readBytes() throws -> [UInt8] {
        try withBytes { Array($0) }
    }

    /// Calls `body` with the contents of the `ay` under the cursor, without copying. The buffer is only
    /// valid inside `body`.
    public mutating func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        try expect(.array)
        guard dbus_message_iter_get_element_type(&iter) == DBusTypeCode.byte.cValue else { throw mismatch("ay") }
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        var ptr: UnsafeRawPointer? = nil
        var n: Int32 = 0
        withUnsafeMutablePointer(to: &ptr) { dbus_message_iter_get_fixed_array(&sub, UnsafeMutableRawPointer($0), &n) }
        let r = try body(UnsafeRawBufferPointer(start: n > 0 ? ptr : nil, count: Int(max(0, n))))
        advance()
        return r
    }

    /// Enters the array under the cursor; returns a reader over its elements and advances past it.
    public mutating func enterArray() throws -> DBusMessageReader {
        try expect(.array)
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        advance()
        return DBusMessageReader(sub: sub, message: message)
    }

    /// The element signature of the array under the cursor.
    public mutating func arrayElementSignature() throws -> String {
        try expect(.array)
        guard let p = dbus_message_iter_get_signature(&iter) else { return "" }
        defer { dbus_free(p) }
        return String(String(cString: p).dropFirst())
    }

    /// Enters the variant under the cursor; returns a reader over its single value and advances past it.
    public mutating func enterVariant() throws -> DBusMessageReader {
        try expect(.variant)
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        advance()
        return DBusMessageReader(sub: sub, message: message)
    }

    /// Enters the struct under the cursor; returns a reader over its fields and advances past it.
    public mutating func enterStruct() throws -> DBusMessageReader {
        try expect(.structure)
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        advance()
        return DBusMessageReader(sub: sub, message: message)
    }

    /// Enters the dict entry under the cursor (inside an array reader); returns a reader positioned at
    /// the key and advances past the entry.
    public mutating func enterDictEntry() throws -> DBusMessageReader {
        try expect(.dictEntry)
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        advance()
        return DBusMessageReader(sub: sub, message: message)
    }

    /// Iterates a dictionary (`a{..}`): `body` gets a reader positioned at each entry's key (read the key,
    /// then the value).
    public mutating func forEachDictEntry(_ body: (inout DBusMessageReader) throws -> Void) throws {
        try expect(.array)
        guard dbus_message_iter_get_element_type(&iter) == DBusTypeCode.dictEntry.cValue else { throw mismatch("a{..}") }
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        advance()
        var arr = DBusMessageReader(sub: sub, message: message)
        while !arr.isAtEnd {
            var entry = try arr.enterDictEntry()
            try body(&entry)
        }
    }

    /// Reads the value under the cursor as a ``DBusValue`` tree.
    public mutating func read() throws -> DBusValue {
        guard let t = currentType else { throw mismatch("a value") }
        switch t {
        case .byte: return .byte(try readByte())
        case .boolean: return .boolean(try readBool())
        case .int16: return .int16(try readInt16())
        case .uint16: return .uint16(try readUInt16())
        case .int32: return .int32(try readInt32())
        case .uint32: return .uint32(try readUInt32())
        case .int64: return .int64(try readInt64())
        case .uint64: return .uint64(try readUInt64())
        case .double: return .double(try readDouble())
        case .string: return .string(try readString())
        case .objectPath: return .objectPath(try readObjectPath())
        case .signature: return .signature(try readSignature())
        case .unixFD: return .unixFD(try readUnixFD())
        case .variant:
            var sub = try enterVariant()
            return .variant(try sub.read())
        case .structure:
            var sub = try enterStruct()
            var fields: [DBusValue] = []
            while !sub.isAtEnd { fields.append(try sub.read()) }
            return .structure(fields)
        case .dictEntry:
            throw mismatch("a value (bare dict entry)")
        case .array:
            let elementType = dbus_message_iter_get_element_type(&iter)
            if elementType == DBusTypeCode.byte.cValue {
                return .bytes(try readBytes())
            }
            let elementSig = try arrayElementSignature()
            if elementType == DBusTypeCode.dictEntry.cValue {
                // "{kv}" → key = first char, value = the rest minus the closing brace
                let inner = elementSig.dropFirst().dropLast()
                guard let k = inner.first else { throw mismatch("a{kv}") }
                let keySig = DBusSignature(unchecked: String(k))
                let valueSig = DBusSignature(unchecked: String(inner.dropFirst()))
                var arr = try enterArray()
                var entries: [DBusDictEntry] = []
                while !arr.isAtEnd {
                    var e = try arr.enterDictEntry()
                    let key = try e.read()
                    let value = try e.read()
                    entries.append(DBusDictEntry(key, value))
                }
                return .dictionary(key: keySig, value: valueSig, entries)
            }
            var arr = try enterArray()
            var elements: [DBusValue] = []
            while !arr.isAtEnd { elements.append(try arr.read()) }
            return .array(DBusSignature(unchecked: elementSig), elements)
        }
    }

    /// Decodes the value under the cursor as `T`.
    public mutating func decode<T: DBusDecodable>(_: T.Type = T.self) throws -> T {
        try T(from: &self)
    }
}

extension Equatable {
    @inline(__always)
    func consumingAdvance(_ r: inout DBusMessageReader) -> Self {
        r.advance()
        return self
    }
}
