import CDBus

/// D-Bus type codes (the single ASCII characters of a signature).
public enum DBusTypeCode: UInt8, Sendable, CaseIterable {
    case byte = 121          // y
    case boolean = 98        // b
    case int16 = 110         // n
    case uint16 = 113        // q
    case int32 = 105         // i
    case uint32 = 117        // u
    case int64 = 120         // x
    case uint64 = 116        // t
    case double = 100        // d
    case string = 115        // s
    case objectPath = 111    // o
    case signature = 103     // g
    case unixFD = 104        // h
    case array = 97          // a
    case variant = 118       // v
    case structure = 114     // r (as returned by libdbus for a struct)
    case dictEntry = 101     // e (as returned by libdbus for a dict entry)

    /// Whether values of this type are basic (may be dictionary keys).
    public var isBasic: Bool {
        switch self {
        case .array, .variant, .structure, .dictEntry: return false
        default: return true
        }
    }

    /// Whether values of this type have a fixed size (usable with fixed-array fast paths).
    public var isFixed: Bool {
        switch self {
        case .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double, .unixFD: return true
        default: return false
        }
    }

    var cValue: Int32 { Int32(rawValue) }
}

/// A validated D-Bus object path such as `/org/bluez/hci0`.
public struct DBusObjectPath: Sendable, Hashable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    /// Validates `rawValue`; throws a ``DBusError`` (`InvalidArgs`) if it is not a valid object path.
    public init(_ rawValue: String) throws {
        guard DBusObjectPath.isValid(rawValue) else {
            throw DBusError(name: DBusError.invalidArgs, message: "invalid object path '\(rawValue)'")
        }
        self.rawValue = rawValue
    }

    /// For literals written in source. An invalid literal becomes `/` rather than trapping;
    /// use ``init(_:)`` for untrusted input.
    public init(stringLiteral value: String) {
        self.rawValue = DBusObjectPath.isValid(value) ? value : "/"
    }

    init(unchecked: String) { self.rawValue = unchecked }

    public static let root = DBusObjectPath(unchecked: "/")

    public var description: String { rawValue }
    public static func < (a: DBusObjectPath, b: DBusObjectPath) -> Bool { a.rawValue < b.rawValue }

    /// Whether `path` satisfies the D-Bus object path grammar.
    public static func isValid(_ path: String) -> Bool { isValid(bytes: path.utf8) }

    /// Whether the UTF-8 bytes of a path satisfy the object path grammar.
    static func isValid(bytes path: some Sequence<UInt8>) -> Bool {
        var first = true
        var prevSlash = false
        var count = 0
        for c in path {
            count += 1
            if first {
                guard c == UInt8(ascii: "/") else { return false }
                first = false
                prevSlash = true
                continue
            }
            if c == UInt8(ascii: "/") {
                if prevSlash { return false }
                prevSlash = true
            } else {
                prevSlash = false
                let ok = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c == 0x5f
                if !ok { return false }
            }
        }
        if count == 0 { return false }
        if count == 1 { return true }
        return !prevSlash
    }

    /// Appends a child element (`/a` + `b` = `/a/b`). The element must be a valid path element.
    public func appending(_ element: String) throws -> DBusObjectPath {
        try DBusObjectPath(rawValue == "/" ? "/" + element : rawValue + "/" + element)
    }

    /// Whether `self` equals `ancestor` (when `orSelf`) or lies beneath it.
    public func isDescendant(of ancestor: DBusObjectPath, orSelf: Bool = true) -> Bool {
        if self == ancestor { return orSelf }
        if ancestor.rawValue == "/" { return true }
        return rawValue.hasPrefix(ancestor.rawValue + "/")
    }
}

/// A validated D-Bus type signature such as `a{sv}`.
public struct DBusSignature: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let rawValue: String

    /// Validates a (possibly multi-type) signature with libdbus.
    public init(_ rawValue: String) throws {
        guard DBusSignature.isValid(rawValue) else {
            throw DBusError(name: DBusError.invalidSignature, message: "invalid signature '\(rawValue)'")
        }
        self.rawValue = rawValue
    }

    /// For literals written in source. An invalid literal becomes the empty signature rather than
    /// trapping; use ``init(_:)`` for untrusted input.
    public init(stringLiteral value: String) {
        self.rawValue = DBusSignature.isValid(value) ? value : ""
    }

    init(unchecked: String) { self.rawValue = unchecked }

    public var description: String { rawValue }

    /// Whether `s` is a valid signature (any number of complete types).
    public static func isValid(_ s: String) -> Bool {
        if s.isEmpty { return true }
        if s.utf8.contains(0) { return false }
        return dbus_signature_validate(s, nil) != 0
    }

    /// Whether the signature is exactly one complete type.
    public var isSingleCompleteType: Bool {
        !rawValue.isEmpty && dbus_signature_validate_single(rawValue, nil) != 0
    }

    /// Splits a signature into its complete types (`sa{sv}i` → `s`, `a{sv}`, `i`).
    public var completeTypes: [DBusSignature] {
        var out: [DBusSignature] = []
        guard !rawValue.isEmpty else { return [] }
        var sigIter = DBusSignatureIter()
        rawValue.withCString { cs in
            dbus_signature_iter_init(&sigIter, cs)
            repeat {
                if let p = dbus_signature_iter_get_signature(&sigIter) {
                    out.append(DBusSignature(unchecked: String(cString: p)))
                    dbus_free(p)
                }
            } while dbus_signature_iter_next(&sigIter) != 0
        }
        return out
    }

    public static let empty = DBusSignature(unchecked: "")
    public static let byte = DBusSignature(unchecked: "y")
    public static let boolean = DBusSignature(unchecked: "b")
    public static let int16 = DBusSignature(unchecked: "n")
    public static let uint16 = DBusSignature(unchecked: "q")
    public static let int32 = DBusSignature(unchecked: "i")
    public static let uint32 = DBusSignature(unchecked: "u")
    public static let int64 = DBusSignature(unchecked: "x")
    public static let uint64 = DBusSignature(unchecked: "t")
    public static let double = DBusSignature(unchecked: "d")
    public static let string = DBusSignature(unchecked: "s")
    public static let objectPath = DBusSignature(unchecked: "o")
    public static let signature = DBusSignature(unchecked: "g")
    public static let unixFD = DBusSignature(unchecked: "h")
    public static let variant = DBusSignature(unchecked: "v")
}

/// A Unix file descriptor carried in a message. The descriptor is owned by this object and closed
/// when the last reference goes away; appending it to a message duplicates it.
public final class DBusUnixFD: Sendable, Hashable, CustomStringConvertible {
    /// The owned descriptor number.
    public let fd: Int32

    /// Takes ownership of `fd`.
    public init(takingOwnershipOf fd: Int32) { self.fd = fd }

    /// Duplicates `fd` (the caller keeps its own descriptor). Throws if `dup` fails.
    public convenience init(duplicating fd: Int32) throws {
        let d = dupFD(fd)
        guard d >= 0 else { throw DBusError(name: DBusError.failed, message: "dup(\(fd)) failed") }
        self.init(takingOwnershipOf: d)
    }

    deinit { _ = closeFD(fd) }

    public static func == (a: DBusUnixFD, b: DBusUnixFD) -> Bool { a === b }
    public func hash(into h: inout Hasher) { h.combine(ObjectIdentifier(self)) }
    public var description: String { "fd(\(fd))" }
}

/// One key/value pair of a D-Bus dictionary (`a{kv}`).
public struct DBusDictEntry: Sendable, Hashable {
    public var key: DBusValue
    public var value: DBusValue
    public init(_ key: DBusValue, _ value: DBusValue) { self.key = key; self.value = value }
}

/// Any D-Bus value. Containers carry their element signatures so that empty containers keep their type.
public indirect enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(DBusObjectPath)
    case signature(DBusSignature)
    case unixFD(DBusUnixFD)
    /// `ay`, kept as bytes (marshalled through the fixed-array fast path). Decoding always yields this
    /// case for `ay`.
    case bytes([UInt8])
    /// `a<element>` for any element type other than dict entries. (`.array(.byte, …)` is accepted
    /// when sending, but decoding produces ``bytes(_:)``.)
    case array(DBusSignature, [DBusValue])
    /// `a{<key><value>}`.
    case dictionary(key: DBusSignature, value: DBusSignature, [DBusDictEntry])
    /// `(…)`.
    case structure([DBusValue])
    /// `v`.
    case variant(DBusValue)

    /// The complete-type signature of this value.
    public var signature: DBusSignature { DBusSignature(unchecked: signatureString) }

    var signatureString: String {
        switch self {
        case .byte: return "y"
        case .boolean: return "b"
        case .int16: return "n"
        case .uint16: return "q"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .double: return "d"
        case .string: return "s"
        case .objectPath: return "o"
        case .signature: return "g"
        case .unixFD: return "h"
        case .bytes: return "ay"
        case .array(let e, _): return "a" + e.rawValue
        case .dictionary(let k, let v, _): return "a{" + k.rawValue + v.rawValue + "}"
        case .structure(let fields): return "(" + fields.map(\.signatureString).joined() + ")"
        case .variant: return "v"
        }
    }

    /// Builds an `a{sv}` from a Swift dictionary (keys sorted for a deterministic wire order).
    public static func stringVariantDictionary(_ d: [String: DBusValue]) -> DBusValue {
        .dictionary(key: .string, value: .variant,
                    d.sorted { $0.key < $1.key }.map { DBusDictEntry(.string($0.key), .variant($0.value)) })
    }

    /// Builds an `a{qv}` (e.g. BlueZ ManufacturerData) from a Swift dictionary.
    public static func uint16VariantDictionary(_ d: [UInt16: DBusValue]) -> DBusValue {
        .dictionary(key: .uint16, value: .variant,
                    d.sorted { $0.key < $1.key }.map { DBusDictEntry(.uint16($0.key), .variant($0.value)) })
    }

    /// Builds an `as`.
    public static func stringArray(_ a: [String]) -> DBusValue { .array(.string, a.map { .string($0) }) }

    /// Builds an `ao`.
    public static func objectPathArray(_ a: [DBusObjectPath]) -> DBusValue { .array(.objectPath, a.map { .objectPath($0) }) }
}
