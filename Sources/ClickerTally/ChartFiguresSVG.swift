/// Renders the instant-runoff and histogram figures (``ResultsChart/Figure/rounds(_:)``,
/// ``ResultsChart/Figure/histogram(_:)``). Every bar is a `rect` with `data-count`; every value read
/// from the results is also an attribute, so a script can check the chart against the results.
extension SVGCanvas {
    /// The last round as bars (the winner's or the tied options' marked ✓, with `data-winner`), each
    /// option keeping its colour, then a table of every round: one `g.round` per round with
    /// `data-round`, `data-active`, `data-exhausted` and `data-eliminated`, its cells `text.votes`
    /// with `data-option` and `data-count`.
    mutating func rounds(_ r: ResultsChart.Runoff) {
        func colour(_ option: String) -> String {
            let i = r.options.firstIndex(of: option) ?? 0
            return ResultsChart.palette[i % ResultsChart.palette.count]
        }
        guard let last = r.rounds.last else {
            text("No ballots.", x: margin, size: 34, fill: "#333333", attributes: " class=\"empty\"")
            y += 28
            return
        }
        y += 10
        text("Round \(last.number)", x: margin, size: 30, bold: true, fill: "#333333", attributes: " class=\"last-round\"")
        let marked = last.votes.map { b in
            var b = b
            if r.leaders.contains(b.option) { b.label += " ✓" }
            return b
        }
        bars(marked, colour: { _, b in colour(b.option) }, attributes: { b in
            " data-round=\"\(last.number)\"" + (r.leaders.contains(b.option) ? " data-winner=\"true\"" : "")
        })
        // The table of rounds.
        let size = 30, rowHeight = 44
        let optionWidth = min(100, max(60, (width - 2 * margin - 620) / max(1, r.options.count)))
        var columns: [(title: String, x: Int)] = [("Round", margin)]
        var x = margin + 150
        for o in r.options { columns.append((o, x)); x += optionWidth }
        for (title, w) in [("Exhausted", 200), ("Active", 150), ("Out", 120)] { columns.append((title, x)); x += w }
        y += 20
        for c in columns {
            text(c.title, x: c.x, size: size, bold: true, fill: "#333333", attributes: " class=\"heading\"")
        }
        for round in r.rounds {
            y += rowHeight
            body += "<g class=\"round\" data-round=\"\(round.number)\" data-active=\"\(round.active)\""
                + " data-exhausted=\"\(round.exhausted)\""
                + (round.eliminated.map { " data-eliminated=\"\(SVGText.escaped($0))\"" } ?? "") + ">\n"
            text(String(round.number), x: columns[0].x, size: size)
            for (i, o) in r.options.enumerated() {
                let x = columns[1 + i].x
                if let v = round.votes.first(where: { $0.option == o }) {
                    text(String(v.count), x: x, size: size, bold: round.number == last.number && r.leaders.contains(o),
                         attributes: " class=\"votes\" data-option=\"\(SVGText.escaped(o))\" data-count=\"\(v.count)\"")
                } else {
                    text("–", x: x, size: size, fill: "#777777", attributes: " class=\"out\"")
                }
            }
            let n = r.options.count
            text(String(round.exhausted), x: columns[1 + n].x, size: size, attributes: " class=\"exhausted\"")
            text(String(round.active), x: columns[2 + n].x, size: size, attributes: " class=\"active\"")
            if let e = round.eliminated { text(e, x: columns[3 + n].x, size: size, attributes: " class=\"eliminated\"") }
            body += "</g>\n"
        }
        y += 28
    }

    /// One column per bin (`rect.bar` with `data-bin`, its label, and `data-count`), the count above
    /// it and the label under it, then the statistics line (`text.statistics` with `data-median`,
    /// `data-lower-quartile`, `data-upper-quartile`, `data-minimum`, `data-maximum`).
    mutating func histogram(_ h: ResultsChart.Histogram) {
        guard !h.bins.isEmpty else {
            text("No ballots.", x: margin, size: 34, fill: "#333333", attributes: " class=\"empty\"")
            y += 28
            return
        }
        let plot = 480, countSize = 40
        let slot = (width - 2 * margin) / h.bins.count
        // Labels (`-12.5–-10.1`) shrink to fit their slot at about 0.6 em per character, 18 px at least.
        let longest = max(1, h.bins.map(\.label.count).max() ?? 1)
        let labelSize = max(18, min(36, slot * 10 / (6 * longest)))
        let column = slot * 8 / 10
        let most = max(1, h.bins.map(\.count).max() ?? 0)
        let top = y + countSize + 16
        let baseline = top + plot
        let colour = ResultsChart.palette[1]
        for (i, bin) in h.bins.enumerated() {
            let x = margin + i * slot + (slot - column) / 2
            let height = bin.count * plot / most
            body += "<rect class=\"bar\" x=\"\(x)\" y=\"\(baseline - height)\" width=\"\(column)\" height=\"\(height)\""
                + " fill=\"\(colour)\" stroke=\"#000000\" stroke-width=\"2\""
                + " data-bin=\"\(SVGText.escaped(bin.option))\" data-count=\"\(bin.count)\"/>\n"
            y = baseline - height - 12
            text(String(bin.count), x: x + column / 2, size: countSize, bold: true, anchor: "middle",
                 attributes: " class=\"count\" data-bin=\"\(SVGText.escaped(bin.option))\"")
            y = baseline + labelSize + 12
            text(SVGText.fitted(bin.label, limit: max(3, slot * 10 / (labelSize * 6))), x: x + column / 2, size: labelSize,
                 anchor: "middle", attributes: " class=\"label\"")
        }
        body += "<line class=\"axis\" x1=\"\(margin)\" y1=\"\(baseline)\" x2=\"\(width - margin)\" y2=\"\(baseline)\""
            + " stroke=\"#000000\" stroke-width=\"3\"/>\n"
        y = baseline + labelSize + 12
        if let median = h.median, let q1 = h.lowerQuartile, let q3 = h.upperQuartile, let lo = h.minimum, let hi = h.maximum {
            y += 60
            let attributes = [("median", median), ("lower-quartile", q1), ("upper-quartile", q3), ("minimum", lo), ("maximum", hi)]
                .map { " data-\($0.0)=\"\(SVGText.escaped($0.1))\"" }.joined()
            text("Median \(median) · quartiles \(q1) – \(q3) · range \(lo) – \(hi)", x: margin, size: 36, bold: true,
                 attributes: " class=\"statistics\"" + attributes)
        }
        y += 28
    }
}
