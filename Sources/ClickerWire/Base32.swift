/// Crockford base32: digits and upper-case letters without I, L, O, U.
///
/// Decoding is case-insensitive and maps the look-alikes `O`→`0`, `I`/`L`→`1`, as Crockford
/// specifies; every other character (including `U`) is rejected.
enum Crockford {
    static let alphabet: [UInt8] = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// The 5-bit value of one character, or nil.
    @inline(__always)
    static func value(of c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0"), UInt8(ascii: "O"), UInt8(ascii: "o"): return 0
        case UInt8(ascii: "1"), UInt8(ascii: "I"), UInt8(ascii: "i"), UInt8(ascii: "L"), UInt8(ascii: "l"): return 1
        case UInt8(ascii: "2")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        default:
            let upper = (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) ? c - 32 : c
            guard let i = alphabet.firstIndex(of: upper), i >= 10 else { return nil }
            return UInt8(i)
        }
    }

    /// Encodes `bytes` (big-endian bit order, the last group zero-padded) into ⌈8n/5⌉ characters.
    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 8 + 4) / 5)
        var acc: UInt32 = 0
        var bits = 0
        for b in bytes {
            acc = (acc << 8) | UInt32(b)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int((acc >> UInt32(bits)) & 31)])
            }
        }
        if bits > 0 { out.append(alphabet[Int((acc << UInt32(5 - bits)) & 31)]) }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes characters into `byteCount` bytes; the padding bits must be zero.
    /// Returns nil on a bad character, a wrong length or non-zero padding.
    static func decode(_ chars: [UInt8], byteCount: Int) -> [UInt8]? {
        guard chars.count == (byteCount * 8 + 4) / 5 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(byteCount)
        var acc: UInt32 = 0
        var bits = 0
        for c in chars {
            guard let v = value(of: c) else { return nil }
            acc = (acc << 5) | UInt32(v)
            bits += 5
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
            }
        }
        guard acc & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}
