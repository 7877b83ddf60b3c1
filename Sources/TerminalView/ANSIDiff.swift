/// Turns a change from one grid to the next into ANSI bytes: only changed cells are written, with
/// absolute (CUP) or forward (CUF) cursor moves between runs. Pure.
public struct ANSIEncoder: Sendable {
    /// False when `NO_COLOR` is set: colours are dropped, bold/dim/reverse are kept.
    public var color: Bool
    /// Unchanged cells shorter than this between two changed runs are rewritten instead of jumped over.
    public var gapToJump: Int

    public init(color: Bool, gapToJump: Int = 6) {
        self.color = color
        self.gapToJump = gapToJump
    }

    /// `color` from the environment: off when `NO_COLOR` is set to a non-empty value (no-color.org).
    public static func colorAllowed(environment: [String: String]) -> Bool {
        (environment["NO_COLOR"] ?? "").isEmpty
    }

    /// The bytes that turn a screen showing `old` into one showing `new`. With `old` nil (or of another
    /// size) the screen is cleared and redrawn. Returns no bytes when nothing changed.
    public func encode(from old: Grid?, to new: Grid) -> [UInt8] {
        var out: [UInt8] = []
        let base: Grid
        if let old, old.width == new.width, old.height == new.height {
            base = old
        } else {
            out.append(contentsOf: Array("\u{1B}[0m\u{1B}[2J".utf8))
            base = Grid(width: new.width, height: new.height)
        }
        let W = new.width
        var curRow = -1, curCol = -1
        var curStyle: CellStyle? = out.isEmpty ? nil : .plain
        for r in 0..<new.height {
            var c = 0
            while c < W {
                if same(base[r, c], new[r, c]) { c += 1; continue }
                // A run: changed cells, allowing short gaps of unchanged ones.
                let start = c
                var end = c + 1
                var j = end
                while j < W {
                    if !same(base[r, j], new[r, j]) { end = j + 1; j += 1; continue }
                    var k = j
                    while k < W, k - j < gapToJump, same(base[r, k], new[r, k]) { k += 1 }
                    if k - j >= gapToJump || k == W { break }
                    j = k
                }
                moveCursor(&out, from: (curRow, curCol), to: (r, start))
                for col in start..<end {
                    let cell = new[r, col]
                    let style = effective(cell.style)
                    if style != curStyle {
                        sgr(&out, style)
                        curStyle = style
                    }
                    appendUTF8(&out, cell.scalar)
                }
                // After writing the last column the cursor position is terminal-dependent (pending wrap).
                curRow = end >= W ? -1 : r
                curCol = end
                c = end
            }
        }
        if out.isEmpty { return out }
        if curStyle != .plain { out.append(contentsOf: Array("\u{1B}[0m".utf8)) }
        return out
    }

    func same(_ a: Cell, _ b: Cell) -> Bool {
        a.scalar == b.scalar && effective(a.style) == effective(b.style)
    }

    func effective(_ s: CellStyle) -> CellStyle {
        color ? s : CellStyle(foreground: .none, bold: s.bold, dim: s.dim, reverse: s.reverse)
    }

    func moveCursor(_ out: inout [UInt8], from: (Int, Int), to: (Int, Int)) {
        if from == to { return }
        if from.0 == to.0, to.1 > from.1, from.1 >= 0 {
            let n = to.1 - from.1
            out.append(contentsOf: Array("\u{1B}[\(n == 1 ? "" : String(n))C".utf8))
        } else {
            out.append(contentsOf: Array("\u{1B}[\(to.0 + 1);\(to.1 + 1)H".utf8))
        }
    }

    func sgr(_ out: inout [UInt8], _ s: CellStyle) {
        var p = "\u{1B}[0"
        if s.bold { p += ";1" }
        if s.dim { p += ";2" }
        if s.reverse { p += ";7" }
        if s.foreground != .none { p += ";3\(s.foreground.rawValue)" }
        out.append(contentsOf: Array((p + "m").utf8))
    }

    func appendUTF8(_ out: inout [UInt8], _ s: Unicode.Scalar) {
        if s.value < 0x80 { out.append(UInt8(s.value)); return }
        UTF8.encode(s) { out.append($0) }
    }
}

/// Limits redraws to a maximum rate. Pure: the caller passes the time.
public struct FramePacer: Sendable {
    public let minimumInterval: Duration
    public private(set) var lastDraw: Duration?

    /// `framesPerSecond` at most (default 10).
    public init(framesPerSecond: Int = 10) {
        minimumInterval = .nanoseconds(1_000_000_000 / Int64(max(1, framesPerSecond)))
    }

    /// How long to wait before a draw is allowed at `now` (zero if allowed).
    public func delay(at now: Duration) -> Duration {
        guard let lastDraw else { return .zero }
        let next = lastDraw + minimumInterval
        return now >= next ? .zero : next - now
    }

    public mutating func didDraw(at now: Duration) { lastDraw = now }
}

/// The live screen: renders only when the model, UI state or size changed, at most at the pacer's rate,
/// and emits only the changed cells. Pure: the caller writes the bytes and passes the time.
public struct LiveScreen: Sendable {
    /// What to do for this tick.
    public enum Outcome: Sendable, Equatable {
        /// Nothing changed since the last frame drawn.
        case unchanged
        /// Something changed but the rate limit applies: call again after this delay.
        case throttled(retryAfter: Duration)
        /// Write these bytes (empty if the re-rendered grid is identical).
        case draw([UInt8])
    }

    public var encoder: ANSIEncoder
    public var pacer: FramePacer
    private var shown: (model: TallyViewModel, state: ViewState, width: Int, height: Int)?
    private var grid: Grid?

    public init(encoder: ANSIEncoder, pacer: FramePacer = FramePacer()) {
        self.encoder = encoder
        self.pacer = pacer
    }

    /// Forgets what is on screen (after a resize or when the terminal was disturbed): the next frame is full.
    public mutating func invalidate() {
        shown = nil
        grid = nil
    }

    public mutating func tick(model: TallyViewModel, state: ViewState, width: Int, height: Int, now: Duration) -> Outcome {
        if let s = shown, s.model == model, s.state == state, s.width == width, s.height == height {
            return .unchanged
        }
        let wait = pacer.delay(at: now)
        if wait > .zero { return .throttled(retryAfter: wait) }
        let next = FrameRenderer.render(model, state: state, width: width, height: height)
        let bytes = encoder.encode(from: grid, to: next)
        grid = next
        shown = (model, state, width, height)
        pacer.didDraw(at: now)
        return .draw(bytes)
    }
}
