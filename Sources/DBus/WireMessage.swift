/// One message in the D-Bus wire format, its header parsed and checked by our own code (no libdbus):
/// the fixed part, the header fields the reader uses, where the body starts. The body is read with
/// ``body()``. It points into memory it does not own: valid only while its bytes are (inside the
/// callback it is handed to).
public struct DBusWireMessage {
    @usableFromInline let bytes: UnsafeRawBufferPointer
    @usableFromInline let swapped: Bool
    /// The type byte: 1 call, 2 return, 3 error, 4 signal (others are to be ignored).
    public let typeCode: UInt8
    public let serial: UInt32
    /// The serial a return or error answers (0 when absent).
    public let replySerial: UInt32
    @usableFromInline let pathRange: Range<Int>?
    @usableFromInline let interfaceRange: Range<Int>?
    @usableFromInline let memberRange: Range<Int>?
    @usableFromInline let errorNameRange: Range<Int>?
    @usableFromInline let senderRange: Range<Int>?
    @usableFromInline let signatureRange: Range<Int>?
    @usableFromInline let bodyStart: Int

    /// The specification's limit on a whole message (128 MiB).
    public static let maximumLength = 1 << 27
    /// The fixed part of the header, which says how long the message is.
    public static let prefixLength = 16

    /// The whole length of the message starting with `prefix` (at least ``prefixLength`` bytes),
    /// from its header's lengths. Throws when the prefix cannot begin a message: the stream's framing
    /// is then lost.
    public static func frameLength(_ prefix: UnsafeRawBufferPointer) throws -> Int {
        guard prefix.count >= prefixLength else { throw DBusWireError(.truncated, at: prefix.count) }
        let swapped = try isSwapped(prefix[0])
        guard prefix[3] == 1 else { throw DBusWireError(.badHeader, at: 3) }
        func u32(_ at: Int) -> Int {
            let raw = prefix.loadUnaligned(fromByteOffset: at, as: UInt32.self)
            return Int(swapped ? raw.byteSwapped : raw)
        }
        let body = u32(4), fields = u32(12)
        guard fields <= DBusWireCursor.maximumArrayLength else { throw DBusWireError(.tooLarge, at: 12) }
        guard body <= maximumLength else { throw DBusWireError(.tooLarge, at: 4) }
        let total = ((prefixLength + fields + 7) & ~7) + body
        guard total <= maximumLength else { throw DBusWireError(.tooLarge, at: 4) }
        return total
    }

    /// Whether a message with this first byte (its byte order) has the other order than the machine's.
    static func isSwapped(_ order: UInt8) throws -> Bool {
        switch order {
        case UInt8(ascii: "l"): return UInt32(1).littleEndian != 1
        case UInt8(ascii: "B"): return UInt32(1).bigEndian != 1
        default: throw DBusWireError(.badHeader, at: 0)
        }
    }

    /// Parses the header of the message that `bytes` holds exactly.
    public init(parsing bytes: UnsafeRawBufferPointer) throws {
        let total = try Self.frameLength(bytes)
        guard total == bytes.count else { throw DBusWireError(.truncated, at: bytes.count) }
        self.bytes = bytes
        swapped = try Self.isSwapped(bytes[0])
        typeCode = bytes[1]
        var c = DBusWireCursor(bytes: bytes, offset: 8, end: bytes.count, swapped: swapped)
        serial = try c.readUInt32()
        guard serial != 0 else { throw DBusWireError(.badHeader, at: 8) }
        var fields = try c.enterArray(elementAlignment: 8)
        var path, interface, member, errorName, sender, signature: Range<Int>?
        var reply: UInt32 = 0
        while !fields.isAtEnd {
            try fields.align(8)
            let code = try fields.readByte()
            let sigAt = fields.offset
            let sig = try fields.enterVariant()
            func expect(_ s: StaticString) throws {
                guard wireEquals(sig, s) else { throw DBusWireError(.badHeader, at: sigAt) }
            }
            func text(_ c: inout DBusWireCursor, path: Bool = false) throws -> Range<Int> {
                let start = c.offset
                let b = try c.readStringBytes()
                guard path ? DBusObjectPath.isValid(bytes: b) : DBusWireCursor.isText(b) else {
                    throw DBusWireError(path ? .badObjectPath : .badString, at: start)
                }
                return (c.offset - 1 - b.count)..<(c.offset - 1)
            }
            switch code {
            case 1: try expect("o"); path = try text(&fields, path: true)
            case 2: try expect("s"); interface = try text(&fields)
            case 3: try expect("s"); member = try text(&fields)
            case 4: try expect("s"); errorName = try text(&fields)
            case 5: try expect("u"); reply = try fields.readUInt32()
            case 7: try expect("s"); sender = try text(&fields)
            case 8:
                try expect("g")
                let start = fields.offset
                let s = try fields.readSignatureBytes()
                do { try WireSignature.validate(s) } catch { throw DBusWireError(.badSignature, at: start) }
                signature = (fields.offset - 1 - s.count)..<(fields.offset - 1)
            case 9:
                // Descriptors are never negotiated on this connection: a message claiming some is bad.
                try expect("u")
                guard try fields.readUInt32() == 0 else { throw DBusWireError(.unsupported, at: sigAt) }
            case 0:
                throw DBusWireError(.badHeader, at: sigAt - 1)
            default:
                // The destination (6) and fields unknown to this reader: checked and skipped.
                do { try WireSignature.validateSingle(sig) } catch { throw DBusWireError(.badSignature, at: sigAt) }
                var j = 0
                _ = try fields.readValue(sig, &j)
            }
            fields.leaveVariant()
        }
        try c.align(8)
        bodyStart = c.offset
        replySerial = reply
        pathRange = path
        interfaceRange = interface
        memberRange = member
        errorNameRange = errorName
        senderRange = sender
        signatureRange = signature
        // The fields each message type requires.
        switch typeCode {
        case 1: guard path != nil, member != nil else { throw DBusWireError(.badHeader, at: 12) }
        case 2: guard reply != 0 else { throw DBusWireError(.badHeader, at: 12) }
        case 3: guard reply != 0, errorName != nil else { throw DBusWireError(.badHeader, at: 12) }
        case 4: guard path != nil, interface != nil, member != nil else { throw DBusWireError(.badHeader, at: 12) }
        default: break
        }
        if signature == nil && bodyStart < bytes.count { throw DBusWireError(.trailingBytes, at: bodyStart) }
    }

    /// The message type, or nil for a type this protocol version does not define (to be ignored).
    public var type: DBusMessageType? { DBusMessageType(rawValue: Int32(typeCode)) }

    @usableFromInline
    func slice(_ r: Range<Int>?) -> UnsafeRawBufferPointer? {
        r.map { UnsafeRawBufferPointer(rebasing: bytes[$0]) }
    }

    private func string(_ r: Range<Int>?) -> String? {
        slice(r).map { String(decoding: $0, as: UTF8.self) }
    }

    public var path: DBusObjectPath? { string(pathRange).map { DBusObjectPath(unchecked: $0) } }
    public var interface: String? { string(interfaceRange) }
    public var member: String? { string(memberRange) }
    public var errorName: String? { string(errorNameRange) }
    public var sender: String? { string(senderRange) }
    /// The body's signature (empty when the header has none).
    public var signature: String { string(signatureRange) ?? "" }

    /// The path's bytes, in place (empty when there is none).
    @inlinable
    public func withPathBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(slice(pathRange) ?? UnsafeRawBufferPointer(start: nil, count: 0))
    }

    @inlinable public func interfaceIs(_ s: StaticString) -> Bool { slice(interfaceRange).map { wireEquals($0, s) } ?? false }
    @inlinable public func memberIs(_ s: StaticString) -> Bool { slice(memberRange).map { wireEquals($0, s) } ?? false }
    @inlinable public func signatureIs(_ s: StaticString) -> Bool { wireEquals(slice(signatureRange) ?? UnsafeRawBufferPointer(start: nil, count: 0), s) }

    /// A cursor at the first argument.
    @inlinable
    public func body() -> DBusWireCursor {
        DBusWireCursor(bytes: bytes, offset: bodyStart, end: bytes.count, swapped: swapped)
    }

    /// Every argument as a ``DBusValue`` (what ``DBusMessage/arguments()`` gives for the same message).
    public func arguments() throws -> [DBusValue] {
        var c = body()
        return try c.readValues(signature: slice(signatureRange) ?? UnsafeRawBufferPointer(start: nil, count: 0))
    }
}
