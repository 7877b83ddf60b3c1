/// Why bytes in the D-Bus wire format were refused, and where.
public struct DBusWireError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable {
        /// A value, padding or length runs past the end of its message or container.
        case truncated
        /// Alignment padding that is not zero.
        case badPadding
        /// An array or message length over the protocol's limits.
        case tooLarge
        /// A boolean other than 0 or 1.
        case badBoolean
        /// A string without its terminating NUL, with a NUL inside, or not UTF-8.
        case badString
        case badObjectPath
        case badSignature
        /// Containers nested deeper than the protocol allows.
        case tooDeep
        /// A value of another type than the signature or the reader asked for.
        case typeMismatch
        /// A header that is not a D-Bus message header (endianness, version, fields, lengths).
        case badHeader
        /// A type this reader does not take (Unix descriptors: none are ever negotiated).
        case unsupported
        /// Bytes left after the last value of a body or container.
        case trailingBytes
    }

    public let reason: Reason
    /// Offset from the start of the message.
    public let offset: Int

    public init(_ reason: Reason, at offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String { "D-Bus wire format: \(reason.rawValue) at byte \(offset)" }
}

/// A forward cursor over values in the D-Bus wire format (marshalled bytes, either byte order), for
/// reading messages straight from a socket buffer without libdbus. Every read checks bounds, alignment
/// padding and value rules and throws ``DBusWireError``; nothing traps and nothing is allocated beyond
/// the values asked for, whose sizes are bounded by the bytes present.
///
/// Offsets are from the start of the message, which alignment is relative to. The cursor points into
/// memory it does not own: it is valid only while the bytes it was made from are (the callback a
/// ``DBusWireMessage`` is handed to).
public struct DBusWireCursor {
    @usableFromInline let bytes: UnsafeRawBufferPointer
    /// The next byte to read (from the start of the message).
    @usableFromInline var offset: Int
    /// Where this cursor's bytes end (the body's end, or the end of the container it reads).
    @usableFromInline var end: Int
    /// Whether the message's byte order differs from the machine's.
    @usableFromInline let swapped: Bool
    /// Containers (arrays, structures, dictionary entries, variants) entered to get here.
    @usableFromInline var depth: Int

    /// The protocol's limit on an array's length in bytes (64 MiB).
    public static let maximumArrayLength = 1 << 26
    /// The nesting limit: 32 arrays and 32 structures, variants counting towards the total.
    public static let maximumDepth = 64

    @usableFromInline
    init(bytes: UnsafeRawBufferPointer, offset: Int, end: Int, swapped: Bool, depth: Int = 0) {
        self.bytes = bytes
        self.offset = offset
        self.end = end
        self.swapped = swapped
        self.depth = depth
    }

    /// Whether every byte of this cursor's range has been read.
    @inlinable public var isAtEnd: Bool { offset >= end }

    @inlinable
    func fail(_ reason: DBusWireError.Reason) -> DBusWireError { DBusWireError(reason, at: offset) }

    /// Skips the padding up to a multiple of `n` (1, 2, 4 or 8), which must be zero bytes.
    @inlinable
    public mutating func align(_ n: Int) throws {
        let padded = (offset &+ n &- 1) & ~(n &- 1)
        guard padded <= end else { throw fail(.truncated) }
        while offset < padded {
            guard bytes[offset] == 0 else { throw fail(.badPadding) }
            offset &+= 1
        }
    }

    @inlinable
    mutating func fixed<T: FixedWidthInteger>(_: T.Type) throws -> T {
        let size = MemoryLayout<T>.size
        try align(size)
        guard end &- offset >= size else { throw fail(.truncated) }
        let raw = bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
        offset &+= size
        return swapped ? raw.byteSwapped : raw
    }

    @inlinable public mutating func readByte() throws -> UInt8 { try fixed(UInt8.self) }
    @inlinable public mutating func readInt16() throws -> Int16 { try fixed(Int16.self) }
    @inlinable public mutating func readUInt16() throws -> UInt16 { try fixed(UInt16.self) }
    @inlinable public mutating func readInt32() throws -> Int32 { try fixed(Int32.self) }
    @inlinable public mutating func readUInt32() throws -> UInt32 { try fixed(UInt32.self) }
    @inlinable public mutating func readInt64() throws -> Int64 { try fixed(Int64.self) }
    @inlinable public mutating func readUInt64() throws -> UInt64 { try fixed(UInt64.self) }
    @inlinable public mutating func readDouble() throws -> Double { Double(bitPattern: try fixed(UInt64.self)) }

    @inlinable
    public mutating func readBool() throws -> Bool {
        let at = offset
        switch try fixed(UInt32.self) {
        case 0: return false
        case 1: return true
        default: throw DBusWireError(.badBoolean, at: at)
        }
    }

    /// The bytes of a string or object path (without its NUL), in place. Not checked for UTF-8 or an
    /// inner NUL: for comparing with known names; ``readString()`` checks both.
    @inlinable
    public mutating func readStringBytes() throws -> UnsafeRawBufferPointer {
        let n = Int(try fixed(UInt32.self))
        guard n < end &- offset else { throw fail(.truncated) }
        let start = offset
        guard bytes[start &+ n] == 0 else { throw fail(.badString) }
        offset = start &+ n &+ 1
        return UnsafeRawBufferPointer(rebasing: bytes[start..<(start &+ n)])
    }

    /// Whether the string under the cursor equals `s` (the string is read either way).
    @inlinable
    public mutating func readStringEquals(_ s: StaticString) throws -> Bool {
        wireEquals(try readStringBytes(), s)
    }

    public mutating func readString() throws -> String {
        let at = offset
        guard let s = Self.text(try readStringBytes()) else { throw DBusWireError(.badString, at: at) }
        return s
    }

    public mutating func readObjectPath() throws -> DBusObjectPath {
        let at = offset
        let b = try readStringBytes()
        guard DBusObjectPath.isValid(bytes: b), let s = Self.text(b) else { throw DBusWireError(.badObjectPath, at: at) }
        return DBusObjectPath(unchecked: s)
    }

    /// A signature's bytes (without its NUL), in place, unchecked.
    @inlinable
    public mutating func readSignatureBytes() throws -> UnsafeRawBufferPointer {
        let n = Int(try fixed(UInt8.self))
        guard n < end &- offset else { throw fail(.truncated) }
        let start = offset
        guard bytes[start &+ n] == 0 else { throw fail(.badSignature) }
        offset = start &+ n &+ 1
        return UnsafeRawBufferPointer(rebasing: bytes[start..<(start &+ n)])
    }

    public mutating func readSignature() throws -> DBusSignature {
        let at = offset
        let b = try readSignatureBytes()
        guard (try? WireSignature.validate(b)) != nil, let s = Self.text(b) else {
            throw DBusWireError(.badSignature, at: at)
        }
        return DBusSignature(unchecked: s)
    }

    /// Enters an array whose elements align to `elementAlignment`: returns a cursor over its elements
    /// and moves this one past the array.
    @inlinable
    public mutating func enterArray(elementAlignment: Int) throws -> DBusWireCursor {
        let n = Int(try fixed(UInt32.self))
        guard n <= Self.maximumArrayLength else { throw fail(.tooLarge) }
        guard depth < Self.maximumDepth else { throw fail(.tooDeep) }
        try align(elementAlignment)
        guard n <= end &- offset else { throw fail(.truncated) }
        let inner = DBusWireCursor(bytes: bytes, offset: offset, end: offset &+ n, swapped: swapped, depth: depth &+ 1)
        offset &+= n
        return inner
    }

    /// An `ay` (or any array of bytes), copied out.
    @inlinable
    public mutating func readByteArray() throws -> [UInt8] {
        let inner = try enterArray(elementAlignment: 1)
        return Array(UnsafeRawBufferPointer(rebasing: bytes[inner.offset..<inner.end]))
    }

    /// Reads a variant's signature, which must be one complete type, and counts the nesting.
    @inlinable
    public mutating func enterVariant() throws -> UnsafeRawBufferPointer {
        guard depth < Self.maximumDepth else { throw fail(.tooDeep) }
        let sig = try readSignatureBytes()
        depth &+= 1
        return sig
    }

    /// Leaves a variant entered with ``enterVariant()`` once its value has been read.
    @inlinable
    public mutating func leaveVariant() { depth &-= 1 }

    /// Whether `b` is UTF-8 without a NUL; no String is built when it is ASCII (as header names are).
    static func isText(_ b: UnsafeRawBufferPointer) -> Bool {
        for c in b {
            if c == 0 { return false }
            if c >= 0x80 { return text(b) != nil }
        }
        return true
    }

    static func text(_ b: UnsafeRawBufferPointer) -> String? {
        guard !b.contains(0) else { return nil }
        return String(validating: b, as: UTF8.self)
    }
}

/// Whether `buf` holds exactly the bytes of `s`.
@inlinable
public func wireEquals(_ buf: UnsafeRawBufferPointer, _ s: StaticString) -> Bool {
    guard buf.count == s.utf8CodeUnitCount else { return false }
    let p = s.utf8Start
    for i in 0..<buf.count where buf[i] != p[i] { return false }
    return true
}
