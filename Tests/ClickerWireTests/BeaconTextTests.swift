import ClickerWire
import XCTest

/// The question text of docs/PROTOCOL.md §11.5: the block, its pages, and reassembly against the
/// digest of the STATE frame.
final class BeaconTextTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // constant, known good
    lazy var key = BeaconKey(pollSecret(code))
    let text = QuestionText(title: "Qu'est-ce qui pèse le plus ?", options: ["Un kilo de plumes", "Un kilo de plomb", "Les deux ⚖️"])

    func pages(_ t: QuestionText, chunk: Int, digest: UInt32? = nil) throws -> [BeaconTextPage] {
        let block = try XCTUnwrap(t.block)
        let chunks = try XCTUnwrap(QuestionText.chunks(block, chunkLength: chunk))
        return chunks.enumerated().map { i, c in
            BeaconTextPage(counter: UInt32(i), digest: digest ?? key.textDigest(block), index: UInt8(i), count: UInt8(chunks.count), chunk: c)
        }
    }

    func testTheBlockRoundTripsAndRefusesWhatItCannotCarry() throws {
        let block = try XCTUnwrap(text.block)
        XCTAssertEqual(QuestionText(block: block), text)
        XCTAssertEqual(block.filter { $0 == 0 }.count, 3)
        XCTAssertNil(QuestionText(title: "a\u{0}b").block, "a text with 00 cannot be carried")
        XCTAssertNil(QuestionText(title: "", options: []).block, "an empty block has no pages")
        XCTAssertNil(QuestionText(title: "t", options: Array(repeating: "o", count: 9)).block)
        XCTAssertNil(QuestionText(block: [0x41, 0xC3]), "not UTF-8")
        XCTAssertNil(QuestionText(block: Array(repeating: 0, count: 9)), "ten parts: nine options")
        XCTAssertEqual(QuestionText(block: [0x41, 0]), QuestionText(title: "A", options: [""]))
    }

    func testPagesReassembleInAnyOrderAcrossCutCharacters() throws {
        let ps = try pages(text, chunk: 8)
        XCTAssertGreaterThan(ps.count, 5)
        // Some page ends inside a UTF-8 character.
        XCTAssertTrue(ps.contains { String(validating: $0.chunk, as: UTF8.self) == nil })
        var a = BeaconTextAssembler(digest: ps[0].digest)
        for (n, p) in ps.reversed().enumerated() {
            let sealed = try BeaconCodec.seal(.text(p), key: key)
            guard case .text(let opened) = try BeaconCodec.open(sealed, key: key).get() else { return XCTFail("not TEXT") }
            let r = a.add(opened, key: key)
            if n < ps.count - 1 { XCTAssertEqual(r, .incomplete(have: n + 1, of: ps.count)) } else { XCTAssertEqual(r, .complete(text)) }
        }
    }

    /// A page whose tag passes (a join-code holder's) but whose bytes are not the tally's text never
    /// shows: the block does not hash to the STATE's digest; the real pages then complete it.
    func testPagesOfAnotherTextUnderTheSameDigestNeverShow() throws {
        let real = try pages(text, chunk: 11)
        let fake = try pages(QuestionText(title: "Qu'est-ce qui pèse le moins ?", options: text.options), chunk: 11, digest: real[0].digest)
        XCTAssertEqual(real.count, fake.count)
        var a = BeaconTextAssembler(digest: real[0].digest)
        for p in fake.dropLast() { _ = a.add(p, key: key) }
        XCTAssertEqual(a.add(real.last!, key: key), .mismatch)
        var result: BeaconTextAssembler.Progress?
        for p in real { result = a.add(p, key: key) }
        XCTAssertEqual(result, .complete(text))
    }

    func testPagesOfAnotherDigestAreIgnoredAndARepagedTextStartsOver() throws {
        let ps = try pages(text, chunk: 8)
        var a = BeaconTextAssembler(digest: ps[0].digest &+ 1)
        XCTAssertEqual(a.add(ps[0], key: key), .otherText)
        var b = BeaconTextAssembler(digest: ps[0].digest)
        _ = b.add(ps[0], key: key)
        _ = b.add(ps[1], key: key)
        // The tally re-pages the same text in extended pages: the legacy pages held are dropped.
        let ext = try pages(text, chunk: BeaconFormat.maxChunkLength)
        XCTAssertEqual(ext.count, 1)
        XCTAssertEqual(b.add(ext[0], key: key), .complete(text))
    }

    /// PROTOCOL.md §11.5: a page whose count differs from the pages held drops them and is kept, its
    /// count now the one gathered; the pages of the new cut then complete the block.
    func testAPageOfAnotherCountDropsThePagesHeldAndIsKept() throws {
        let legacy = try pages(text, chunk: 8)
        let other = try pages(text, chunk: 20)
        XCTAssertNotEqual(legacy.count, other.count)
        var a = BeaconTextAssembler(digest: legacy[0].digest)
        for p in legacy.dropLast() { _ = a.add(p, key: key) }
        XCTAssertEqual(a.add(other[1], key: key), .incomplete(have: 1, of: other.count))
        var result: BeaconTextAssembler.Progress = .otherText
        for p in other where p.index != 1 { result = a.add(p, key: key) }
        XCTAssertEqual(result, .complete(text))
    }
}
