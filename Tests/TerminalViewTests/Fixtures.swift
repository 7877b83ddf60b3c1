import TerminalView

/// View-model fixtures shared by snapshot and diff tests.
enum Fixtures {
    static let radioOK = TallyViewModel.Radio(adapter: "hci0", scanning: true, sinceDiscoveryRestart: .seconds(12), errors: 0)

    static var openWithVotes: TallyViewModel {
        TallyViewModel(title: "Physics 101 - week 3", joinCode: "4821-K7QXM-3PF9A", anonymous: true,
                       question: .init(number: 3, isOpen: true, elapsed: .seconds(135)),
                       answers: [.init(label: "A", count: 42), .init(label: "B", count: 30),
                                 .init(label: "C", count: 28), .init(label: "D", count: 20)],
                       voters: 120, votesPerSecond: 12.5, changes: 8,
                       rejections: [.init(reason: "bad-tag", count: 10), .init(reason: "replay", count: 4)],
                       radio: radioOK)
    }

    static var closed: TallyViewModel {
        var m = openWithVotes
        m.question = .init(number: 3, isOpen: false, elapsed: .seconds(3725))
        m.votesPerSecond = 0
        m.status = "exported to /var/lib/clicker/poll-3.json"
        return m
    }

    static var radioError: TallyViewModel {
        var m = openWithVotes
        m.radio = .init(adapter: "hci0", scanning: false, sinceDiscoveryRestart: .seconds(300), errors: 3,
                        lastError: "org.bluez.Error.InProgress")
        m.alert = "flood of forged votes (412 bad tags in 10 s)"
        m.rejections = [.init(reason: "bad-tag", count: 412), .init(reason: "wrong-vote-id", count: 3),
                        .init(reason: "replay", count: 17), .init(reason: "malformed", count: 2)]
        return m
    }

    static var noQuestion: TallyViewModel {
        TallyViewModel(title: "Roster quiz", joinCode: "7310-2", anonymous: false,
                       radio: .init(adapter: nil, scanning: false, errors: 1, lastError: "no Bluetooth adapter"))
    }

    /// A closed multi-select question: per-option bars and its top combinations.
    static var multiSelect: TallyViewModel {
        var m = closed
        m.voters = 9
        m.answers = [.init(label: "A", count: 6), .init(label: "B", count: 4), .init(label: "C", count: 7), .init(label: "D", count: 0)]
        m.barsCaption = "Each option (a ballot may select several) · 9 ballots"
        m.details = ["Combinations: A+C 3 · B+C 3 · A+ 2 · A+B+C 1"]
        return m
    }

    /// A closed numeric question: histogram bins, median and quartiles.
    static var numeric: TallyViewModel {
        var m = closed
        m.voters = 30
        m.answers = [.init(label: "0–4", count: 2), .init(label: "5–9", count: 5), .init(label: "10–14", count: 11),
                     .init(label: "15–19", count: 8), .init(label: "20–24", count: 4)]
        m.barsCaption = "Histogram · 30 ballots"
        m.details = ["Median 12 · quartiles 8.5 and 16 · lowest 1 · highest 23"]
        return m
    }

    /// A closed ranked question: the last round's bars and every round.
    static var ranked: TallyViewModel {
        var m = closed
        m.voters = 10
        m.answers = [.init(label: "A", count: 4), .init(label: "B", count: 5)]
        m.barsCaption = "Round 2 of instant-runoff · 10 ballots"
        m.details = ["Round 1: A 4 · B 3 · C 3 · exhausted 0 → C out", "Round 2: A 4 · B 5 · exhausted 1",
                     "Winner B (5 of 9 active ballots, round 2)"]
        return m
    }

    /// A model of `voters` voters spread by a seeded generator, for diff tests and the benchmark.
    static func random<R: RandomNumberGenerator>(voters: Int, using rng: inout R) -> TallyViewModel {
        var counts = [0, 0, 0, 0]
        for _ in 0..<voters { counts[Int.random(in: 0..<4, using: &rng)] += 1 }
        var m = openWithVotes
        m.answers = zip(["A", "B", "C", "D"], counts).map { .init(label: $0, count: $1) }
        m.voters = voters
        m.votesPerSecond = Double.random(in: 0..<50, using: &rng)
        m.changes = Int.random(in: 0..<40, using: &rng)
        m.question = .init(number: 1 + Int.random(in: 0..<3, using: &rng), isOpen: Bool.random(using: &rng),
                           elapsed: .seconds(Int.random(in: 0..<4000, using: &rng)))
        m.alert = Bool.random(using: &rng) ? "alert \(Int.random(in: 0..<100, using: &rng))" : nil
        m.radio.errors = Int.random(in: 0..<3, using: &rng)
        return m
    }
}

/// A tiny terminal emulator for the sequences the encoder emits (CUP, CUF, ED 2, SGR, private modes),
/// with auto-wrap. Independent of the encoder's code.
struct VirtualScreen {
    var grid: Grid
    var row = 0, col = 0
    var style = CellStyle.plain
    var pendingWrap = false
    var unknownSequences: [String] = []

    init(width: Int, height: Int) { grid = Grid(width: width, height: height) }

    mutating func apply(_ bytes: [UInt8]) {
        let scalars = Array(String(decoding: bytes, as: UTF8.self).unicodeScalars)
        var i = 0
        while i < scalars.count {
            let s = scalars[i]
            if s == "\u{1B}" {
                guard i + 1 < scalars.count, scalars[i + 1] == "[" else { unknownSequences.append("ESC"); i += 1; continue }
                var j = i + 2
                var params = ""
                while j < scalars.count, !("@"..."~").contains(scalars[j]) { params.unicodeScalars.append(scalars[j]); j += 1 }
                guard j < scalars.count else { unknownSequences.append("truncated"); return }
                csi(params, scalars[j])
                i = j + 1
                continue
            }
            if pendingWrap {
                pendingWrap = false
                col = 0
                row = min(grid.height - 1, row + 1)
            }
            grid[row, col] = Cell(s, style)
            if col == grid.width - 1 { pendingWrap = true } else { col += 1 }
            i += 1
        }
    }

    mutating func csi(_ params: String, _ final: Unicode.Scalar) {
        let nums = params.split(separator: ";", omittingEmptySubsequences: false).map { Int($0) }
        switch final {
        case "H":
            row = max(0, (nums.first.flatMap { $0 } ?? 1) - 1)
            col = max(0, (nums.count > 1 ? nums[1] ?? 1 : 1) - 1)
            pendingWrap = false
        case "C":
            col = min(grid.width - 1, col + max(1, nums.first.flatMap { $0 } ?? 1))
            pendingWrap = false
        case "J":
            if params == "2" { grid = Grid(width: grid.width, height: grid.height) } else { unknownSequences.append(params + "J") }
        case "m":
            for n in nums.map({ $0 ?? 0 }) {
                switch n {
                case 0: style = .plain
                case 1: style.bold = true
                case 2: style.dim = true
                case 7: style.reverse = true
                case 30...37: style.foreground = CellColor(rawValue: UInt8(n - 30)) ?? .none
                default: unknownSequences.append("SGR \(n)")
                }
            }
        case "h", "l":
            if !params.hasPrefix("?") { unknownSequences.append(params + String(final)) }
        default:
            unknownSequences.append(params + String(final))
        }
    }
}

extension Grid {
    /// The grid with colours removed (what a NO_COLOR screen shows).
    var withoutColor: Grid {
        var g = Grid(width: width, height: height)
        for r in 0..<height {
            for c in 0..<width {
                var cell = self[r, c]
                cell.style.foreground = .none
                g[r, c] = cell
            }
        }
        return g
    }
}
