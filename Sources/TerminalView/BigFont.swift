/// A 5-row block font for the join code: digits, all letters A–Z (Crockford base32 uses all but
/// I, L, O, U), '-' and space. Every glyph is 5 × 5 cells and every pattern is distinct, so a
/// drawn code can be read back (see ``read(_:gap:)``). Zero is slashed so it never looks like a letter.
public enum BigFont {
    /// Glyph height in rows.
    public static let height = 5
    /// Glyph width in columns.
    public static let glyphWidth = 5
    /// Default columns between glyphs.
    public static let gap = 2

    static let glyphs: [Character: [String]] = [
        "0": [" ███ ", "█  ██", "█ █ █", "██  █", " ███ "],
        "1": ["  █  ", " ██  ", "  █  ", "  █  ", " ███ "],
        "2": [" ███ ", "█   █", "  ██ ", " █   ", "█████"],
        "3": ["████ ", "    █", " ███ ", "    █", "████ "],
        "4": ["   █ ", "  ██ ", " █ █ ", "█████", "   █ "],
        "5": ["█████", "█    ", "████ ", "    █", "████ "],
        "6": [" ███ ", "█    ", "████ ", "█   █", " ███ "],
        "7": ["█████", "    █", "   █ ", "  █  ", "  █  "],
        "8": [" ███ ", "█   █", " ███ ", "█   █", " ███ "],
        "9": [" ███ ", "█   █", " ████", "    █", " ███ "],
        "A": [" ███ ", "█   █", "█████", "█   █", "█   █"],
        "B": ["████ ", "█   █", "████ ", "█   █", "████ "],
        "C": [" ████", "█    ", "█    ", "█    ", " ████"],
        "D": ["████ ", "█   █", "█   █", "█   █", "████ "],
        "E": ["█████", "█    ", "████ ", "█    ", "█████"],
        "F": ["█████", "█    ", "████ ", "█    ", "█    "],
        "G": [" ████", "█    ", "█  ██", "█   █", " ████"],
        "H": ["█   █", "█   █", "█████", "█   █", "█   █"],
        "I": [" ███ ", "  █  ", "  █  ", "  █  ", " ███ "],
        "J": ["  ███", "    █", "    █", "█   █", " ███ "],
        "K": ["█   █", "█  █ ", "███  ", "█  █ ", "█   █"],
        "L": ["█    ", "█    ", "█    ", "█    ", "█████"],
        "M": ["█   █", "██ ██", "█ █ █", "█   █", "█   █"],
        "N": ["█   █", "██  █", "█ █ █", "█  ██", "█   █"],
        "O": [" ███ ", "█   █", "█   █", "█   █", " ███ "],
        "P": ["████ ", "█   █", "████ ", "█    ", "█    "],
        "Q": [" ███ ", "█   █", "█   █", "█  █ ", " ██ █"],
        "R": ["████ ", "█   █", "████ ", "█  █ ", "█   █"],
        "S": [" ████", "█    ", " ███ ", "    █", "████ "],
        "T": ["█████", "  █  ", "  █  ", "  █  ", "  █  "],
        "U": ["█   █", "█   █", "█   █", "█   █", " ███ "],
        "V": ["█   █", "█   █", "█   █", " █ █ ", "  █  "],
        "W": ["█   █", "█   █", "█ █ █", "██ ██", "█   █"],
        "X": ["█   █", " █ █ ", "  █  ", " █ █ ", "█   █"],
        "Y": ["█   █", " █ █ ", "  █  ", "  █  ", "  █  "],
        "Z": ["█████", "   █ ", "  █  ", " █   ", "█████"],
        "-": ["     ", "     ", " ███ ", "     ", "     "],
        " ": ["     ", "     ", "     ", "     ", "     "],
    ]

    /// Pattern (rows joined) to character, for ``read(_:gap:)``.
    static let reverse: [String: Character] = {
        var r: [String: Character] = [:]
        for (c, g) in glyphs { r[g.joined()] = c }
        return r
    }()

    /// Every character that has a large glyph.
    public static var characters: Set<Character> { Set(glyphs.keys) }

    /// Width in columns of `text` drawn large with `gap` columns between glyphs.
    public static func width(of text: String, gap: Int = gap) -> Int {
        text.isEmpty ? 0 : text.count * glyphWidth + (text.count - 1) * gap
    }

    /// Whether every character of `text` has a large glyph (letters in either case).
    public static func canDraw(_ text: String) -> Bool {
        text.uppercased().allSatisfy { glyphs[$0] != nil }
    }

    /// The five rows of `text` drawn large (characters without a glyph are drawn as blanks).
    public static func rows(_ text: String, gap: Int = gap) -> [String] {
        let upper = text.uppercased()
        let space = String(repeating: " ", count: max(0, gap))
        return (0..<height).map { r in
            upper.map { glyphs[$0]?[r] ?? "     " }.joined(separator: space)
        }
    }

    /// Reads text drawn by ``rows(_:gap:)`` back: nil when `rows` is not `height` rows of equal
    /// width made of whole glyphs, or a glyph is unknown.
    public static func read(_ rows: [String], gap: Int = gap) -> String? {
        guard rows.count == height, let w = rows.first?.count, rows.allSatisfy({ $0.count == w }) else { return nil }
        let pitch = glyphWidth + max(0, gap)
        guard w >= glyphWidth, (w + max(0, gap)) % pitch == 0 else { return nil }
        let grid = rows.map { Array($0) }
        var text = ""
        for start in stride(from: 0, to: w, by: pitch) {
            let pattern = grid.map { String($0[start..<start + glyphWidth]) }.joined()
            guard let c = reverse[pattern] else { return nil }
            if start + glyphWidth < w, grid.contains(where: { $0[(start + glyphWidth)..<min(w, start + pitch)].contains { $0 != " " } }) {
                return nil
            }
            text.append(c)
        }
        return text
    }
}
