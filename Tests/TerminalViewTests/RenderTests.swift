import struct ClickerTransport.SplitMix64
import ClickerWire
import TerminalView
import XCTest

final class RenderTests: XCTestCase {
    func rowText(_ g: Grid, _ r: Int) -> String {
        String(String.UnicodeScalarView((0..<g.width).map { g[r, $0].scalar }))
    }

    func rows(containing s: String, in g: Grid) -> [Int] {
        (0..<g.height).filter { rowText(g, $0).contains(s) }
    }

    /// Bar length in eighths of a cell for the row of answer `label`.
    func barUnits(_ g: Grid, row: Int) -> Int {
        var units = 0
        let partial: [Unicode.Scalar: Int] = ["▏": 1, "▎": 2, "▍": 3, "▌": 4, "▋": 5, "▊": 6, "▉": 7, "█": 8]
        for c in 0..<g.width { units += partial[g[row, c].scalar] ?? 0 }
        return units
    }

    func testBarsAreProportionalAndPercentagesCorrect() {
        var m = Fixtures.openWithVotes
        m.answers = [.init(label: "A", count: 30), .init(label: "B", count: 10), .init(label: "C", count: 0), .init(label: "D", count: 60)]
        let g = FrameRenderer.render(m, state: ViewState(), width: 100, height: 30)
        let rowsByLabel = ["A", "B", "C", "D"].map { label in
            (0..<g.height).first { r in g[r, 2].scalar == label.unicodeScalars.first! && g[r, 3].scalar == " " && r > 7 }
        }
        let a = barUnits(g, row: rowsByLabel[0]!), b = barUnits(g, row: rowsByLabel[1]!)
        let c = barUnits(g, row: rowsByLabel[2]!), d = barUnits(g, row: rowsByLabel[3]!)
        XCTAssertEqual(c, 0)
        XCTAssertEqual(Double(a) / Double(b), 3, accuracy: 0.05)
        XCTAssertEqual(Double(d) / Double(b), 6, accuracy: 0.05)
        XCTAssertTrue(rowText(g, rowsByLabel[0]!).hasSuffix("30   30.0%  "))
        XCTAssertTrue(rowText(g, rowsByLabel[3]!).hasSuffix("60   60.0%  "))
        XCTAssertTrue(rowText(g, rowsByLabel[2]!).contains(" 0.0%"))
    }

    func testHiddenBarsShowNoCountsButVoters() {
        let m = Fixtures.openWithVotes
        let shown = FrameRenderer.render(m, state: ViewState(), width: 80, height: 24)
        var withheld = m
        withheld.countsHidden = true
        let hidden = FrameRenderer.render(withheld, state: ViewState(), width: 80, height: 24)
        XCTAssertFalse(rows(containing: "35.0%", in: shown).isEmpty)
        let codeBottom = FrameRenderer.JoinCodeLayout.make(code: m.joinCode, width: 80, height: 24).bottom
        for r in codeBottom + 1..<hidden.height {
            let t = rowText(hidden, r)
            XCTAssertFalse(t.contains("%"), "row \(r) shows a percentage while hidden: \(t)")
            XCTAssertFalse(t.contains("█ ") || t.contains("▏"), "row \(r) shows a bar while hidden")
            XCTAssertFalse(t.contains(" 42 "), "row \(r) shows a count while hidden")
        }
        XCTAssertEqual(rows(containing: "votes hidden", in: hidden).count, 1)
        XCTAssertFalse(rows(containing: "Voters 120", in: hidden).isEmpty)
        XCTAssertFalse(rows(containing: "show votes", in: hidden).isEmpty, "legend offers to reveal")
    }

    /// Reads the large join code back from the grid, line by line, using only the glyph patterns.
    func readBigCode(_ g: Grid, _ layout: FrameRenderer.JoinCodeLayout) -> String? {
        var text = ""
        for line in layout.lines {
            let w = BigFont.width(of: line.text, gap: layout.gap)
            let rows = (0..<BigFont.height).map { i in
                String(String.UnicodeScalarView((line.column..<line.column + w).map { g[line.row + i, $0].scalar }))
            }
            // The cells on either side are blank, so the glyphs read are all there is.
            for i in 0..<BigFont.height {
                XCTAssertEqual(g[line.row + i, line.column - 1].scalar, " ")
                if line.column + w < g.width { XCTAssertEqual(g[line.row + i, line.column + w].scalar, " ") }
            }
            guard let part = BigFont.read(rows, gap: layout.gap) else { return nil }
            text += part
        }
        return text
    }

    /// Codes that together use every character a join code can contain.
    static var everyCodeCharacter: [String] {
        let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
        var codes: [String] = []
        for start in stride(from: 0, to: alphabet.count, by: 10) {
            let s = (0..<10).map { alphabet[(start + $0) % alphabet.count] }
            codes.append("\(1000 + start * 271)-" + String(s[0..<5]) + "-" + String(s[5..<10]))
        }
        codes.append("65535-00000-ZZZZZ")
        return codes
    }

    func testEveryJoinCodeCharacterIsDrawnLargeAndReadsBack() {
        let codes = Self.everyCodeCharacter
        XCTAssertEqual(Set(codes.joined().filter { $0 != "-" }), Set("0123456789ABCDEFGHJKMNPQRSTVWXYZ"))
        for code in codes {
            XCTAssertEqual((try? JoinCode(parsing: code))?.description, code, "fixture \(code) is not a join code")
            for (w, h) in [(80, 24), (100, 30), (120, 40), (200, 60)] {
                let layout = FrameRenderer.JoinCodeLayout.make(code: code, width: w, height: h)
                XCTAssertTrue(layout.isLarge, "\(code) fell back to small text at \(w)x\(h)")
                // A four-digit vote ID (what the tally picks) fits one line from 120 columns on.
                XCTAssertEqual(layout.lines.count, w >= 200 || (w >= 120 && code.count == 16) ? 1 : 2, "\(code) at \(w)x\(h)")
                var m = Fixtures.openWithVotes
                m.joinCode = code
                let g = FrameRenderer.render(m, state: ViewState(), width: w, height: h)
                XCTAssertEqual(readBigCode(g, layout), code, "\(w)x\(h)")
                // Every glyph lies inside the screen, above the bars, left of the panel.
                for line in layout.lines {
                    XCTAssertLessThanOrEqual(line.column + BigFont.width(of: line.text, gap: layout.gap), w - 2)
                    XCTAssertLessThan(line.row + BigFont.height - 1, rows(containing: "Voters", in: g).first ?? 0)
                }
                // The code is also printed as plain text in the panel.
                XCTAssertFalse(rows(containing: code, in: g).isEmpty, "\(code) as text at \(w)x\(h)")
            }
        }
    }

    func testRandomJoinCodesReadBack() {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<200 {
            let code = JoinCode.random(using: &rng).description
            for (w, h) in [(80, 24), (100, 30)] {
                var m = Fixtures.openWithVotes
                m.joinCode = code
                let layout = FrameRenderer.JoinCodeLayout.make(code: code, width: w, height: h)
                let g = FrameRenderer.render(m, state: ViewState(), width: w, height: h)
                XCTAssertEqual(readBigCode(g, layout), code, "\(w)x\(h)")
            }
        }
    }

    func testTwoLineCodeLeavesRoomForEverythingAt80x24() {
        var m = Fixtures.openWithVotes
        m.joinCode = "4821-K7QXM-3PF9A"
        for state in [ViewState(), ViewState(showRejections: true)] {
            let g = FrameRenderer.render(m, state: state, width: 80, height: 24)
            let layout = FrameRenderer.JoinCodeLayout.make(code: m.joinCode, width: 80, height: 24)
            XCTAssertEqual(layout.lines.map(\.text), ["4821-", "K7QXM-3PF9A"])
            XCTAssertEqual(readBigCode(g, layout), m.joinCode)
            for label in ["A", "B", "C", "D"] {
                XCTAssertTrue((layout.bottom + 1..<g.height).contains { r in rowText(g, r).hasPrefix("  \(label) ") && rowText(g, r).contains("%") },
                              "answer \(label) bar missing")
            }
            XCTAssertFalse(rows(containing: "Voters 120", in: g).isEmpty)
            XCTAssertFalse(rows(containing: "Radio  hci0", in: g).isEmpty)
            XCTAssertFalse(rows(containing: "q  quit", in: g).isEmpty)
            XCTAssertFalse(rows(containing: "open for 2:15", in: g).isEmpty)
            XCTAssertFalse(rows(containing: "more", in: g).contains { $0 > layout.bottom })
        }
    }

    func testGlyphsAreUniqueAndWellFormed() {
        let chars = Array(BigFont.characters)
        XCTAssertTrue(Set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ- ").isSubset(of: BigFont.characters))
        let patterns = chars.map { BigFont.rows(String($0)) }
        XCTAssertEqual(Set(patterns.map { $0.joined() }).count, chars.count, "two characters share a glyph")
        XCTAssertTrue(patterns.allSatisfy { $0.count == BigFont.height && $0.allSatisfy { $0.count == BigFont.glyphWidth } })
        for c in chars {
            XCTAssertEqual(BigFont.read(BigFont.rows(String(c))), String(c))
        }
        // Glyphs that differ in a single cell are easy to misread from far away.
        for i in chars.indices {
            for j in chars.indices where i < j && chars[i] != " " && chars[j] != " " {
                let a = Array(patterns[i].joined()), b = Array(patterns[j].joined())
                let diff = zip(a, b).filter { $0 != $1 }.count
                XCTAssertGreaterThanOrEqual(diff, 2, "\(chars[i]) and \(chars[j]) differ in \(diff) cell(s)")
            }
        }
        XCTAssertEqual(BigFont.read(BigFont.rows("4821-k7qxm", gap: 1), gap: 1), "4821-K7QXM")
        XCTAssertNil(BigFont.read(BigFont.rows("48", gap: 1), gap: 2), "wrong pitch does not read")
        XCTAssertNil(BigFont.read(["x"]))
        XCTAssertFalse(BigFont.canDraw("48!"))
    }

    func testUndrawableCodeFallsBackToText() {
        var m = Fixtures.openWithVotes
        m.joinCode = "48?21"
        XCTAssertFalse(FrameRenderer.JoinCodeLayout.make(code: m.joinCode, width: 80, height: 24).isLarge)
        let g = FrameRenderer.render(m, state: ViewState(), width: 80, height: 24)
        XCTAssertTrue(rowText(g, 2).contains("JOIN CODE  48?21"))
        XCTAssertFalse(FrameRenderer.JoinCodeLayout.make(code: String(repeating: "A", count: 40), width: 80, height: 24).isLarge)
    }

    func testAlertAndRadioErrorAreStyled() {
        let g = FrameRenderer.render(Fixtures.radioError, state: ViewState(), width: 80, height: 24)
        let alertRow = try! XCTUnwrap(rows(containing: "ALERT: flood of forged votes", in: g).first)
        XCTAssertEqual(g[alertRow, 79].style, CellStyle(foreground: .red, bold: true, reverse: true), "alert fills its line")
        let radioRow = try! XCTUnwrap(rows(containing: "Radio", in: g).first)
        XCTAssertTrue(rowText(g, radioRow).contains("not scanning"))
        XCTAssertTrue(rowText(g, radioRow).contains("3 errors"))
    }

    func testFollowsResizesAndHostileText() {
        var m = Fixtures.openWithVotes
        m.title = "evil\u{1B}[2Jtitle\n漢字😀e\u{301}"
        m.radio.adapter = String(repeating: "x", count: 200)
        for (w, h) in [(80, 24), (81, 25), (132, 43), (200, 60), (79, 24), (30, 5), (1, 1), (0, 0)] {
            let g = FrameRenderer.render(m, state: ViewState(showRejections: true, confirmingQuit: true), width: w, height: h)
            XCTAssertEqual(g.width, max(0, w))
            XCTAssertEqual(g.height, max(0, h))
            for cell in g.cells {
                XCTAssertGreaterThanOrEqual(cell.scalar.value, 0x20, "control character reached the grid at \(w)x\(h)")
            }
        }
        let g = FrameRenderer.render(m, state: ViewState(), width: 80, height: 24)
        XCTAssertTrue(rowText(g, 0).contains("evil?[2Jtitle????e "))
    }

    /// The radio line names the beacon's frames, legacy ones in yellow; the plain log explains them once.
    func testTheBeaconsFramesShowOnTheRadioLineAndOnceInTheLog() {
        var m = Fixtures.openWithVotes
        m.radio.beacon = .legacy
        let g = FrameRenderer.render(m, state: ViewState(), width: 100, height: 30)
        let row = (0..<g.height).first { rowText(g, $0).contains("Radio  hci0") }
        XCTAssertNotNil(row)
        if let r = row {
            XCTAssertTrue(rowText(g, r).contains("scanning · discovery restarted 12s ago · beacon legacy · 0 errors"), rowText(g, r))
            let scalars = Array(rowText(g, r).unicodeScalars), word = Array("legacy".unicodeScalars)
            let column = scalars.indices.first { Array(scalars[$0...].prefix(word.count)) == word }
            XCTAssertEqual(column.map { g[r, $0].style.foreground }, .yellow)
        }
        let f = PlainLineFormatter()
        let first = f.eventLines(from: nil, to: m)
        XCTAssertEqual(first.filter { $0.hasPrefix("radio: beacon in legacy frames") }.count, 1, "\(first)")
        XCTAssertTrue(first.contains { $0.contains("bluetoothd 5.69 or later, or --radio hci") })
        XCTAssertEqual(f.eventLines(from: m, to: m), [], "said once")
        var extended = m
        extended.radio.beacon = .extended
        XCTAssertEqual(f.eventLines(from: m, to: extended), ["radio: beacon in extended frames, signed by this poll's key (42 acknowledgements a frame)"])
        var unsigned = m
        unsigned.radio.beacon = .extendedUnsigned
        XCTAssertEqual(f.eventLines(from: m, to: unsigned), ["radio: beacon in extended frames, not signed (this poll's join code commits "
                                                             + "to no key): a student with the join code can show others a wrong question while sending"])
        XCTAssertFalse(f.eventLines(from: nil, to: Fixtures.openWithVotes).contains { $0.contains("beacon") },
                       "no beacon, no line")
    }

    func testPlainLineFormatter() {
        let f = PlainLineFormatter()
        XCTAssertEqual(f.statusLine(Fixtures.openWithVotes),
                       "q3 open 2:15 voters=120 A=42(35.0%) B=30(25.0%) C=28(23.3%) D=20(16.7%) rate=12.5/s changes=8 rejected=14")
        let first = f.eventLines(from: nil, to: Fixtures.openWithVotes)
        XCTAssertTrue(first.contains("poll \"Physics 101 - week 3\" join code 4821-K7QXM-3PF9A (anonymous)"))
        XCTAssertTrue(first.contains("question 3 opened"))
        XCTAssertTrue(first.contains("radio: adapter hci0, scanning"))
        XCTAssertTrue(first.contains("rejected 10 bad-tag (total 10)"))
        XCTAssertEqual(f.eventLines(from: Fixtures.openWithVotes, to: Fixtures.openWithVotes), [])
        let closing = f.eventLines(from: Fixtures.openWithVotes, to: Fixtures.closed)
        XCTAssertTrue(closing.contains { $0.hasPrefix("question 3 closed: q3 closed 1:02:05 voters=120") })
        XCTAssertTrue(closing.contains("exported to /var/lib/clicker/poll-3.json"))
        // A ranked question's rounds go to the log when it closes.
        let rounds = f.eventLines(from: Fixtures.openWithVotes, to: Fixtures.ranked)
        XCTAssertEqual(rounds.filter { $0.hasPrefix("question 3: ") },
                       ["question 3: Round 1: A 4 · B 3 · C 3 · exhausted 0 → C out", "question 3: Round 2: A 4 · B 5 · exhausted 1",
                        "question 3: Winner B (5 of 9 active ballots, round 2)"])
        let err = f.eventLines(from: Fixtures.openWithVotes, to: Fixtures.radioError)
        XCTAssertTrue(err.contains("ALERT: flood of forged votes (412 bad tags in 10 s)"))
        XCTAssertTrue(err.contains("radio error: org.bluez.Error.InProgress"))
        XCTAssertTrue(err.contains("rejected 402 bad-tag (total 412)"))
        var evil = Fixtures.openWithVotes
        evil.alert = "two\nlines"
        XCTAssertTrue(f.eventLines(from: Fixtures.openWithVotes, to: evil).allSatisfy { !$0.contains("\n") })
    }

    /// A question's title shows in the full and compact views, in the log's "opened" line and in
    /// `status --json`; a line break in it reaches neither the grid nor the log as one.
    func testTheQuestionsTitleIsShown() throws {
        var m = Fixtures.openWithVotes
        m.question?.title = "Noble gases\n?"
        let full = FrameRenderer.render(m, state: ViewState(), width: 120, height: 40)
        XCTAssertTrue(rowText(full, 0).contains("Physics 101 - week 3  ·  Q3: Noble gases"), rowText(full, 0))
        let compact = FrameRenderer.render(m, state: ViewState(), width: 30, height: 12)
        XCTAssertTrue((0..<compact.height).contains { rowText(compact, $0).contains("Noble gases") })
        for g in [full, compact] { XCTAssertTrue(g.cells.allSatisfy { $0.scalar.value >= 0x20 }) }
        // Option texts beside the letters in the full view; the log keeps its key=value letters.
        m.answers = [.init(label: "A", count: 3, text: "Helium"), .init(label: "B", count: 1, text: "Iron"),
                     .init(label: "C", count: 2, text: "A very long option text that is cut")]
        let bars = FrameRenderer.render(m, state: ViewState(), width: 120, height: 40)
        let rows = (0..<bars.height).map { rowText(bars, $0) }
        XCTAssertTrue(rows.contains { $0.hasPrefix("  A Helium ") }, rows.joined(separator: "\n"))
        XCTAssertTrue(rows.contains { $0.hasPrefix("  B Iron ") })
        XCTAssertTrue(rows.contains { $0.hasPrefix("  C A very long option ") && !$0.contains("is cut") })
        XCTAssertTrue(PlainLineFormatter().statusLine(m).contains(" A=3(50.0%) B=1(16.7%) C=2(33.3%) "))
        let opened = PlainLineFormatter().eventLines(from: nil, to: m)
        XCTAssertTrue(opened.contains("question 3 opened: Noble gases ?"), "\(opened)")
        let json = try JSONEncoder().encode(m)
        XCTAssertEqual(try JSONDecoder().decode(TallyViewModel.self, from: json).question?.title, "Noble gases\n?")
        XCTAssertNil(try JSONDecoder().decode(TallyViewModel.self, from: try JSONEncoder().encode(Fixtures.openWithVotes)).question?.title)
    }

    func testFormatHelpers() {
        XCTAssertEqual(Format.clock(.seconds(0)), "0:00")
        XCTAssertEqual(Format.clock(.seconds(75)), "1:15")
        XCTAssertEqual(Format.clock(.seconds(3725)), "1:02:05")
        XCTAssertEqual(Format.clock(.seconds(-5)), "0:00")
        XCTAssertEqual(Format.percent(1, of: 3), "33.3%")
        XCTAssertEqual(Format.percent(2, of: 3), "66.7%")
        XCTAssertEqual(Format.percent(5, of: 0), "0.0%")
        XCTAssertEqual(Format.oneDecimal(.nan), "-")
        XCTAssertEqual(Format.oneDecimal(-0.25), "-0.3")
        XCTAssertEqual(Format.age(.seconds(3600)), "60m")
    }
}
