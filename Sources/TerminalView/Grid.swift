/// A colour of the 8-colour ANSI palette.
public enum CellColor: UInt8, Sendable {
    case none = 0, red, green, yellow, blue, magenta, cyan, white
}

/// Display attributes of a cell.
public struct CellStyle: Sendable, Hashable {
    public var foreground: CellColor
    public var bold: Bool
    public var dim: Bool
    public var reverse: Bool

    public init(foreground: CellColor = .none, bold: Bool = false, dim: Bool = false, reverse: Bool = false) {
        self.foreground = foreground
        self.bold = bold
        self.dim = dim
        self.reverse = reverse
    }

    public static let plain = CellStyle()
}

/// One character cell: a single-width scalar and its style.
public struct Cell: Sendable, Hashable {
    public var scalar: Unicode.Scalar
    public var style: CellStyle

    public init(_ scalar: Unicode.Scalar, _ style: CellStyle = .plain) {
        self.scalar = scalar
        self.style = style
    }

    public static let blank = Cell(" ")
}

/// A terminal-sized grid of cells, row-major.
public struct Grid: Sendable, Equatable {
    public let width: Int
    public let height: Int
    public private(set) var cells: [Cell]

    public init(width: Int, height: Int) {
        self.width = max(0, width)
        self.height = max(0, height)
        cells = Array(repeating: .blank, count: self.width * self.height)
    }

    public subscript(row: Int, column: Int) -> Cell {
        get { cells[row * width + column] }
        set {
            guard row >= 0, row < height, column >= 0, column < width else { return }
            cells[row * width + column] = newValue
        }
    }

    /// Writes `text` at (row, column), clipped to the grid (and to `maxWidth` if given). Scalars that are
    /// not single-width printable are replaced (control → `?`, combining marks dropped, wide → `?`).
    /// Returns the column after the last written cell.
    @discardableResult
    public mutating func put(_ text: String, row: Int, column: Int, style: CellStyle = .plain, maxWidth: Int? = nil) -> Int {
        guard row >= 0, row < height else { return column }
        var c = column
        let limit = min(width, maxWidth.map { column + $0 } ?? width)
        for s in text.unicodeScalars {
            guard let shown = Grid.displayable(s) else { continue }
            if c >= limit { break }
            if c >= 0 { cells[row * width + c] = Cell(shown, style) }
            c += 1
        }
        return c
    }

    /// Fills `count` cells of a row with one cell value.
    public mutating func fill(_ cell: Cell, row: Int, column: Int, count: Int) {
        guard row >= 0, row < height, count > 0 else { return }
        let start = max(0, column), end = min(width, column + count)
        guard start < end else { return }
        for c in start..<end { cells[row * width + c] = cell }
    }

    /// The single-width scalar shown for `s`, or nil if it takes no cell.
    static func displayable(_ s: Unicode.Scalar) -> Unicode.Scalar? {
        let v = s.value
        if v < 0x20 || (0x7F..<0xA0).contains(v) { return "?" }
        switch s.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .spacingMark, .format: return nil
        default: break
        }
        // East Asian wide and emoji ranges take two cells: shown as one '?' to keep columns aligned.
        if (0x1100...0x115F).contains(v) || (0x2E80...0xA4CF).contains(v) || (0xAC00...0xD7A3).contains(v)
            || (0xF900...0xFAFF).contains(v) || (0xFE30...0xFE4F).contains(v) || (0xFF00...0xFF60).contains(v)
            || (0xFFE0...0xFFE6).contains(v) || v >= 0x1F000 {
            return "?"
        }
        return s
    }

    /// The grid as text, one line per row, trailing spaces trimmed (for snapshots and logs).
    public var text: String {
        var lines: [String] = []
        lines.reserveCapacity(height)
        for r in 0..<height {
            var line = String.UnicodeScalarView()
            for c in 0..<width { line.append(cells[r * width + c].scalar) }
            var s = String(line)
            while s.last == " " { s.removeLast() }
            lines.append(s)
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
