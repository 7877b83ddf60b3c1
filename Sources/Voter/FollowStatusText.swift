import ClickerWire

/// The texts of a following voter's status: one stable line for scripts (stdout not a terminal)
/// and a sentence for a person. The script lines are documented in docs/GUIDE.md and must not change.
extension BeaconFollower.Status {
    /// `waiting`, `no-beacon`, `question 2 single 4 [title]`, `sending B`, `counted B`,
    /// `not-offered X`, `question-closed 2`, `poll-closed`, `roster-mismatch`.
    public var line: String {
        switch self {
        case .waiting: return "waiting"
        case .noBeacon: return "no-beacon"
        case .open(let q):
            let head = "question \(q.number) \(q.beacon.kind.rawValue) \(q.beacon.options)"
            guard let title = q.text?.title, !title.isEmpty else { return head }
            return head + " " + Self.oneLine(title)
        case .sending(let a): return "sending \(a)"
        case .counted(let a): return "counted \(a)"
        case .notOffered(let a): return "not-offered \(a)"
        case .questionClosed(let n): return "question-closed \(n)"
        case .pollClosed: return "poll-closed"
        case .rosterMismatch: return "roster-mismatch"
        }
    }

    /// What a person at a terminal reads.
    public var sentence: String {
        switch self {
        case .waiting: return "Waiting for the tally's beacon…"
        case .noBeacon:
            return "No poll is heard for this join code. Check the code against the instructor's screen "
                + "(a mistyped code is never heard); if it is right, ask whether the poll has started, or move closer. "
                + "Answers you type now are sent when a question opens."
        case .open(let q):
            var s = "Question \(q.number) (\(q.beacon.kind.rawValue)"
            if q.beacon.kind.hasOptions { s += ", options A to \(Self.letter(max(q.beacon.options, 1) - 1))" }
            s += ")"
            if let t = q.text {
                if !t.title.isEmpty { s += ": " + Self.oneLine(t.title) }
                for (i, o) in t.options.enumerated() { s += "\n  \(Self.letter(UInt8(min(i, 25)))). " + Self.oneLine(o) }
            }
            return s + "\nType your answer."
        case .sending(let a): return "Sending \(a)…"
        case .counted(let a): return "Counted ✓ \(a)"
        case .notOffered(let a): return "\(a) is not offered by this question; answer again."
        case .questionClosed(let n): return "Question \(n) closed."
        case .pollClosed: return "The poll is closed."
        case .rosterMismatch(let poll):
            return poll == .roster
                ? "This is a roster poll: vote with --roster (and your enrolled roster key)."
                : "This poll is anonymous: vote without --roster."
        }
    }

    static func letter(_ i: UInt8) -> String { String(Character(Unicode.Scalar(65 + min(i, 25)))) }

    /// Text from the air on one line, without control characters.
    static func oneLine(_ s: String) -> String {
        String(s.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) })
    }
}
