/// Renders a ``ResultsChart`` as a standalone SVG document: large type for the back of a room,
/// the Okabe–Ito palette (told apart with any colour vision, each bar also outlined in black), the
/// count as a number on every bar. Every bar is a `rect` carrying `data-option` and `data-count`.
/// All text from the question is XML-escaped (``SVGText/escaped(_:)``).
extension ResultsChart {
    /// The Okabe–Ito palette (Okabe & Ito, "Color Universal Design", 2008), black last.
    public static let palette = ["#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000"]

    /// The document, UTF-8 text with an XML declaration.
    public func svg() -> String {
        var out = SVGCanvas(width: 1600)
        out.header(question: question, title: title, voters: voters, note: note)
        switch figure {
        case .bars(let bars): out.bars(bars)
        case .rounds(let runoff): out.rounds(runoff)
        case .histogram(let histogram): out.histogram(histogram)
        }
        return out.finish()
    }
}

/// Text made safe for XML character data and attribute values.
public enum SVGText {
    /// `&`, `<`, `>`, `"` and `'` as entities; characters XML 1.0 forbids or that reorder text
    /// (C0 and C1 controls, bidirectional overrides, U+FFFE/U+FFFF) as U+FFFD; tab, CR and LF as a
    /// space (a chart's text is one line).
    public static func escaped(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out += " "
            default:
                switch c.value {
                case 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x061C, 0x202A...0x202E, 0x2066...0x2069, 0xFFFE, 0xFFFF:
                    out += "\u{FFFD}"
                default:
                    out.unicodeScalars.append(c)
                }
            }
        }
        return out
    }

    /// At most `limit` characters, the cut marked with `…`.
    public static func fitted(_ s: String, limit: Int) -> String {
        s.count <= limit ? s : String(s.prefix(max(1, limit - 1))) + "…"
    }
}

/// Lays out the document top to bottom.
struct SVGCanvas {
    let width: Int
    let margin = 48
    var y = 0
    var body = ""
    /// The document's `title` element (what screen readers and file browsers show).
    var name = ""

    static let font = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif"

    init(width: Int) { self.width = width }

    mutating func text(_ s: String, x: Int, size: Int, bold: Bool = false, fill: String = "#000000",
                       anchor: String? = nil, attributes: String = "") {
        body += "<text x=\"\(x)\" y=\"\(y)\" font-size=\"\(size)\"" + (bold ? " font-weight=\"bold\"" : "")
            + " fill=\"\(fill)\"" + (anchor.map { " text-anchor=\"\($0)\"" } ?? "") + attributes + ">"
            + SVGText.escaped(s) + "</text>\n"
    }

    mutating func header(question: UInt8, title: String?, voters: Int, note: String?) {
        y = margin + 52
        name = "Question \(question)" + (title.map { $0.isEmpty ? "" : ": " + $0 } ?? "")
        if let title, !title.isEmpty {
            text("Question \(question)", x: margin, size: 34, fill: "#333333", attributes: " class=\"question\"")
            y += 64
            text(SVGText.fitted(title, limit: 56), x: margin, size: 52, bold: true, attributes: " class=\"title\"")
        } else {
            text("Question \(question)", x: margin, size: 52, bold: true, attributes: " class=\"title\"")
        }
        y += 56
        text(voters == 1 ? "1 voter" : "\(voters) voters", x: margin, size: 34, fill: "#333333",
             attributes: " class=\"voters\" data-voters=\"\(voters)\"")
        if let note {
            y += 44
            text(note, x: margin, size: 28, fill: "#333333", attributes: " class=\"note\"")
        }
        y += 40
    }

    /// One horizontal bar per entry. `colour`: the bar's colour by its position (the palette in order
    /// by default); `attributes`: more attributes for its `rect`.
    mutating func bars(_ bars: [ResultsChart.Bar], colour: (Int, ResultsChart.Bar) -> String = { i, _ in
        ResultsChart.palette[i % ResultsChart.palette.count]
    }, attributes: (ResultsChart.Bar) -> String = { _ in "" }) {
        let labelSize = 48, textSize = 34, barHeight = 64
        // The label column fits the longest label (`False`, `-12.5`) at about 0.62 em per character.
        let labelWidth = max(2, bars.map(\.label.count).max() ?? 1) * labelSize * 62 / 100 + 32
        let barX = margin + labelWidth
        let countRoom = 260
        let span = width - barX - margin - countRoom
        let most = max(1, bars.map(\.count).max() ?? 0)
        let total = bars.reduce(0) { $0 + $1.count }
        for (i, bar) in bars.enumerated() {
            if let t = bar.text, !t.isEmpty {
                y += textSize + 8
                text(SVGText.fitted(t, limit: 64), x: barX, size: textSize, attributes: " class=\"option-text\"")
            }
            let top = y + 12
            let length = bar.count * span / most
            body += "<rect class=\"bar\" x=\"\(barX)\" y=\"\(top)\" width=\"\(length)\" height=\"\(barHeight)\""
                + " fill=\"\(colour(i, bar))\" stroke=\"#000000\" stroke-width=\"2\""
                + " data-option=\"\(SVGText.escaped(bar.option))\" data-count=\"\(bar.count)\"" + attributes(bar) + "/>\n"
            y = top + barHeight / 2 + labelSize * 36 / 100
            text(bar.label, x: margin, size: labelSize, bold: true, attributes: " class=\"label\"")
            let countX = barX + length + 20
            text(String(bar.count), x: countX, size: labelSize, bold: true,
                 attributes: " class=\"count\" data-option=\"\(SVGText.escaped(bar.option))\"")
            if total > 0 {
                let share = (bar.count * 100 + total / 2) / total
                text("\(share)%", x: countX + (String(bar.count).count + 1) * labelSize * 62 / 100, size: textSize,
                     fill: "#333333", attributes: " class=\"share\"")
            }
            y = top + barHeight + 28
        }
    }

    func finish() -> String {
        let height = y + margin
        return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            + "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"\(width)\" height=\"\(height)\""
            + " viewBox=\"0 0 \(width) \(height)\" font-family=\"\(Self.font)\">\n"
            + "<title>" + SVGText.escaped(name) + "</title>\n"
            + "<rect class=\"background\" x=\"0\" y=\"0\" width=\"\(width)\" height=\"\(height)\" fill=\"#ffffff\"/>\n"
            + body + "</svg>\n"
    }
}
