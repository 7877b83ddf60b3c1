/// Bytes as hexadecimal text, two digits a byte: the package's one hex formatter.
public enum Hex {
    /// `[0x0f, 0xa0]` → `"0fa0"`; with `separator: ":"` and `uppercase`, `"0F:A0"`.
    public static func string(_ bytes: some Sequence<UInt8>, uppercase: Bool = false, separator: String = "") -> String {
        let digits: [UInt8] = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var out: [UInt8] = []
        for b in bytes {
            if !out.isEmpty { out += separator.utf8 }
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
