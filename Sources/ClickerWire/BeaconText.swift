/// A question's title and option texts as the beacon carries them (docs/PROTOCOL.md §11.5): the
/// *text block* is the UTF-8 title, then for each option a 0x00 byte and the option's UTF-8 text.
/// TEXT frames carry it in pages; its digest (``BeaconKey/textDigest(_:)``) is in the STATE frame.
///
/// A numeric question's block (version 4) starts with its form, 5 bytes: lowest(2) ‖ highest(2),
/// signed big-endian wire values, ‖ decimals(1), 0…4; then the title, and no options.
public struct QuestionText: Sendable, Hashable {
    public var title: String
    /// Texts of options A, B, … (at most ``Answer/maxOptions``); empty for a question without
    /// option texts.
    public var options: [String]
    /// A numeric question's range and decimals; nil for every other kind.
    public var numeric: NumericForm?

    public init(title: String, options: [String] = [], numeric: NumericForm? = nil) {
        self.title = title
        self.options = numeric == nil ? options : []
        self.numeric = numeric
    }

    /// The text block; nil when a text contains a 0x00 byte, there are more than 8 options, or the
    /// block is empty or needs more than 255 pages of the largest chunk.
    public var block: [UInt8]? {
        guard options.count <= Answer.maxOptions else { return nil }
        var out = numeric?.bytes ?? []
        out += Array(title.utf8)
        for o in options { out.append(0); out += Array(o.utf8) }
        guard !out.isEmpty, out.count <= 255 * BeaconFormat.maxChunkLength,
              !title.utf8.contains(0), !options.contains(where: { $0.utf8.contains(0) }) else { return nil }
        return out
    }

    /// The text block of a question of `kind`: a numeric question's starts with its form.
    public init?(block: [UInt8], kind: QuestionKind) {
        guard kind == .numeric else { self.init(block: block); return }
        guard block.count >= NumericForm.length, let form = NumericForm(bytes: block.prefix(NumericForm.length)),
              let title = String(validating: block.dropFirst(NumericForm.length), as: UTF8.self), !title.utf8.contains(0)
        else { return nil }
        self.init(title: title, numeric: form)
    }

    /// The title and options of a text block; nil unless it is valid UTF-8 with at most 8 options.
    public init?(block: [UInt8]) {
        let parts = block.split(separator: 0, omittingEmptySubsequences: false)
        guard let first = parts.first, parts.count <= Answer.maxOptions + 1 else { return nil }
        var texts: [String] = []
        for p in parts {
            guard let s = String(validating: p, as: UTF8.self) else { return nil }
            texts.append(s)
        }
        title = String(decoding: first, as: UTF8.self)
        options = Array(texts.dropFirst())
        numeric = nil
    }

    /// The block cut into chunks of at most `chunkLength` bytes, in page order; nil when that takes
    /// more than 255 pages or `chunkLength` is not 1…``BeaconFormat/maxChunkLength``.
    public static func chunks(_ block: [UInt8], chunkLength: Int) -> [[UInt8]]? {
        guard (1...BeaconFormat.maxChunkLength).contains(chunkLength), !block.isEmpty else { return nil }
        let chunks = stride(from: 0, to: block.count, by: chunkLength).map { Array(block[$0..<min($0 + chunkLength, block.count)]) }
        return chunks.count <= 255 ? chunks : nil
    }
}

/// A voter's reassembly of one text block from authentic TEXT pages: keeps the pages of the digest
/// it waits for (the open question's, from its STATE frame), and when it has all of them checks
/// that the block hashes to that digest. Pure value; memory is bounded by 255 pages of 231 bytes.
public struct BeaconTextAssembler: Sendable, Hashable {
    /// The digest the STATE frame announced.
    public let digest: UInt32
    /// The 16-byte digest a signed STATE announced: the block must have it (nil: the 4-byte one).
    public let strongDigest: [UInt8]?
    /// The question's kind (a numeric question's block starts with its form).
    public let kind: QuestionKind?
    var count: UInt8 = 0
    var pages: [UInt8: [UInt8]] = [:]

    public init(digest: UInt32, strongDigest: [UInt8]? = nil, kind: QuestionKind? = nil) {
        self.digest = digest
        self.strongDigest = strongDigest
        self.kind = kind
    }

    /// The assembler of the text a STATE's question announces; nil when it has none.
    public init?(question q: BeaconQuestion) {
        guard let d = q.textDigest else { return nil }
        self.init(digest: d, strongDigest: q.strongDigest, kind: q.kind)
    }

    /// What adding a page gave.
    public enum Progress: Sendable, Hashable {
        /// A page of another text block: ignored.
        case otherText
        /// Stored (or already held); `have` of `of` pages.
        case incomplete(have: Int, of: Int)
        /// Every page arrived and the block hashes to the digest.
        case complete(QuestionText)
        /// Every page arrived but the block does not hash to the digest, or is not a text block:
        /// the pages are dropped and gathered again.
        case mismatch
    }

    /// Adds an authentic page. A page whose count differs from the pages held so far (the tally
    /// re-paged the text) replaces them.
    public mutating func add(_ page: BeaconTextPage, key: BeaconKey) -> Progress {
        guard page.digest == digest, page.count > 0, page.index < page.count else { return .otherText }
        if page.count != count { count = page.count; pages = [:] }
        pages[page.index] = page.chunk
        guard pages.count == Int(count) else { return .incomplete(have: pages.count, of: Int(count)) }
        var block: [UInt8] = []
        for i in 0..<count { block += pages[i] ?? [] }
        pages = [:]
        let matches = strongDigest.map { key.strongTextDigest(block) == $0 } ?? (key.textDigest(block) == digest)
        let text = kind.map { QuestionText(block: block, kind: $0) } ?? QuestionText(block: block)
        guard matches, let text else { return .mismatch }
        return .complete(text)
    }
}

/// A numeric question's range and decimals as its text block carries them (docs/PROTOCOL.md §11.5):
/// `value / 10^decimals` is the number a ballot's wire value means.
public struct NumericForm: Sendable, Hashable {
    public static let length = 5
    public var lowest: Int16
    public var highest: Int16
    /// 0…4.
    public var decimals: UInt8

    public init?(lowest: Int16, highest: Int16, decimals: Int) {
        guard lowest <= highest, (0...4).contains(decimals) else { return nil }
        self.lowest = lowest
        self.highest = highest
        self.decimals = UInt8(decimals)
    }

    /// From the 5 bytes lowest(2) ‖ highest(2) ‖ decimals(1); nil when lowest > highest or decimals > 4.
    public init?(bytes: some Collection<UInt8>) {
        let b = Array(bytes)
        guard b.count == Self.length else { return nil }
        self.init(lowest: Int16(bitPattern: UInt16(b[0]) << 8 | UInt16(b[1])),
                  highest: Int16(bitPattern: UInt16(b[2]) << 8 | UInt16(b[3])), decimals: Int(b[4]))
    }

    public var bytes: [UInt8] {
        let lo = UInt16(bitPattern: lowest), hi = UInt16(bitPattern: highest)
        return [UInt8(lo >> 8), UInt8(truncatingIfNeeded: lo), UInt8(hi >> 8), UInt8(truncatingIfNeeded: hi), decimals]
    }

    /// Wire values the question takes.
    public var range: ClosedRange<Int16> { lowest...highest }
}
