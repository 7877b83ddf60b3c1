import ClickerTransport
import PrivateFiles

/// The last ballot a voter sealed in each poll, oldest first: the pure rule behind the sequence file.
///
/// The sequence runs per poll (docs/PROTOCOL.md): it starts at 1 and every new ballot, whether for
/// a new question or a different answer, takes the next number; sealing the same answer to the
/// same question again re-sends the same ballot and takes no number.
struct SequenceBook: Equatable, Sendable {
    struct Entry: Equatable, Sendable {
        var poll: String
        var sequence: UInt16
        var question: UInt8
        /// The answer's three plaintext bytes, as sealed.
        var answer: [UInt8]
    }

    /// Oldest first; a poll appears at most once.
    private(set) var entries: [Entry] = []
    /// How many polls are remembered; the oldest are forgotten first.
    let capacity: Int

    init(capacity: Int = 256, entries: [Entry] = []) {
        self.capacity = max(1, capacity)
        self.entries = entries
    }

    /// The sequence for sealing `answer` to `question` in `poll`, and whether the book changed.
    mutating func claim(poll: String, question: UInt8, answer: [UInt8]) throws(VoterError) -> (sequence: UInt16, changed: Bool) {
        let index = entries.firstIndex { $0.poll == poll }
        if let index, entries[index].question == question, entries[index].answer == answer {
            return (entries[index].sequence, false)
        }
        let last = index.map { entries[$0].sequence } ?? 0
        guard last < UInt16.max else { throw .sequenceExhausted }
        if let index { entries.remove(at: index) }
        entries.append(Entry(poll: poll, sequence: last + 1, question: question, answer: answer))
        // Evict by age: the entry just written is the newest, so it is never the one dropped.
        if entries.count > capacity { entries.removeFirst(entries.count - capacity) }
        return (last + 1, true)
    }

    /// One line per poll: `<poll> <sequence> <question> <answer hex>`.
    var text: String {
        entries.map { e in
            "\(e.poll) \(e.sequence) \(e.question) " + Hex.string(e.answer) + "\n"
        }.joined()
    }

    /// Parses ``text``. Lines of the old per-question format (`vote/question/voter sequence`) belong
    /// to protocol-1 polls, which cannot be voted in any more, and are dropped; anything else that
    /// does not parse is reported by line number, never skipped.
    init(parsing text: String, capacity: Int = 256) throws(SequenceParseError) {
        var entries: [Entry] = []
        for (i, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.isEmpty { continue }
            let f = line.split(separator: " ", omittingEmptySubsequences: false)
            if f.count == 2, f[0].split(separator: "/").count == 3, UInt16(f[1]) != nil { continue }
            guard f.count == 4, !f[0].isEmpty, let seq = UInt16(f[1]), seq > 0, let q = UInt8(f[2]),
                  let answer = Self.bytes(hex: f[3]), answer.count == 3 else { throw SequenceParseError(line: i + 1) }
            let e = Entry(poll: String(f[0]), sequence: seq, question: q, answer: answer)
            entries.removeAll { $0.poll == e.poll }
            entries.append(e)
        }
        self.init(capacity: capacity, entries: Array(entries.suffix(max(1, capacity))))
    }

    private static func bytes(hex: Substring) -> [UInt8]? {
        let chars = Array(hex.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < chars.count {
            guard let b = UInt8(String(decoding: chars[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(b)
            i += 2
        }
        return out
    }
}

struct SequenceParseError: Error { let line: Int }

/// The sequence file `sequences` in the state directory, read and rewritten under an exclusive
/// flock on `sequences.lock`, so two voters on one device never hand out the same number.
/// Every call blocks (flock, fsync, rename): run it off the cooperative pool.
struct SequenceStore: Sendable {
    let state: StateDirectory
    var capacity = 256
    static let file = "sequences"
    static let lock = "sequences.lock"

    /// Claims the sequence for the next ballot (see ``SequenceBook/claim(poll:question:answer:)``)
    /// and persists it before returning.
    func claim(poll: String, question: UInt8, answer: [UInt8]) throws -> UInt16 {
        try state.withLock(Self.lock) {
            // A voter killed while it wrote the file left its temporary copy: no writer runs now.
            PrivateFiles.removeLeftovers(of: state.path + "/" + Self.file)
            var book = try load()
            let (sequence, changed) = try book.claim(poll: poll, question: question, answer: answer)
            if changed { try state.write(Self.file, Array(book.text.utf8)) }
            return sequence
        }
    }

    func load() throws -> SequenceBook {
        guard let bytes = try state.read(Self.file) else { return SequenceBook(capacity: capacity) }
        do {
            return try SequenceBook(parsing: String(decoding: bytes, as: UTF8.self), capacity: capacity)
        } catch {
            throw VoterStateError.damagedSequences(state.path + "/" + Self.file, line: error.line)
        }
    }
}
