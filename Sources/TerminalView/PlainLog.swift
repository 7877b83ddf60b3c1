/// Plain log lines for when stdout is not a terminal (journal, pipes). Pure.
public struct PlainLineFormatter: Sendable {
    public init() {}

    /// One status line, e.g.
    /// `q3 open 2:15 voters=120 A=42(35.0%) B=30(25.0%) C=28(23.3%) D=20(16.7%) rate=12.5/s changes=8 rejected=14`.
    public func statusLine(_ m: TallyViewModel) -> String {
        var parts: [String] = []
        if let q = m.question {
            parts.append("q\(q.number) \(q.isOpen ? "open" : "closed") \(Format.clock(q.elapsed))")
        } else {
            parts.append("no-question")
        }
        parts.append("voters=\(m.voters)")
        if let room = m.simulatedRoom { parts.append("simulated=\(room)") }
        let total = m.answers.reduce(0) { $0 + max(0, $1.count) }
        if m.countsHidden { parts.append("counts=hidden") }
        for a in m.answers where !m.countsHidden {
            parts.append("\(sanitize(a.label))=\(a.count)(\(Format.percent(max(0, a.count), of: total)))")
        }
        parts.append("rate=\(Format.oneDecimal(m.votesPerSecond))/s")
        parts.append("changes=\(m.changes)")
        parts.append("rejected=\(m.rejectedTotal)")
        return parts.joined(separator: " ")
    }

    /// Event lines for what changed from `old` to `new` (question opened/closed, alert, radio, rejections
    /// by reason), then nothing else: callers add a `statusLine` periodically.
    /// - Parameter rejections: also a line per reason with new rejections (a log rate-limits them
    ///   with ``RejectionSummary`` instead).
    public func eventLines(from old: TallyViewModel?, to new: TallyViewModel, rejections: Bool = true) -> [String] {
        var lines: [String] = []
        if old?.joinCode != new.joinCode {
            lines.append("poll \"\(sanitize(new.title))\" join code \(sanitize(new.joinCode))\(new.anonymous ? " (anonymous)" : "")")
        }
        if let q = new.question {
            if old?.question?.number != q.number || old?.question?.isOpen != q.isOpen {
                lines.append(q.isOpen ? "question \(q.number) opened" + (q.title.map { ": " + sanitize($0) } ?? "")
                                      : "question \(q.number) closed: " + statusLine(new))
                if !q.isOpen, !new.countsHidden {
                    lines += new.details.map { "question \(q.number): " + sanitize($0) }
                }
            }
        }
        if let a = new.alert, old?.alert != a { lines.append("ALERT: " + sanitize(a)) }
        if old?.alert != nil, new.alert == nil { lines.append("alert cleared") }
        let r = new.radio
        if old?.radio.adapter != r.adapter || old?.radio.scanning != r.scanning {
            lines.append("radio: adapter \(sanitize(r.adapter ?? "none")), \(r.scanning ? "scanning" : "not scanning")")
        }
        if let b = r.beacon, old?.radio.beacon != b { lines.append("radio: " + b.explanation) }
        if let e = r.lastError, old?.radio.lastError != e { lines.append("radio error: " + sanitize(e)) }
        let oldRej = Dictionary((old?.rejections ?? []).map { ($0.reason, $0.count) }, uniquingKeysWith: +)
        for rej in new.rejections where rejections && rej.count > (oldRej[rej.reason] ?? 0) {
            lines.append("rejected \(rej.count - (oldRej[rej.reason] ?? 0)) \(sanitize(rej.reason)) (total \(rej.count))")
        }
        if let s = new.status, old?.status != s { lines.append(sanitize(s)) }
        return lines
    }

    /// Control characters (including newlines) become spaces, so that one event is one line.
    func sanitize(_ s: String) -> String {
        String(String.UnicodeScalarView(s.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : $0 }))
    }
}
