/// A key press, decoded from terminal input bytes.
public enum Key: Sendable, Hashable {
    case character(Character)
    case enter
    case escape
    case ctrlC
    case up, down, left, right
    /// Anything else (other control keys, unknown escape sequences).
    case other
}

/// What the operator asked for; carried out by the daemon.
public enum ViewAction: Sendable, Hashable {
    case openQuestion
    case closeQuestion
    case nextQuestion
    case export
    /// Show the counts if hidden, else hide them (for the whole poll: every view and D-Bus).
    case toggleCounts
    case quit
}

/// UI-only state driven by keys: pure, testable.
public struct ViewState: Sendable, Equatable {
    /// Show the rejection breakdown by reason.
    public var showRejections: Bool
    /// Waiting for y/n to quit while a question is open.
    public var confirmingQuit: Bool

    public init(showRejections: Bool = false, confirmingQuit: Bool = false) {
        self.showRejections = showRejections
        self.confirmingQuit = confirmingQuit
    }

    /// The key legend shown at the bottom.
    public static let legend: [(key: String, label: String)] = [
        ("o", "open"), ("c", "close"), ("n", "next"), ("h", "hide/show"), ("r", "rejections"), ("e", "export"), ("q", "quit"),
    ]

    /// Applies a key. `questionOpen` tells whether quitting needs confirmation.
    /// Returns the action to carry out, if any.
    public mutating func handle(_ key: Key, questionOpen: Bool) -> ViewAction? {
        if confirmingQuit {
            confirmingQuit = false
            switch key {
            case .character("y"), .character("Y"), .ctrlC: return .quit
            default: return nil   // any other key cancels
            }
        }
        switch key {
        case .character("o"), .character("O"): return .openQuestion
        case .character("c"), .character("C"): return .closeQuestion
        case .character("n"), .character("N"): return .nextQuestion
        case .character("e"), .character("E"): return .export
        case .character("h"), .character("H"): return .toggleCounts
        case .character("r"), .character("R"):
            showRejections.toggle()
            return nil
        case .character("q"), .character("Q"), .ctrlC:
            if questionOpen {
                confirmingQuit = true
                return nil
            }
            return .quit
        default:
            return nil
        }
    }
}

/// Decodes terminal input bytes into keys. Keeps an incomplete UTF-8 or escape sequence between calls.
public struct KeyDecoder: Sendable {
    private var pending: [UInt8] = []

    public init() {}

    /// Feeds bytes; returns the complete keys. A lone ESC at the end of the input is reported as `.escape`
    /// (terminals send escape sequences in one read).
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Key] {
        pending.append(contentsOf: bytes)
        var keys: [Key] = []
        var i = 0
        let b = pending
        while i < b.count {
            let c = b[i]
            switch c {
            case 0x03: keys.append(.ctrlC); i += 1
            case 0x0D, 0x0A: keys.append(.enter); i += 1
            case 0x1B:
                if i + 1 >= b.count { keys.append(.escape); i += 1; continue }
                if b[i + 1] == UInt8(ascii: "[") || b[i + 1] == UInt8(ascii: "O") {
                    // CSI/SS3: parameters then a final byte in 0x40...0x7E.
                    var j = i + 2
                    while j < b.count, !(0x40...0x7E).contains(b[j]) { j += 1 }
                    if j >= b.count { keys.append(.other); i = b.count; continue }
                    switch b[j] {
                    case UInt8(ascii: "A"): keys.append(.up)
                    case UInt8(ascii: "B"): keys.append(.down)
                    case UInt8(ascii: "C"): keys.append(.right)
                    case UInt8(ascii: "D"): keys.append(.left)
                    default: keys.append(.other)
                    }
                    i = j + 1
                } else {
                    keys.append(.escape); i += 1
                }
            case 0x00..<0x20, 0x7F: keys.append(.other); i += 1
            case 0x20..<0x80:
                keys.append(.character(Character(Unicode.Scalar(c)))); i += 1
            default:
                // UTF-8 multi-byte sequence.
                let need = c >= 0xF8 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1
                if need == 1 { keys.append(.other); i += 1; continue }
                let available = b[(i + 1)..<min(b.count, i + need)]
                if !available.allSatisfy({ $0 & 0xC0 == 0x80 }) { keys.append(.other); i += 1; continue }
                if i + need > b.count {
                    pending = Array(b[i...])
                    return keys
                }
                if let s = String(validating: b[i..<i + need], as: UTF8.self), let ch = s.first {
                    keys.append(.character(ch))
                } else {
                    keys.append(.other)
                }
                i += need
            }
        }
        pending = []
        return keys
    }
}
