/// Signatures as the wire format carries them: checked by our own code (no libdbus), per the
/// specification's grammar and limits.
enum WireSignature {
    /// The specification's limits: 255 bytes, 32 nested arrays, 32 nested structures.
    static let maximumLength = 255
    static let maximumArrayDepth = 32
    static let maximumStructDepth = 32

    /// Checks a signature of any number of complete types.
    static func validate(_ sig: UnsafeRawBufferPointer) throws {
        guard sig.count <= maximumLength else { throw DBusWireError(.badSignature, at: 0) }
        var i = 0
        while i < sig.count { i = try completeTypeEnd(sig, from: i, arrays: 0, structs: 0) }
    }

    /// Checks a signature of exactly one complete type (a variant's).
    static func validateSingle(_ sig: UnsafeRawBufferPointer) throws {
        guard !sig.isEmpty, try completeTypeEnd(sig, from: 0, arrays: 0, structs: 0) == sig.count else {
            throw DBusWireError(.badSignature, at: 0)
        }
    }

    static func isBasic(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "y"), UInt8(ascii: "b"), UInt8(ascii: "n"), UInt8(ascii: "q"), UInt8(ascii: "i"),
             UInt8(ascii: "u"), UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "s"),
             UInt8(ascii: "o"), UInt8(ascii: "g"), UInt8(ascii: "h"):
            return true
        default:
            return false
        }
    }

    /// The index just past the complete type starting at `i`.
    static func completeTypeEnd(_ sig: UnsafeRawBufferPointer, from i: Int, arrays: Int, structs: Int) throws -> Int {
        let bad = DBusWireError(.badSignature, at: i)
        guard i < sig.count else { throw bad }
        let c = sig[i]
        if isBasic(c) || c == UInt8(ascii: "v") { return i + 1 }
        switch c {
        case UInt8(ascii: "a"):
            guard arrays < maximumArrayDepth else { throw DBusWireError(.tooDeep, at: i) }
            let j = i + 1
            guard j < sig.count else { throw bad }
            if sig[j] == UInt8(ascii: "{") {
                // A dictionary entry: a basic key, one complete value type, the closing brace.
                guard structs < maximumStructDepth else { throw DBusWireError(.tooDeep, at: j) }
                guard j + 1 < sig.count, isBasic(sig[j + 1]) else { throw bad }
                let valueEnd = try completeTypeEnd(sig, from: j + 2, arrays: arrays + 1, structs: structs + 1)
                guard valueEnd < sig.count, sig[valueEnd] == UInt8(ascii: "}") else { throw bad }
                return valueEnd + 1
            }
            return try completeTypeEnd(sig, from: j, arrays: arrays + 1, structs: structs)
        case UInt8(ascii: "("):
            guard structs < maximumStructDepth else { throw DBusWireError(.tooDeep, at: i) }
            var j = i + 1
            guard j < sig.count, sig[j] != UInt8(ascii: ")") else { throw bad }
            while j < sig.count, sig[j] != UInt8(ascii: ")") {
                j = try completeTypeEnd(sig, from: j, arrays: arrays, structs: structs + 1)
            }
            guard j < sig.count else { throw bad }
            return j + 1
        default:
            throw bad
        }
    }

    /// The alignment of values of the type starting with `c`.
    static func alignment(_ c: UInt8) -> Int {
        switch c {
        case UInt8(ascii: "y"), UInt8(ascii: "g"), UInt8(ascii: "v"): return 1
        case UInt8(ascii: "n"), UInt8(ascii: "q"): return 2
        case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("), UInt8(ascii: "{"): return 8
        default: return 4
        }
    }
}

/// Values as ``DBusValue`` trees, for the signals that are not on a hot path. The trees are the same as
/// ``DBusMessageReader`` builds from libdbus (`ay` as ``DBusValue/bytes(_:)``, containers carrying
/// their element signatures), so code consuming either sees the same values.
extension DBusWireCursor {
    /// Reads every value of `signature` (already checked) and requires the cursor's bytes to end there.
    mutating func readValues(signature sig: UnsafeRawBufferPointer) throws -> [DBusValue] {
        var out: [DBusValue] = []
        var i = 0
        while i < sig.count { out.append(try readValue(sig, &i)) }
        guard isAtEnd else { throw fail(.trailingBytes) }
        return out
    }

    /// Reads one value of the complete type at `sig[i]` (a checked signature) and moves `i` past it.
    mutating func readValue(_ sig: UnsafeRawBufferPointer, _ i: inout Int) throws -> DBusValue {
        let c = sig[i]
        i += 1
        switch c {
        case UInt8(ascii: "y"): return .byte(try readByte())
        case UInt8(ascii: "b"): return .boolean(try readBool())
        case UInt8(ascii: "n"): return .int16(try readInt16())
        case UInt8(ascii: "q"): return .uint16(try readUInt16())
        case UInt8(ascii: "i"): return .int32(try readInt32())
        case UInt8(ascii: "u"): return .uint32(try readUInt32())
        case UInt8(ascii: "x"): return .int64(try readInt64())
        case UInt8(ascii: "t"): return .uint64(try readUInt64())
        case UInt8(ascii: "d"): return .double(try readDouble())
        case UInt8(ascii: "s"): return .string(try readString())
        case UInt8(ascii: "o"): return .objectPath(try readObjectPath())
        case UInt8(ascii: "g"): return .signature(try readSignature())
        case UInt8(ascii: "v"): return .variant(try readVariant())
        case UInt8(ascii: "("):
            guard depth < Self.maximumDepth else { throw fail(.tooDeep) }
            try align(8)
            depth += 1
            defer { depth -= 1 }
            var fields: [DBusValue] = []
            while sig[i] != UInt8(ascii: ")") { fields.append(try readValue(sig, &i)) }
            i += 1
            return .structure(fields)
        case UInt8(ascii: "a"):
            return try readArray(sig, &i)
        default:
            // `h`: a descriptor index, but this reader never negotiates descriptor passing.
            throw fail(.unsupported)
        }
    }

    /// A variant's content (the variant itself not wrapped around it).
    public mutating func readVariant() throws -> DBusValue {
        let sigAt = offset
        let sig = try enterVariant()
        do { try WireSignature.validateSingle(sig) } catch { throw DBusWireError(.badSignature, at: sigAt) }
        var j = 0
        let value = try readValue(sig, &j)
        leaveVariant()
        return value
    }

    /// Skips a variant's value, checking it as it goes.
    public mutating func skipVariant() throws { _ = try readVariant() }

    private mutating func readArray(_ sig: UnsafeRawBufferPointer, _ i: inout Int) throws -> DBusValue {
        let elementStart = i
        // From the `a`: a dictionary entry is a complete type only inside its array.
        let elementEnd = try WireSignature.completeTypeEnd(sig, from: i - 1, arrays: 0, structs: 0)
        i = elementEnd
        let element = UnsafeRawBufferPointer(rebasing: sig[elementStart..<elementEnd])
        let first = element[0]
        if first == UInt8(ascii: "y") { return .bytes(try readByteArray()) }
        var inner = try enterArray(elementAlignment: WireSignature.alignment(first))
        if first == UInt8(ascii: "{") {
            let keySig = DBusSignature(unchecked: String(decoding: element[1..<2], as: UTF8.self))
            let valueSig = DBusSignature(unchecked: String(decoding: element[2..<(element.count - 1)], as: UTF8.self))
            var entries: [DBusDictEntry] = []
            while !inner.isAtEnd {
                try inner.align(8)
                var j = 1
                let key = try inner.readValue(element, &j)
                let value = try inner.readValue(element, &j)
                entries.append(DBusDictEntry(key, value))
            }
            return .dictionary(key: keySig, value: valueSig, entries)
        }
        var items: [DBusValue] = []
        while !inner.isAtEnd {
            var j = 0
            items.append(try inner.readValue(element, &j))
        }
        return .array(DBusSignature(unchecked: String(decoding: element, as: UTF8.self)), items)
    }

    // MARK: The shapes of object-manager and property signals

    /// An `a{sv}`, each value the variant's content (as `[String: DBusValue]` decodes from libdbus).
    public mutating func readPropertyDictionary() throws -> [String: DBusValue] {
        var inner = try enterArray(elementAlignment: 8)
        var out: [String: DBusValue] = [:]
        while !inner.isAtEnd {
            try inner.align(8)
            let key = try inner.readString()
            out[key] = try inner.readVariant()
        }
        return out
    }

    /// An `a{sa{sv}}`: interfaces and their properties.
    public mutating func readInterfaceDictionary() throws -> [String: [String: DBusValue]] {
        var inner = try enterArray(elementAlignment: 8)
        var out: [String: [String: DBusValue]] = [:]
        while !inner.isAtEnd {
            try inner.align(8)
            let key = try inner.readString()
            out[key] = try inner.readPropertyDictionary()
        }
        return out
    }

    /// An `as`.
    public mutating func readStringArray() throws -> [String] {
        var inner = try enterArray(elementAlignment: 4)
        var out: [String] = []
        while !inner.isAtEnd { out.append(try inner.readString()) }
        return out
    }
}
