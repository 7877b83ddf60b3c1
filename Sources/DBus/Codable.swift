import CDBus

/// A Swift type with a fixed D-Bus representation that can be sent.
public protocol DBusEncodable: Sendable {
    /// The complete-type signature of the encoded value.
    static var dbusSignature: DBusSignature { get }
    /// The value as a ``DBusValue``.
    var dbusValue: DBusValue { get }
}

/// A Swift type that can be read from a message or from a ``DBusValue``, throwing
/// ``DBusDecodingError`` when the type does not match.
public protocol DBusDecodable: Sendable {
    /// Reads one value at the reader's cursor and advances.
    init(from reader: inout DBusMessageReader) throws
    /// Converts an already decoded value (e.g. the content of a variant).
    init(dbusValue: DBusValue) throws
}

public typealias DBusCodable = DBusEncodable & DBusDecodable

@inline(__always)
func decodeMismatch<T>(_ v: DBusValue, _ t: T.Type, _ sig: String) -> DBusDecodingError {
    DBusDecodingError(expected: sig, found: v.signatureString, context: "\(T.self)")
}

extension DBusValue {
    /// Strips any number of variant wrappers.
    public var unwrapped: DBusValue {
        var v = self
        while case .variant(let inner) = v { v = inner }
        return v
    }

    /// Converts to `T`, looking through variants.
    public func decode<T: DBusDecodable>(_: T.Type = T.self) throws -> T { try T(dbusValue: self) }
}


extension UInt8: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "y") }
    public var dbusValue: DBusValue { .byte(self) }
    public init(from reader: inout DBusMessageReader) throws { self = try reader.readByte() }
    public init(dbusValue: DBusValue) throws {
        guard case .byte(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, UInt8.self, "y") }
        self = x
    }
}

extension Bool: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "b") }
    public var dbusValue: DBusValue { .boolean(self) }
    public init(from reader: inout DBusMessageReader) throws { self = try reader.readBool() }
    public init(dbusValue: DBusValue) throws {
        guard case .boolean(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, Bool.self, "b") }
        self = x
    }
}

extension Int16: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "n") }
    public var dbusValue: DBusValue { .int16(self) }
    public init(from reader: inout DBusMessageReader) throws { self = try reader.readInt16() }
    public init(dbusValue: DBusValue) throws {
        guard case .int16(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, Int16.self, "n") }
        self = x
    }
}

extension UInt16: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "q") }
    public var dbusValue: DBusValue { .uint16(self) }
    public init(from reader: inout DBusMessageReader) throws { self = try reader.readUInt16() }
    public init(dbusValue: DBusValue) throws {
        guard case .uint16(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, UInt16.self, "q") }
        self = x
    }
}

extension Int32: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "i") }
    public var dbusValue: DBusValue { .int32(self) }
    public init(from reader: inout DBusMessageReader) throws { self = try reader.readInt32() }
    public init(dbusValue: DBusValue) throws {
        guard case .int32(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, Int32.self, "i") }
        self = x
    }
}

extension UInt32: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "u") }
    public var dbusValue: DBusValue { .uint32(self) }
    public init(from reader: inout DBusMessageReader) throws { self = try reader.readUInt32() }
    public init(dbusValue: DBusValue) throws {
        guard case .uint32(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, UInt32.self, "u") }
        self = x
    }
}

extension Int64: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "x") }
    public var dbusValue: DBusValue { .int64(self) }
    public init(from reader: inout DBusMessageReader) throws { self = try reader.readInt64() }
    public init(dbusValue: DBusValue) throws {
        guard case .int64(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, Int64.self, "x") }
        self = x
    }
}

extension UInt64: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "t") }
    public var dbusValue: DBusValue { .uint64(self) }
    public init(from reader: inout DBusMessageReader) throws { self = try reader.readUInt64() }
    public init(dbusValue: DBusValue) throws {
        guard case .uint64(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, UInt64.self, "t") }
        self = x
    }
}

extension Double: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "d") }
    public var dbusValue: DBusValue { .double(self) }
    public init(from reader: inout DBusMessageReader) throws { self = try reader.readDouble() }
    public init(dbusValue: DBusValue) throws {
        guard case .double(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, Double.self, "d") }
        self = x
    }
}

extension String: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "s") }
    public var dbusValue: DBusValue { .string(self) }
    public init(from reader: inout DBusMessageReader) throws { self = try reader.readString() }
    public init(dbusValue: DBusValue) throws {
        guard case .string(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, String.self, "s") }
        self = x
    }
}

extension DBusObjectPath: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "o") }
    public var dbusValue: DBusValue { .objectPath(self) }
    public init(from reader: inout DBusMessageReader) throws { self = try reader.readObjectPath() }
    public init(dbusValue: DBusValue) throws {
        guard case .objectPath(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, DBusObjectPath.self, "o") }
        self = x
    }
}

extension DBusSignature: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "g") }
    public var dbusValue: DBusValue { .signature(self) }
    public init(from reader: inout DBusMessageReader) throws { self = try reader.readSignature() }
    public init(dbusValue: DBusValue) throws {
        guard case .signature(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, DBusSignature.self, "g") }
        self = x
    }
}

extension DBusUnixFD: DBusEncodable, DBusDecodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "h") }
    public var dbusValue: DBusValue { .unixFD(self) }
    public convenience init(from reader: inout DBusMessageReader) throws {
        let fd = try reader.readUnixFD()
        try self.init(duplicating: fd.fd)
    }
    /// Duplicates the descriptor held by the value.
    public convenience init(dbusValue: DBusValue) throws {
        guard case .unixFD(let x) = dbusValue.unwrapped else { throw decodeMismatch(dbusValue, DBusUnixFD.self, "h") }
        try self.init(duplicating: x.fd)
    }
}

extension DBusValue: DBusEncodable, DBusDecodable {
    /// A `DBusValue` used as a typed element stands for a variant (`v`): `[String: DBusValue]` is `a{sv}`.
    public static var dbusSignature: DBusSignature { .variant }
    /// Wraps `self` in a variant.
    public var dbusValue: DBusValue { .variant(self) }
    /// Reads the value under the cursor; a variant is unwrapped one level.
    public init(from reader: inout DBusMessageReader) throws {
        if reader.currentType == .variant {
            var sub = try reader.enterVariant()
            self = try sub.read()
        } else {
            self = try reader.read()
        }
    }
    /// Unwraps one variant level.
    public init(dbusValue: DBusValue) throws {
        if case .variant(let inner) = dbusValue { self = inner } else { self = dbusValue }
    }
}

extension Array: DBusEncodable where Element: DBusEncodable {
    public static var dbusSignature: DBusSignature { DBusSignature(unchecked: "a" + Element.dbusSignature.rawValue) }
    public var dbusValue: DBusValue {
        if let bytes = self as? [UInt8] { return .bytes(bytes) }
        return .array(Element.dbusSignature, map(\.dbusValue))
    }
}

extension Array: DBusDecodable where Element: DBusDecodable {
    public init(from reader: inout DBusMessageReader) throws {
        if Element.self == UInt8.self, reader.currentType == .array {
            let bytes = try reader.readBytes()
            if let same = bytes as? [Element] { self = same; return }
        }
        var arr = try reader.enterArray()
        var out: [Element] = []
        while !arr.isAtEnd { out.append(try Element(from: &arr)) }
        self = out
    }

    public init(dbusValue: DBusValue) throws {
        switch dbusValue.unwrapped {
        case .bytes(let b):
            guard let same = b as? [Element] else {
                self = try b.map { try Element(dbusValue: .byte($0)) }
                return
            }
            self = same
        case .array(_, let items):
            self = try items.map { try Element(dbusValue: $0) }
        default:
            throw decodeMismatch(dbusValue, [Element].self, "a…")
        }
    }
}

extension Dictionary: DBusEncodable where Key: DBusEncodable, Value: DBusEncodable {
    public static var dbusSignature: DBusSignature {
        DBusSignature(unchecked: "a{" + Key.dbusSignature.rawValue + Value.dbusSignature.rawValue + "}")
    }
    public var dbusValue: DBusValue {
        .dictionary(key: Key.dbusSignature, value: Value.dbusSignature, map { DBusDictEntry($0.key.dbusValue, $0.value.dbusValue) })
    }
}

extension Dictionary: DBusDecodable where Key: DBusDecodable, Value: DBusDecodable {
    public init(from reader: inout DBusMessageReader) throws {
        var out: [Key: Value] = [:]
        try reader.forEachDictEntry { e in
            let k = try Key(from: &e)
            out[k] = try Value(from: &e)
        }
        self = out
    }

    public init(dbusValue: DBusValue) throws {
        guard case .dictionary(_, _, let entries) = dbusValue.unwrapped else {
            throw decodeMismatch(dbusValue, [Key: Value].self, "a{…}")
        }
        var out: [Key: Value] = [:]
        out.reserveCapacity(entries.count)
        for e in entries { out[try Key(dbusValue: e.key)] = try Value(dbusValue: e.value) }
        self = out
    }
}
