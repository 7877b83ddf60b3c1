/// Renders the view model into a grid of cells. Pure: no I/O, no clock.
public enum FrameRenderer {
    /// Smallest size for the full layout; smaller terminals get a compact layout.
    public static let minimumWidth = 80
    public static let minimumHeight = 24

    static let answerColors: [CellColor] = [.cyan, .magenta, .yellow, .green, .blue, .red]

    /// Renders one frame of `width` × `height` cells.
    public static func render(_ model: TallyViewModel, state: ViewState, width: Int, height: Int) -> Grid {
        var g = Grid(width: width, height: height)
        if width >= minimumWidth && height >= minimumHeight {
            full(model, state, &g)
        } else {
            compact(model, state, &g)
        }
        return g
    }

    // MARK: Full layout

    static func full(_ m: TallyViewModel, _ state: ViewState, _ g: inout Grid) {
        let W = g.width, H = g.height

        // Header bar.
        let header = CellStyle(bold: true, reverse: true)
        g.fill(Cell(" ", header), row: 0, column: 0, count: W)
        let right = m.anonymous ? "anonymous poll " : "roster poll "
        let titleEnd = g.put(" CLICKER  ", row: 0, column: 0, style: header)
        // The poll's title, then the open question's, where the whole width can show it.
        let heading = m.title + (m.question?.title.map { "  ·  Q\(m.question?.number ?? 0): " + $0 } ?? "")
        g.put(heading, row: 0, column: titleEnd, style: CellStyle(reverse: true), maxWidth: max(0, W - titleEnd - right.count - 1))
        g.put(right, row: 0, column: W - right.count, style: CellStyle(reverse: true))

        // Join code, large, with the question panel to its right.
        let code = m.joinCode
        let layout = JoinCodeLayout.make(code: code, width: W, height: H)
        let panelColumn = layout.panelColumn
        var panelRow = layout.panelRow
        let panelWidth = W - panelColumn - 1
        if layout.isLarge {
            for line in layout.lines {
                for (i, text) in BigFont.rows(line.text, gap: layout.gap).enumerated() {
                    g.put(text, row: line.row + i, column: line.column, style: CellStyle(bold: true))
                }
            }
            g.put("JOIN CODE", row: panelRow, column: panelColumn, style: CellStyle(dim: true), maxWidth: panelWidth)
            g.put(code, row: panelRow + 1, column: panelColumn, style: CellStyle(bold: true), maxWidth: panelWidth)
            panelRow += 2
        } else {
            let end = g.put("JOIN CODE  ", row: panelRow, column: panelColumn, style: CellStyle(dim: true))
            g.put(code, row: panelRow, column: end, style: CellStyle(bold: true), maxWidth: W - end - 2)
            panelRow += 1
        }
        if let q = m.question {
            g.put("Question \(q.number)", row: panelRow, column: panelColumn, style: CellStyle(bold: true), maxWidth: panelWidth)
            if q.isOpen {
                g.put("OPEN", row: panelRow + 1, column: panelColumn, style: CellStyle(foreground: .green, bold: true, reverse: true))
                g.put("open for " + Format.clock(q.elapsed), row: panelRow + 2, column: panelColumn, maxWidth: panelWidth)
            } else {
                g.put("CLOSED", row: panelRow + 1, column: panelColumn, style: CellStyle(foreground: .yellow, bold: true, reverse: true))
                g.put("was open " + Format.clock(q.elapsed), row: panelRow + 2, column: panelColumn, maxWidth: panelWidth)
            }
        } else {
            g.put("No question yet", row: panelRow, column: panelColumn, style: CellStyle(bold: true), maxWidth: panelWidth)
            g.put("press o to open one", row: panelRow + 1, column: panelColumn, style: CellStyle(dim: true), maxWidth: panelWidth)
        }

        // Bottom block, from the last row up. The status line wraps (it is never cut): the rows
        // above it move up by the lines it takes beyond one.
        let statusLines = state.confirmingQuit ? [] : (m.status ?? m.roomNote).map {
            words($0, width: W - 4, maxLines: statusMaxLines)
        } ?? []
        let extra = max(0, statusLines.count - 1)
        let legendRow = H - 1, promptRow = H - 2 - extra, alertRow = promptRow - 1, radioRow = promptRow - 2
        var statsRow = radioRow - 2
        var breakdown: [String] = []
        if state.showRejections {
            breakdown = wrap(m.rejections.isEmpty ? ["none"] : m.rejections.map { r in
                                 "\(r.reason) \(r.count)" + (r.devices.map { " (\(Format.devices($0)))" } ?? "")
                             },
                             prefix: "Rejected by reason: ", width: W - 4, maxLines: 2)
            statsRow -= breakdown.count
        }
        legend(&g, row: legendRow, hidden: m.countsHidden)
        if state.confirmingQuit {
            let n = m.question.map { "Question \($0.number) is open. " } ?? ""
            let text = " \(n)Quit anyway? y = quit, any other key = stay "
            g.put(text, row: promptRow, column: 1, style: CellStyle(foreground: .yellow, bold: true, reverse: true), maxWidth: W - 2)
        } else {
            for (i, line) in statusLines.enumerated() {
                g.put(line, row: promptRow + i, column: 2, style: CellStyle(dim: true), maxWidth: W - 4)
            }
        }
        if let alert = m.alert {
            let style = CellStyle(foreground: .red, bold: true, reverse: true)
            g.fill(Cell(" ", style), row: alertRow, column: 0, count: W)
            g.put(" ALERT: " + alert, row: alertRow, column: 0, style: style, maxWidth: W)
        }
        radio(&g, m.radio, row: radioRow)
        if let url = m.projectorURL {
            // The row between the stats (and the `r` breakdown) and the radio is always free.
            let end = g.put("Projector page  ", row: radioRow - 1, column: 2, style: CellStyle(dim: true))
            g.put(url, row: radioRow - 1, column: end, style: CellStyle(bold: true), maxWidth: W - end - 2)
        }
        for (i, line) in breakdown.enumerated() {
            g.put(line, row: statsRow + 1 + i, column: 2, maxWidth: W - 4)
        }
        stats(&g, m, row: statsRow)

        // Bars fill the space between the code and the stats; without a blank row around them
        // when that is the only way to show every answer.
        var top = layout.bottom + 2, bottom = statsRow - 2
        let details = m.countsHidden ? [] : m.details
        if bottom - top + 1 < m.answers.count + (details.isEmpty ? 0 : details.count + 1) {
            top -= 1
            bottom += 1
        }
        // The kind's lines (rounds, quartiles, combinations) under the bars, the latest kept when
        // they do not all fit; the bars keep at least half of the space.
        let space = bottom - top + 1
        let barRows = min(m.answers.count, (space + 1) / 2)
        let detailRows = min(details.count, max(0, space - barRows - 1))
        for (i, line) in details.suffix(detailRows).enumerated() {
            g.put(line, row: bottom - detailRows + 1 + i, column: 2, maxWidth: W - 4)
        }
        if detailRows > 0 { bottom -= detailRows + 1 }
        if let caption = m.barsCaption, !m.countsHidden, top - 1 > layout.bottom {
            g.put(caption, row: top - 1, column: 2, style: CellStyle(dim: true), maxWidth: W - 4)
        }
        bars(&g, m, hidden: m.countsHidden, top: top, bottom: bottom)
    }

    static func legend(_ g: inout Grid, row: Int, hidden: Bool) {
        var c = 1
        for (key, label) in ViewState.legend {
            let shown = key == "h" ? (hidden ? "show votes" : "hide votes") : label
            if c + key.count + shown.count + 3 > g.width { break }
            c = g.put(" \(key) ", row: row, column: c, style: CellStyle(bold: true, reverse: true))
            c = g.put(" " + shown + " ", row: row, column: c)
        }
    }

    static func stats(_ g: inout Grid, _ m: TallyViewModel, row: Int) {
        var c = 2
        func item(_ label: String, _ value: String, _ valueStyle: CellStyle = CellStyle(bold: true)) {
            c = g.put(label + " ", row: row, column: c, style: CellStyle(dim: true))
            c = g.put(value, row: row, column: c, style: valueStyle)
            c += 3
        }
        item("Voters", String(m.voters))
        if let n = m.notYetShown, n > 0 {
            // Counts move in steps (PublishRule): a vote counted is not yet on the bars.
            c = g.put("(+\(n) not yet shown)", row: row, column: c - 2, style: CellStyle(foreground: .yellow)) + 3
        }
        item("Votes/s", Format.oneDecimal(m.votesPerSecond))
        item("Changes", String(m.changes))
        // Devices where they are known (one device sends hundreds of packets); `r` has the packets.
        item("Rejected", m.rejectedDevices.map(Format.devices) ?? String(m.rejectedTotal),
             m.rejectedTotal > 0 ? CellStyle(foreground: .yellow, bold: true) : CellStyle(bold: true))
    }

    static func radio(_ g: inout Grid, _ r: TallyViewModel.Radio, row: Int) {
        var c = g.put("Radio  ", row: row, column: 2, style: CellStyle(dim: true))
        guard let adapter = r.adapter else {
            c = g.put("no adapter", row: row, column: c, style: CellStyle(foreground: .red, bold: true))
            if let e = r.lastError {
                g.put(" · error: " + e, row: row, column: c, style: CellStyle(foreground: .red), maxWidth: g.width - c - 1)
            }
            return
        }
        c = g.put(adapter, row: row, column: c, style: CellStyle(bold: true), maxWidth: 16)
        c = g.put(" · ", row: row, column: c)
        c = g.put(r.scanning ? "scanning" : "not scanning", row: row, column: c,
                  style: r.scanning ? CellStyle(foreground: .green) : CellStyle(foreground: .red, bold: true))
        if let d = r.sinceDiscoveryRestart {
            c = g.put(" · discovery restarted \(Format.age(d)) ago", row: row, column: c)
        }
        if let b = r.beacon {
            c = g.put(" · beacon \(b.rawValue)", row: row, column: c,
                      style: b != .extended ? CellStyle(foreground: .yellow) : .plain)
        }
        c = g.put(" · \(r.errors) error\(r.errors == 1 ? "" : "s")", row: row, column: c,
                  style: r.errors > 0 ? CellStyle(foreground: .yellow) : .plain)
        if let e = r.lastError {
            g.put(": " + e, row: row, column: c, style: CellStyle(foreground: .red), maxWidth: g.width - c - 1)
        }
    }

    static let eighths: [Unicode.Scalar] = ["▏", "▎", "▍", "▌", "▋", "▊", "▉"]

    static func bars(_ g: inout Grid, _ m: TallyViewModel, hidden: Bool, top: Int, bottom: Int) {
        let n = m.answers.count
        let available = bottom - top + 1
        guard n > 0, available > 0 else { return }
        let step = available >= 2 * n - 1 ? 2 : 1
        var shown = min(n, (available + step - 1) / step)
        // When not every answer fits, the last slot says how many more, on a row of its own.
        let more = shown < n
        if more { shown -= 1 }
        let total = m.answers.reduce(0) { $0 + max(0, $1.count) }
        // Option texts get a wider column than letters and bin labels.
        let widest = m.answers.contains { $0.text != nil } ? 24 : 12
        let labelWidth = min(widest, max(1, m.answers.map(\.shown.count).max() ?? 1))
        let barStart = 2 + labelWidth + 1
        let countColumn = g.width - 16
        let barWidth = max(1, countColumn - 1 - barStart)
        for i in 0..<shown {
            let a = m.answers[i]
            let row = top + i * step
            let end = g.put(a.label, row: row, column: 2, style: CellStyle(bold: true), maxWidth: labelWidth)
            if let text = a.text { g.put(" " + text, row: row, column: end, maxWidth: max(0, 2 + labelWidth - end)) }
            if hidden { continue }
            let color = answerColors[i % answerColors.count]
            let units = total > 0 ? Int((Double(max(0, a.count)) / Double(total) * Double(barWidth * 8)).rounded()) : 0
            g.fill(Cell("█", CellStyle(foreground: color)), row: row, column: barStart, count: units / 8)
            if units % 8 > 0 {
                g[row, barStart + units / 8] = Cell(eighths[units % 8 - 1], CellStyle(foreground: color))
            }
            if units == 0 {
                g[row, barStart] = Cell("·", CellStyle(dim: true))
            }
            let count = String(a.count)
            let pct = Format.percent(max(0, a.count), of: total)
            g.put(count, row: row, column: countColumn + 6 - count.count, style: CellStyle(bold: true))
            g.put(pct, row: row, column: g.width - 2 - pct.count)
        }
        if hidden {
            let text = "votes hidden"
            let mid = top + (max(0, shown - 1) * step) / 2
            g.put(text, row: mid, column: barStart + max(0, (barWidth - text.count) / 2), style: CellStyle(dim: true, reverse: true))
        }
        if more {
            g.put("+\(n - shown) more (a larger terminal shows them)", row: top + shown * step, column: 2,
                  style: CellStyle(dim: true), maxWidth: g.width - 4)
        }
    }

    /// The most rows the status line takes.
    static let statusMaxLines = 4

    /// `text` in lines of at most `width` characters, broken between words (a word longer than a
    /// line is broken inside); past `maxLines` the last line ends with `…`.
    static func words(_ text: String, width: Int, maxLines: Int) -> [String] {
        guard width > 1 else { return [] }
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            var w = Substring(word)
            while !w.isEmpty {
                let gap = line.isEmpty ? 0 : 1
                if line.count + gap + w.count <= width {
                    if gap == 1 { line += " " }
                    line += w
                    w = ""
                } else if line.isEmpty {
                    line = String(w.prefix(width))
                    w = w.dropFirst(width)
                } else {
                    lines.append(line)
                    line = ""
                }
                if lines.count == maxLines { return Self.ellipsized(lines, width: width) }
            }
        }
        if !line.isEmpty { lines.append(line) }
        if lines.count > maxLines { return Self.ellipsized(Array(lines.prefix(maxLines)), width: width) }
        return lines
    }

    static func ellipsized(_ lines: [String], width: Int) -> [String] {
        guard let last = lines.last else { return lines }
        return lines.dropLast() + [String(last.prefix(width - 1)) + "…"]
    }

    /// Joins `items` with " · " after `prefix`, wrapping at `width`, at most `maxLines` lines.
    static func wrap(_ items: [String], prefix: String, width: Int, maxLines: Int) -> [String] {
        var lines: [String] = []
        var line = prefix
        var first = true
        for item in items {
            let piece = first ? item : " · " + item
            if line.count + piece.count > width, !first {
                lines.append(line)
                if lines.count == maxLines { return lines }
                line = String(repeating: " ", count: prefix.count) + item
            } else {
                line += piece
            }
            first = false
        }
        lines.append(line)
        return Array(lines.prefix(maxLines))
    }

    // MARK: Join code placement

    /// Where the full layout draws the join code: one large line when it fits next to the question
    /// panel, else two large lines split after the first '-' (vote ID, then secret), else small text.
    public struct JoinCodeLayout: Sendable, Equatable {
        /// One line of large glyphs.
        public struct Line: Sendable, Equatable {
            /// The characters drawn on this line.
            public var text: String
            /// Top row and left column of the first glyph.
            public var row: Int
            public var column: Int
        }

        /// Large lines, empty when the code is shown as small text.
        public var lines: [Line]
        /// Columns between large glyphs.
        public var gap: Int
        /// Where the panel (label, code as text, question state) starts.
        public var panelColumn: Int
        public var panelRow: Int
        /// Last row used by the code or the panel.
        public var bottom: Int

        /// Whether the code is drawn with ``BigFont``.
        public var isLarge: Bool { !lines.isEmpty }

        /// Narrowest panel kept to the right of the first large line.
        public static let panelWidth = 16

        /// The placement for `code` in a `width` × `height` full layout.
        public static func make(code: String, width: Int, height: Int) -> JoinCodeLayout {
            let small = JoinCodeLayout(lines: [], gap: BigFont.gap, panelColumn: 2, panelRow: 2, bottom: 6)
            guard !code.isEmpty, BigFont.canDraw(code) else { return small }
            let chars = Array(code)
            for gap in [BigFont.gap, 1] {
                let w = BigFont.width(of: code, gap: gap)
                if 2 + w + 4 + panelWidth <= width {
                    return JoinCodeLayout(lines: [Line(text: code, row: 2, column: 2)], gap: gap,
                                          panelColumn: 2 + w + 4, panelRow: 2, bottom: 2 + BigFont.height - 1)
                }
            }
            guard chars.count > 1 else { return small }
            let cut = (chars.firstIndex(of: "-").map { $0 + 1 }) ?? (chars.count + 1) / 2
            let first = String(chars[..<min(cut, chars.count - 1)]), second = String(chars[min(cut, chars.count - 1)...])
            // On a 24-row screen the code starts right under the header to leave the bars room.
            let top = height >= minimumHeight + 2 ? 2 : 1
            for gap in [BigFont.gap, 1] {
                let w1 = BigFont.width(of: first, gap: gap), w2 = BigFont.width(of: second, gap: gap)
                if 2 + w2 + 2 <= width, 2 + w1 + 4 + panelWidth <= width {
                    let secondRow = top + BigFont.height + 1
                    return JoinCodeLayout(lines: [Line(text: first, row: top, column: 2), Line(text: second, row: secondRow, column: 2)],
                                          gap: gap, panelColumn: 2 + w1 + 4, panelRow: top,
                                          bottom: secondRow + BigFont.height - 1)
                }
            }
            return small
        }
    }

    // MARK: Compact layout (terminal smaller than 80×24)

    static func compact(_ m: TallyViewModel, _ state: ViewState, _ g: inout Grid) {
        var lines: [(String, CellStyle)] = []
        lines.append(("CLICKER " + m.title, CellStyle(bold: true, reverse: true)))
        lines.append(("Join code " + m.joinCode, CellStyle(bold: true)))
        if let q = m.question {
            lines.append(("Q\(q.number) " + (q.isOpen ? "OPEN " : "CLOSED ") + Format.clock(q.elapsed), CellStyle(bold: true)))
            if let t = q.title { lines.append((t, .plain)) }
        }
        lines.append(("Voters \(m.voters)  \(Format.oneDecimal(m.votesPerSecond))/s  rej \(m.rejectedDevices ?? m.rejectedTotal)", .plain))
        if m.countsHidden {
            lines.append(("votes hidden", CellStyle(dim: true)))
        } else {
            let total = m.answers.reduce(0) { $0 + max(0, $1.count) }
            for a in m.answers {
                lines.append(("\(a.label) \(a.count) \(Format.percent(max(0, a.count), of: total))", .plain))
            }
            for d in m.details { lines.append((d, .plain)) }
        }
        if let alert = m.alert { lines.append(("ALERT " + alert, CellStyle(foreground: .red, bold: true, reverse: true))) }
        if m.radio.adapter == nil || m.radio.lastError != nil {
            lines.append(("radio: " + (m.radio.lastError ?? "no adapter"), CellStyle(foreground: .red)))
        }
        let footer: (String, CellStyle) = state.confirmingQuit
            ? ("Quit? y/N", CellStyle(foreground: .yellow, bold: true, reverse: true))
            : ("need \(minimumWidth)x\(minimumHeight)", CellStyle(dim: true))
        let room = max(0, g.height - 1)
        for (i, (text, style)) in lines.prefix(room).enumerated() {
            g.put(text, row: i, column: 0, style: style)
        }
        if g.height > 0 { g.put(footer.0, row: g.height - 1, column: 0, style: footer.1) }
    }
}
