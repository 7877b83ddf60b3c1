import struct ClickerTransport.SplitMix64
import TerminalView
import XCTest

final class DiffTests: XCTestCase {
    func testAppliedDiffReproducesEveryFrame() {
        for color in [true, false] {
            var rng = SplitMix64(seed: color ? 1 : 2)
            let enc = ANSIEncoder(color: color)
            var screen = VirtualScreen(width: 80, height: 24)
            var previous: Grid?
            var sizes = [(80, 24)]
            for step in 0..<200 {
                if step % 50 == 49 { sizes.append([(100, 30), (80, 24), (120, 40)][Int(rng.next() % 3)]) }
                let (w, h) = sizes.last!
                if screen.grid.width != w || screen.grid.height != h { screen = VirtualScreen(width: w, height: h) }
                var m = Fixtures.random(voters: Int(rng.next() % 300), using: &rng)
                m.countsHidden = rng.next() % 5 == 0
                let state = ViewState(showRejections: rng.next() % 3 == 0,
                                      confirmingQuit: rng.next() % 7 == 0)
                let next = FrameRenderer.render(m, state: state, width: w, height: h)
                let bytes = enc.encode(from: previous, to: next)
                screen.apply(bytes)
                XCTAssertEqual(screen.unknownSequences, [])
                let expected = color ? next : next.withoutColor
                if screen.grid != expected {
                    let bad = zip(screen.grid.cells, expected.cells).enumerated().first { $0.element.0 != $0.element.1 }
                    XCTFail("step \(step) color \(color): cell \(bad.map { "\($0.offset / w),\($0.offset % w)" } ?? "?") differs")
                    return
                }
                previous = next
            }
        }
    }

    func testUnchangedFrameEmitsNothingAndSmallChangeIsSmall() {
        let enc = ANSIEncoder(color: true)
        let a = FrameRenderer.render(Fixtures.openWithVotes, state: ViewState(), width: 80, height: 24)
        XCTAssertEqual(enc.encode(from: a, to: a), [])
        let full = enc.encode(from: nil, to: a)
        XCTAssertTrue(full.starts(with: Array("\u{1B}[0m\u{1B}[2J".utf8)))
        var m = Fixtures.openWithVotes
        m.answers[0].count += 1
        m.voters += 1
        let b = FrameRenderer.render(m, state: ViewState(), width: 80, height: 24)
        let delta = enc.encode(from: a, to: b)
        XCTAssertGreaterThan(delta.count, 0)
        XCTAssertLessThan(delta.count, full.count / 5, "one more vote rewrites a few cells, not the screen")
        var screen = VirtualScreen(width: 80, height: 24)
        screen.apply(full)
        screen.apply(delta)
        XCTAssertEqual(screen.grid, b)
    }

    func testNoColorEmitsNoColourSequences() {
        let g = FrameRenderer.render(Fixtures.radioError, state: ViewState(), width: 80, height: 24)
        let plain = String(decoding: ANSIEncoder(color: false).encode(from: nil, to: g), as: UTF8.self)
        let colored = String(decoding: ANSIEncoder(color: true).encode(from: nil, to: g), as: UTF8.self)
        XCTAssertTrue(colored.contains(";31m"))
        for n in 30...37 { XCTAssertFalse(plain.contains(";\(n)m"), "colour \(n) emitted with NO_COLOR") }
        XCTAssertTrue(plain.contains("\u{1B}[0;1;7m"), "bold/reverse kept")
        XCTAssertFalse(ANSIEncoder.colorAllowed(environment: ["NO_COLOR": "1"]))
        XCTAssertTrue(ANSIEncoder.colorAllowed(environment: ["NO_COLOR": ""]))
        XCTAssertTrue(ANSIEncoder.colorAllowed(environment: [:]))
        // A colour-only change is invisible without colour: nothing to write.
        var recolored = g
        recolored[0, 0] = Cell(g[0, 0].scalar, CellStyle(foreground: .green, bold: g[0, 0].style.bold, reverse: g[0, 0].style.reverse))
        XCTAssertEqual(ANSIEncoder(color: false).encode(from: g, to: recolored), [])
    }

    func testLiveScreenRedrawsOnlyOnChangeAtMostTenPerSecond() {
        var live = LiveScreen(encoder: ANSIEncoder(color: true))
        let m = Fixtures.openWithVotes
        let s = ViewState()
        guard case let .draw(first) = live.tick(model: m, state: s, width: 80, height: 24, now: .zero) else { return XCTFail() }
        XCTAssertFalse(first.isEmpty)
        XCTAssertEqual(live.tick(model: m, state: s, width: 80, height: 24, now: .milliseconds(500)), .unchanged)
        var m2 = m
        m2.voters += 1
        XCTAssertEqual(live.tick(model: m2, state: s, width: 80, height: 24, now: .milliseconds(550)), .draw(
            ANSIEncoder(color: true).encode(from: FrameRenderer.render(m, state: s, width: 80, height: 24),
                                            to: FrameRenderer.render(m2, state: s, width: 80, height: 24))))
        var m3 = m2
        m3.voters += 1
        XCTAssertEqual(live.tick(model: m3, state: s, width: 80, height: 24, now: .milliseconds(600)), .throttled(retryAfter: .milliseconds(50)))
        guard case .draw = live.tick(model: m3, state: s, width: 80, height: 24, now: .milliseconds(650)) else { return XCTFail() }
        // 1000 changes over 10 s draw at most 101 frames.
        var draws = 0
        var model = m3
        for i in 1...1000 {
            model.voters += 1
            if case .draw = live.tick(model: model, state: s, width: 80, height: 24, now: .milliseconds(650 + 10 * i)) { draws += 1 }
        }
        XCTAssertLessThanOrEqual(draws, 101)
        XCTAssertGreaterThanOrEqual(draws, 99)
        // A resize redraws everything.
        guard case let .draw(resized) = live.tick(model: model, state: s, width: 100, height: 30, now: .seconds(100)) else { return XCTFail() }
        XCTAssertTrue(resized.starts(with: Array("\u{1B}[0m\u{1B}[2J".utf8)))
    }
}

final class KeyTests: XCTestCase {
    func testKeyStateMachine() {
        var s = ViewState()
        XCTAssertEqual(s.handle(.character("o"), questionOpen: false), .openQuestion)
        XCTAssertEqual(s.handle(.character("c"), questionOpen: true), .closeQuestion)
        XCTAssertEqual(s.handle(.character("n"), questionOpen: false), .nextQuestion)
        XCTAssertEqual(s.handle(.character("e"), questionOpen: true), .export)
        XCTAssertEqual(s.handle(.character("h"), questionOpen: true), .toggleCounts)
        XCTAssertEqual(s.handle(.character("H"), questionOpen: false), .toggleCounts)
        XCTAssertNil(s.handle(.character("r"), questionOpen: true))
        XCTAssertTrue(s.showRejections)
        XCTAssertNil(s.handle(.character("x"), questionOpen: true))
        XCTAssertNil(s.handle(.up, questionOpen: true))

        // Quit while closed: immediate.
        XCTAssertEqual(s.handle(.character("q"), questionOpen: false), .quit)
        // Quit while open: asks; n or any other key cancels, without acting on that key.
        XCTAssertNil(s.handle(.character("q"), questionOpen: true))
        XCTAssertTrue(s.confirmingQuit)
        XCTAssertNil(s.handle(.character("n"), questionOpen: true), "'n' cancels instead of next question")
        XCTAssertFalse(s.confirmingQuit)
        XCTAssertNil(s.handle(.character("q"), questionOpen: true))
        XCTAssertNil(s.handle(.escape, questionOpen: true))
        XCTAssertFalse(s.confirmingQuit)
        XCTAssertNil(s.handle(.character("q"), questionOpen: true))
        XCTAssertEqual(s.handle(.character("y"), questionOpen: true), .quit)
        // Ctrl-C twice quits.
        XCTAssertNil(s.handle(.ctrlC, questionOpen: true))
        XCTAssertEqual(s.handle(.ctrlC, questionOpen: true), .quit)
    }

    func testKeyDecoder() {
        var d = KeyDecoder()
        XCTAssertEqual(d.feed(Array("oq".utf8)), [.character("o"), .character("q")])
        XCTAssertEqual(d.feed([0x1B, 0x5B, 0x41, 0x1B, 0x4F, 0x44, 0x03, 0x0D]), [.up, .left, .ctrlC, .enter])
        XCTAssertEqual(d.feed([0x1B]), [.escape])
        XCTAssertEqual(d.feed([0x1B, 0x5B, 0x31, 0x3B, 0x35, 0x43]), [.right], "modifier parameters skipped")
        XCTAssertEqual(d.feed([0x1B, 0x5B, 0x32, 0x7E]), [.other])
        let e = Array("é".utf8)
        XCTAssertEqual(d.feed([e[0]]), [])
        XCTAssertEqual(d.feed([e[1], UInt8(ascii: "y")]), [.character("é"), .character("y")])
        XCTAssertEqual(d.feed([0xFF, 0x01]), [.other, .other])
        // Random bytes never trap.
        var rng = SplitMix64(seed: 9)
        for _ in 0..<2000 { _ = d.feed((0..<Int(rng.next() % 8)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }) }
    }
}
