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
        let hidden = FrameRenderer.render(m, state: ViewState(barsHidden: true), width: 80, height: 24)
        XCTAssertFalse(rows(containing: "35.0%", in: shown).isEmpty)
        for r in 8..<hidden.height {
            let t = rowText(hidden, r)
            XCTAssertFalse(t.contains("%"), "row \(r) shows a percentage while hidden: \(t)")
            XCTAssertFalse(t.contains("█ ") || t.contains("▏"), "row \(r) shows a bar while hidden")
            XCTAssertFalse(t.contains(" 42 "), "row \(r) shows a count while hidden")
        }
        XCTAssertEqual(rows(containing: "votes hidden", in: hidden).count, 1)
        XCTAssertFalse(rows(containing: "Voters 120", in: hidden).isEmpty)
        XCTAssertFalse(rows(containing: "show votes", in: hidden).isEmpty, "legend offers to reveal")
    }

    func testJoinCodeDrawnLarge() {
        let g = FrameRenderer.render(Fixtures.openWithVotes, state: ViewState(), width: 80, height: 24)
        let big = BigFont.rows("482913")
        for (i, line) in big.enumerated() {
            XCTAssertEqual(String(rowText(g, 2 + i).dropFirst(2).prefix(line.count)), line)
        }
        XCTAssertTrue(big.allSatisfy { $0.count == BigFont.width(of: "482913") })
        // Every digit glyph differs from every other.
        let digits = "0123456789".map { BigFont.rows(String($0)) }
        XCTAssertEqual(Set(digits.map { $0.joined() }).count, 10)
        XCTAssertTrue(digits.allSatisfy { $0.count == BigFont.height && $0.allSatisfy { $0.count == BigFont.glyphWidth } })
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

    func testPlainLineFormatter() {
        let f = PlainLineFormatter()
        XCTAssertEqual(f.statusLine(Fixtures.openWithVotes),
                       "q3 open 2:15 voters=120 A=42(35.0%) B=30(25.0%) C=28(23.3%) D=20(16.7%) rate=12.5/s changes=8 rejected=14")
        let first = f.eventLines(from: nil, to: Fixtures.openWithVotes)
        XCTAssertTrue(first.contains("poll \"Physics 101 - week 3\" join code 482913 (anonymous)"))
        XCTAssertTrue(first.contains("question 3 opened"))
        XCTAssertTrue(first.contains("radio: adapter hci0, scanning"))
        XCTAssertTrue(first.contains("rejected 10 bad-tag (total 10)"))
        XCTAssertEqual(f.eventLines(from: Fixtures.openWithVotes, to: Fixtures.openWithVotes), [])
        let closing = f.eventLines(from: Fixtures.openWithVotes, to: Fixtures.closed)
        XCTAssertTrue(closing.contains { $0.hasPrefix("question 3 closed: q3 closed 1:02:05 voters=120") })
        XCTAssertTrue(closing.contains("exported to /var/lib/clicker/poll-3.json"))
        let err = f.eventLines(from: Fixtures.openWithVotes, to: Fixtures.radioError)
        XCTAssertTrue(err.contains("ALERT: flood of forged votes (412 bad tags in 10 s)"))
        XCTAssertTrue(err.contains("radio error: org.bluez.Error.InProgress"))
        XCTAssertTrue(err.contains("rejected 402 bad-tag (total 412)"))
        var evil = Fixtures.openWithVotes
        evil.alert = "two\nlines"
        XCTAssertTrue(f.eventLines(from: Fixtures.openWithVotes, to: evil).allSatisfy { !$0.contains("\n") })
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
