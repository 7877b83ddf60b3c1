/// A 5-row block font for the join code.
public enum BigFont {
    /// Glyph height in rows.
    public static let height = 5
    /// Glyph width in columns.
    public static let glyphWidth = 5
    /// Columns between glyphs.
    public static let gap = 2

    static let glyphs: [Character: [String]] = [
        "0": [" ███ ", "█   █", "█   █", "█   █", " ███ "],
        "1": ["  █  ", " ██  ", "  █  ", "  █  ", " ███ "],
        "2": [" ███ ", "█   █", "  ██ ", " █   ", "█████"],
        "3": ["████ ", "    █", " ███ ", "    █", "████ "],
        "4": ["█   █", "█   █", "█████", "    █", "    █"],
        "5": ["█████", "█    ", "████ ", "    █", "████ "],
        "6": [" ███ ", "█    ", "████ ", "█   █", " ███ "],
        "7": ["█████", "    █", "   █ ", "  █  ", "  █  "],
        "8": [" ███ ", "█   █", " ███ ", "█   █", " ███ "],
        "9": [" ███ ", "█   █", " ████", "    █", " ███ "],
        "-": ["     ", "     ", " ███ ", "     ", "     "],
        " ": ["     ", "     ", "     ", "     ", "     "],
        "A": [" ███ ", "█   █", "█████", "█   █", "█   █"],
        "B": ["████ ", "█   █", "████ ", "█   █", "████ "],
        "C": [" ████", "█    ", "█    ", "█    ", " ████"],
        "D": ["████ ", "█   █", "█   █", "█   █", "████ "],
        "E": ["█████", "█    ", "████ ", "█    ", "█████"],
        "F": ["█████", "█    ", "████ ", "█    ", "█    "],
    ]

    /// Width in columns of `text` drawn large.
    public static func width(of text: String) -> Int {
        text.isEmpty ? 0 : text.count * glyphWidth + (text.count - 1) * gap
    }

    /// Whether every character of `text` has a large glyph.
    public static func canDraw(_ text: String) -> Bool {
        text.uppercased().allSatisfy { glyphs[$0] != nil }
    }

    /// The five rows of `text` drawn large (characters without a glyph are drawn as blanks).
    public static func rows(_ text: String) -> [String] {
        (0..<height).map { r in
            text.uppercased().map { glyphs[$0]?[r] ?? "     " }.joined(separator: String(repeating: " ", count: gap))
        }
    }
}
