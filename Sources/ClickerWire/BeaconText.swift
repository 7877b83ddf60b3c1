/// A question's title and option texts as the beacon carries them (docs/PROTOCOL.md §11.7): the
/// *text block* is the UTF-8 title, then for each option a 0x00 byte and the option's UTF-8 text.
/// TEXT frames carry it in pages; its digest (``BeaconKey/textDigest(_:)``) is in the STATE frame.
public struct QuestionText: Sendable, Hashable {
    public var title: String
    /// Texts of options A, B, … (at most ``Answer/maxOptions``); empty for a question without
    /// option texts.
    public var options: [String]

    public init(title: String, options: [String] = []) {
        self.title = title
        self.options = options
    }

    /// The text block; nil when a text contains a 0x00 byte, there are more than 8 options, or the
    /// block is empty or needs more than 255 pages of the largest chunk.
    public var block: [UInt8]? {
        guard options.count <= Answer.maxOptions else { return nil }
        var out = Array(title.utf8)
        for o in options { out.append(0); out += Array(o.utf8) }
        guard !out.isEmpty, out.count <= 255 * BeaconFormat.maxChunkLength,
              !title.utf8.contains(0), !options.contains(where: { $0.utf8.contains(0) }) else { return nil }
        return out
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
    var count: UInt8 = 0
    var pages: [UInt8: [UInt8]] = [:]

    public init(digest: UInt32) { self.digest = digest }

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
        guard key.textDigest(block) == digest, let text = QuestionText(block: block) else { return .mismatch }
        return .complete(text)
    }
}
