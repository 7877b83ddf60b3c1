import ClickerWire

/// What a following voter shows, one value at a time (``BeaconFollowService``): a change of status,
/// the open question before an answer given in advance is cast for it, or a sentence for the student
/// alone. A script (stdout not a terminal) reads ``line``; a person reads ``sentence``.
public enum FollowReport: Sendable, Hashable {
    /// A new status; `question` is the question the beacon describes (nil before one opens).
    case status(BeaconFollower.Status, question: BeaconFollower.Question?)
    /// The open question, shown once before the answer given on the command line is cast for it.
    case question(BeaconFollower.Question)
    /// Something the student can act on that is no status (an answer that is no answer, an answer
    /// that waits for a question). Only a person sees it: a script has the log on stderr.
    case note(String)

    /// The status line of docs/GUIDE.md's list (`question 2 single 4 [title]` for a shown question); a
    /// note's text as is.
    public var line: String {
        switch self {
        case .status(let s, _): s.line
        case .question(let q): BeaconFollower.Status.open(q).line
        case .note(let text): text
        }
    }

    /// What a person at a terminal reads.
    public var sentence: String {
        switch self {
        case .status(.open(let q), _): return Self.describe(q) + "\n" + Self.prompt(q)
        case .status(.notOffered(let a), let q?):
            return "\(a) does not answer question \(q.number): it takes \(Self.takes(q)). Type another answer."
        case .status(.sending(let a), let q?): return "Sending \(Self.shown(a, q))…"
        case .status(.counted(let a), let q?): return "Counted ✓ \(Self.shown(a, q))"
        case .status(let s, _): return s.sentence
        case .question(let q): return Self.describe(q)
        case .note(let text): return text
        }
    }

    /// `Question 2: Title` and its options, one a line; `Question 2` while its text has not arrived.
    static func describe(_ q: BeaconFollower.Question) -> String {
        var s = "Question \(q.number)"
        if let t = q.text {
            if !t.title.isEmpty { s += ": " + BeaconFollower.Status.oneLine(t.title) }
            for (i, o) in t.options.enumerated() {
                s += "\n  \(BeaconFollower.Status.letter(UInt8(min(i, 25)))). " + BeaconFollower.Status.oneLine(o)
            }
        }
        return s
    }

    /// An answer as the student typed it: a number in the question's decimals (9.81, not the 981 the
    /// ballot carries) once its text block told them.
    static func shown(_ a: Answer, _ q: BeaconFollower.Question) -> String {
        guard case .numeric(let v) = a, let form = q.numeric else { return "\(a)" }
        return NumericText.text(v, decimals: Int(form.decimals))
    }

    /// What the student types, in the words of ``AnswerForm/takes``: `Type your answer: true or false.`
    static func prompt(_ q: BeaconFollower.Question) -> String { "Type your answer: \(takes(q))." }

    /// What a question of the beacon takes: a numeric question's range and decimals come with its text
    /// block (protocol 4), "a number" until they arrive.
    static func takes(_ q: BeaconFollower.Question) -> String {
        guard q.beacon.kind == .numeric else {
            return AnswerForm(kind: q.beacon.kind, options: q.beacon.kind.hasOptions ? Int(q.beacon.options) : 4).takes
        }
        guard let form = q.numeric else { return "a number" }
        return AnswerForm(kind: .numeric, decimals: Int(form.decimals), range: form.range).takes
    }
}

/// What a following voter has shown, and what it shows next (pure): each open question once, with
/// its title when its text arrives within the wait, before the statuses that concern it, and once more
/// when its title arrives after the wait; the answer given on the command line, cast for the first
/// question shown that takes it.
struct FollowScreen {
    /// The answer given on the command line, not yet cast.
    var first: String?
    var wait: Duration
    private(set) var shownStatus: BeaconFollower.Status
    /// The open question last shown (nil once no question is open).
    private var shownQuestion: BeaconQuestion?
    /// The question whose text is awaited, since when.
    private var awaiting: (question: BeaconQuestion, since: Duration)?
    /// The shown question, when it was shown before its title arrived (the title is then shown on arrival).
    private var untitled: BeaconQuestion?

    /// Whether a question waits for its text: ``update(_:at:parse:)`` shows it without once the wait is over.
    var awaitsTime: Bool { awaiting != nil }

    init(first: String?, wait: Duration, status: BeaconFollower.Status) {
        self.first = first
        self.wait = wait
        shownStatus = status
    }

    /// Whether `status` is one of an open question.
    static func isOpen(_ status: BeaconFollower.Status) -> Bool {
        switch status {
        case .open, .sending, .counted, .notOffered: true
        case .waiting, .noBeacon, .questionClosed, .pollClosed, .rosterMismatch: false
        }
    }

    /// What to show of `follower` at `now`, in order; casts the first answer into `follower` when its
    /// question is shown and `parse` reads it as an answer to that question.
    mutating func update(_ follower: inout BeaconFollower, at now: Duration,
                         parse: (String, BeaconFollower.Question) -> Answer?) -> [FollowReport] {
        var out: [FollowReport] = []
        if !Self.isOpen(follower.status) { shownQuestion = nil; awaiting = nil }
        if let q = follower.question, Self.isOpen(follower.status), q.beacon != shownQuestion {
            if q.text == nil, q.beacon.textDigest != nil {
                if awaiting?.question != q.beacon { awaiting = (q.beacon, now) }
                // Everything about this question waits for its title (or the end of the wait).
                if let a = awaiting, now - a.since < wait { return [] }
            }
            awaiting = nil
            shownQuestion = q.beacon
            untitled = q.text == nil && q.beacon.textDigest != nil ? q.beacon : nil
            switch follower.status {
            case .open:
                if let text = first, let a = parse(text, q) {
                    first = nil
                    out.append(.question(q))
                    follower.answer(a)
                } else {
                    shownStatus = follower.status
                    out.append(.status(follower.status, question: q))
                    if let text = first {
                        out.append(.note("""
                            \(text) (given when you started) does not answer this question; it is sent for the next \
                            question it answers. Type an answer to this one.
                            """))
                    }
                }
            default:
                out.append(.question(q))
            }
        }
        // Its title arriving after the wait (pages lost on a busy air): the question again, with it, then the
        // status that holds, so that a script's last line is still the status.
        if let q = follower.question, q.text != nil, let u = untitled, u == q.beacon, shownQuestion == u {
            untitled = nil
            if case .open = follower.status {} else { out.append(.question(q)) }
            shownStatus = follower.status
            out.append(.status(follower.status, question: q))
        }
        if follower.status != shownStatus {
            // The shown question's text arriving (shown above), or the question again after a refused answer (the
            // next STATE frame ends "not offered"): the question is not shown twice.
            var again = false
            if case .open(let q) = follower.status, case .open(let p) = shownStatus, q.beacon == p.beacon { again = true }
            if case .open(let q) = follower.status, case .notOffered = shownStatus, q.beacon == shownQuestion { again = true }
            shownStatus = follower.status
            if !again { out.append(.status(follower.status, question: follower.question)) }
        }
        return out
    }
}
