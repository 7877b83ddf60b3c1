/// Text from outside (roster names, student IDs) made safe to print on a terminal.
public enum TerminalText {
    /// Replaces every character that a terminal would act on instead of showing with U+FFFD:
    /// C0 controls (ESC, BEL, CR, …), DEL, C1 controls (including the 8-bit CSI, U+009B), and the
    /// bidirectional overrides and isolates that reorder what is shown. A newline is kept only when
    /// `keepingNewlines` is set (multi-line messages of our own).
    public static func safe(_ s: String, keepingNewlines: Bool = false) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map { c in
            if keepingNewlines, c == "\n" { return c }
            return isUnsafe(c) ? "\u{FFFD}" : c
        }))
    }

    /// Whether a terminal would interpret `c` rather than show it.
    public static func isUnsafe(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: true  // bidi controls
        default: false
        }
    }
}
