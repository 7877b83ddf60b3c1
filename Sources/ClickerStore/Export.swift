#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation

/// The exported files of one poll.
public struct PollExport: Sendable, Hashable {
    /// One row per question (RFC 4180, CRLF line ends, header row).
    public var summaryCSV: String
    /// One row per ballot; nil for anonymous polls, which never export per-voter rows.
    public var ballotsCSV: String?
    /// Poll, per-question summary and (roster polls only) ballots, as UTF-8 JSON.
    public var json: Data
    /// Every instant-runoff round of the ranked questions, one row per option in the race
    /// (``Exporter/roundColumns``); nil when the poll has no ranked question.
    public var roundsCSV: String? = nil
}

extension ClickerStore {
    /// Builds the CSV and JSON exports of a poll, or of its question `question` alone. The join code is
    /// never exported (only the vote ID), and an anonymous poll exports no voter ID and no address.
    public func export(poll id: Int64, question: Int? = nil) throws -> PollExport {
        guard let poll = try poll(id) else { throw StoreError.unknownPoll(id) }
        let summaries = try summary(poll: id).filter { question == nil || $0.question.number == question }
        let ballots = poll.mode == .anonymous ? [] : try ballots(poll: id, question: question)
        return try Exporter.export(poll: poll, summaries: summaries, ballots: ballots)
    }
}

/// Pure export formatting (no I/O).
public enum Exporter {
    /// Column headers of the ballots CSV.
    public static let ballotColumns = ["poll", "question", "voter", "answer", "sequence", "address",
                                       "first_heard", "last_heard", "gatt_verified"]

    /// Formats the export. For anonymous polls `ballots` is ignored and no per-voter data is produced.
    public static func export(poll: PollRecord, summaries: [QuestionSummary], ballots: [BallotRecord]) throws -> PollExport {
        // Per question: its results by kind, and the counts of its letter columns (single choice,
        // multi-select per option, ranked first preferences; none for true/false and numeric).
        let byKind = summaries.map(results)
        let optionCounts = zip(summaries, byKind).map { s, r -> [Int]? in
            if case .choice = r { return s.counts }
            return Self.optionCounts(r)
        }
        let answerCount = max(4, optionCounts.map { $0?.count ?? 0 }.max() ?? 4)
        let letters = (0..<answerCount).map(answerLabel)

        var summaryRows = [["poll", "question", "state", "opened_at", "closed_at", "voters", "changes",
                            "gatt_verified", "rejected"] + letters + resultColumns + textColumns]
        for (i, s) in summaries.enumerated() {
            let counts = (0..<answerCount).map { c in
                optionCounts[i].map { c < $0.count ? String($0[c]) : "0" } ?? ""
            }
            summaryRows.append([String(poll.id), String(s.question.number), s.question.state.rawValue,
                                timestamp(s.question.openedAt), s.question.closedAt.map(timestamp) ?? "",
                                String(s.voters), String(s.changes), String(s.gattVerified),
                                String(s.rejections.values.reduce(0, +))] + counts + resultCells(byKind[i])
                               + textCells(s.question.definition))
        }

        var ballotsCSV: String?
        var jsonBallots: [JSONBallot]?
        if poll.mode == .roster {
            var rows = [ballotColumns]
            for b in ballots {
                rows.append([String(b.poll), String(b.question), voterText(b.voter), b.answer.description, String(b.sequence),
                             b.address, timestamp(b.firstHeard), timestamp(b.lastHeard), b.gattVerified ? "true" : "false"])
            }
            ballotsCSV = csv(rows)
            jsonBallots = ballots.map {
                JSONBallot(question: $0.question, voter: voterText($0.voter), answer: $0.answer.description, sequence: $0.sequence,
                           address: $0.address, firstHeard: timestamp($0.firstHeard), lastHeard: timestamp($0.lastHeard),
                           gattVerified: $0.gattVerified)
            }
        }

        let doc = JSONDocument(
            poll: JSONPoll(id: poll.id, voteID: voteIDText(poll.voteID), mode: poll.mode.rawValue, rule: poll.rule.rawValue,
                           title: poll.title, createdAt: timestamp(poll.createdAt), closedAt: poll.closedAt.map(timestamp)),
            questions: zip(summaries, byKind).map { s, r in
                var counts: [String: Int] = [:]
                for i in 0..<answerCount { counts[answerLabel(i)] = i < s.counts.count ? s.counts[i] : 0 }
                return JSONQuestion(number: s.question.number, state: s.question.state.rawValue,
                                    openedAt: timestamp(s.question.openedAt), closedAt: s.question.closedAt.map(timestamp),
                                    voters: s.voters, changes: s.changes, gattVerified: s.gattVerified,
                                    counts: counts, rejections: s.rejections, results: KindReport(r))
            },
            ballots: jsonBallots)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return PollExport(summaryCSV: csv(summaryRows), ballotsCSV: ballotsCSV, json: try encoder.encode(doc),
                          roundsCSV: roundsCSV(poll: poll.id, summaries: summaries))
    }

    /// The summary CSV's last columns: the question's title and its option texts (`A: text; B: text`),
    /// as the question file or the flags gave them; empty when it had none.
    public static let textColumns = ["title", "option_texts"]

    static func textCells(_ d: QuestionDefinition?) -> [String] {
        let texts = (d?.optionTexts ?? []).enumerated().map { "\(answerLabel($0.offset)): \($0.element)" }
        return [d?.title ?? "", texts.joined(separator: "; ")]
    }

    /// 0 → "A", 1 → "B", … 25 → "Z"; other values as decimal.
    public static func answerLabel(_ answer: Int) -> String {
        guard (0..<26).contains(answer), let scalar = Unicode.Scalar(65 + answer) else { return String(answer) }
        return String(Character(scalar))
    }

    /// One CSV field per RFC 4180 (quoted when it holds a comma, quote, CR or LF; quotes doubled),
    /// made safe first with ``neutralized(_:)``.
    public static func csvField(_ field: String) -> String {
        let field = neutralized(field)
        if field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" || $0 == "\r\n" }) {
            return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return field
    }

    /// A field that a spreadsheet will not run and a terminal will not interpret (roster names and
    /// student IDs come from whoever wrote the class list):
    /// - a field starting with `=`, `+`, `-`, `@`, tab or CR gets a leading `'` (OWASP CSV injection),
    ///   except a plain decimal number such as `-3`, which no spreadsheet reads as a formula;
    /// - control characters (C0, DEL, C1) and bidirectional overrides become U+FFFD.
    public static func neutralized(_ field: String) -> String {
        var cleaned = String.UnicodeScalarView()
        for c in field.unicodeScalars {
            switch c.value {
            case 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x061C, 0x202A...0x202E, 0x2066...0x2069:
                cleaned.append("\u{FFFD}")
            default:
                cleaned.append(c)
            }
        }
        let text = String(cleaned)
        guard let first = field.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first),
              !isPlainNumber(field) else { return text }
        return "'" + text
    }

    /// `-12`, `-0.5`, `7`: an optional minus, digits, at most one decimal point between digits.
    static func isPlainNumber(_ s: String) -> Bool {
        var body = Substring(s)
        if body.first == "-" { body = body.dropFirst() }
        let parts = body.split(separator: ".", omittingEmptySubsequences: false)
        return (1...2).contains(parts.count)
            && parts.allSatisfy { !$0.isEmpty && $0.unicodeScalars.allSatisfy { ("0"..."9").contains($0) } }
    }

    /// Rows to CSV text with CRLF line ends.
    public static func csv(_ rows: [[String]]) -> String {
        rows.map { $0.map(csvField).joined(separator: ",") + "\r\n" }.joined()
    }

    /// UTC ISO 8601 with milliseconds, e.g. `2026-11-21T13:41:56.123Z`.
    public static func timestamp(_ date: Date) -> String {
        let t = date.timeIntervalSince1970
        var secs = time_t(floor(t))
        var ms = Int(((t - floor(t)) * 1000).rounded())
        if ms >= 1000 { ms -= 1000; secs += 1 }
        var tm = tm()
        gmtime_r(&secs, &tm)
        func pad(_ v: Int, _ w: Int) -> String {
            let s = String(v)
            return s.count >= w ? s : String(repeating: "0", count: w - s.count) + s
        }
        return "\(pad(Int(tm.tm_year) + 1900, 4))-\(pad(Int(tm.tm_mon) + 1, 2))-\(pad(Int(tm.tm_mday), 2))T"
            + "\(pad(Int(tm.tm_hour), 2)):\(pad(Int(tm.tm_min), 2)):\(pad(Int(tm.tm_sec), 2)).\(pad(ms, 3))Z"
    }

    /// The vote ID as ``IDText/vote(_:)`` writes it (decimal); a stored ID of another length as hex.
    public static func voteIDText(_ v: Data) -> String {
        let b = [UInt8](v)
        return b.count == 2 ? IDText.vote(UInt16(b[0]) << 8 | UInt16(b[1])) : Hex.string(v)
    }

    /// A stored voter (a mode byte, then the voter ID big-endian) as ``IDText/voter(_:)`` writes
    /// it: eight hex digits, no mode (the poll's mode says whose key it is). Other lengths as hex.
    public static func voterText(_ v: Data) -> String {
        let b = [UInt8](v)
        guard b.count == 5 else { return Hex.string(v) }
        return IDText.voter(UInt32(b[1]) << 24 | UInt32(b[2]) << 16 | UInt32(b[3]) << 8 | UInt32(b[4]))
    }

    private struct JSONDocument: Encodable {
        var poll: JSONPoll
        var questions: [JSONQuestion]
        var ballots: [JSONBallot]?
    }

    private struct JSONPoll: Encodable {
        var id: Int64
        var voteID: String
        var mode: String
        var rule: String
        var title: String?
        var createdAt: String
        var closedAt: String?
    }

    private struct JSONQuestion: Encodable {
        var number: Int
        var state: String
        var openedAt: String
        var closedAt: String?
        var voters: Int
        var changes: Int
        var gattVerified: Int
        var counts: [String: Int]
        var rejections: [String: Int]
        var results: KindReport
    }

    private struct JSONBallot: Encodable {
        var question: Int
        var voter: String
        var answer: String
        var sequence: UInt32
        var address: String
        var firstHeard: String
        var lastHeard: String
        var gattVerified: Bool
    }
}
