import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import XCTest

/// What an SVG holds, as XMLParser reads it: bars by `data-option`, their `data-count`, widths and
/// fills, the printed counts, and text elements by class; a histogram's bins by `data-bin`; an
/// instant-runoff table's rounds (`g.round`). Throws when the document is not well formed.
public final class ParsedSVG: NSObject, XMLParserDelegate {
    public private(set) var bars: [String: Int] = [:]
    public private(set) var widths: [String: Int] = [:]
    public private(set) var fills: [String] = []
    public private(set) var counts: [String: Int] = [:]
    public private(set) var title = ""
    /// Histogram bars (`rect.bar[data-bin]`): each bin's count, and the bins in document order.
    public private(set) var bins: [String: Int] = [:]
    public private(set) var binOrder: [String] = []
    /// Bars marked `data-winner`, and the `data-round` of every bar that has one.
    public private(set) var winners: [String] = []
    public private(set) var barRounds: Set<Int> = []
    /// One round of an instant-runoff table (`g.round`): its attributes and its cells' votes.
    public struct Round: Equatable, Sendable {
        public var active: Int?
        public var exhausted: Int?
        public var eliminated: String?
        public var votes: [String: Int] = [:]

        public init(active: Int?, exhausted: Int?, eliminated: String?, votes: [String: Int] = [:]) {
            self.active = active
            self.exhausted = exhausted
            self.eliminated = eliminated
            self.votes = votes
        }
    }
    /// Rounds by `data-round`, in document order.
    public private(set) var rounds: [Int: Round] = [:]
    public private(set) var roundOrder: [Int] = []
    private var openRound: Int?
    private var attributesByClass: [String: [[String: String]]] = [:]
    private var textsByClass: [String: [String]] = [:]
    private var current: (element: String, attributes: [String: String])?
    private var characters = ""
    private var root: String?

    public struct NotWellFormed: Error { public var error: Error? }

    public init(_ svg: String) throws {
        super.init()
        let parser = XMLParser(data: Data(svg.utf8))
        parser.delegate = self
        guard parser.parse() else { throw NotWellFormed(error: parser.parserError) }
        guard root == "svg" else { throw NotWellFormed(error: nil) }
    }

    public func texts(class name: String) -> [String] { textsByClass[name] ?? [] }
    /// The attributes of every `text` element of class `name`.
    public func attributes(class name: String) -> [[String: String]] { attributesByClass[name] ?? [] }

    public func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        if root == nil { root = name }
        if name == "rect", attributes["class"] == "bar", let bin = attributes["data-bin"] {
            guard let count = attributes["data-count"].flatMap({ Int($0) }) else {
                XCTFail("a bin without data-count: \(attributes)")
                return
            }
            XCTAssertNil(bins[bin], "one bar per bin")
            bins[bin] = count
            binOrder.append(bin)
        } else if name == "rect", attributes["class"] == "bar" {
            if attributes["data-winner"] == "true", let o = attributes["data-option"] { winners.append(o) }
            if let r = attributes["data-round"].flatMap({ Int($0) }) { barRounds.insert(r) }
            guard let option = attributes["data-option"], let count = attributes["data-count"].flatMap({ Int($0) }) else {
                XCTFail("a bar without data-option or data-count: \(attributes)")
                return
            }
            XCTAssertNil(bars[option], "one bar per option")
            bars[option] = count
            widths[option] = attributes["width"].flatMap { Int($0) }
            fills.append(attributes["fill"] ?? "")
        }
        if name == "g", attributes["class"] == "round" {
            guard let r = attributes["data-round"].flatMap({ Int($0) }) else {
                XCTFail("a round without data-round: \(attributes)")
                return
            }
            XCTAssertNil(rounds[r], "one row per round")
            rounds[r] = Round(active: attributes["data-active"].flatMap { Int($0) },
                              exhausted: attributes["data-exhausted"].flatMap { Int($0) },
                              eliminated: attributes["data-eliminated"])
            roundOrder.append(r)
            openRound = r
        }
        if name == "text", attributes["class"] == "votes", let r = openRound, let o = attributes["data-option"] {
            rounds[r]?.votes[o] = attributes["data-count"].flatMap { Int($0) }
        }
        if name == "text", let c = attributes["class"] { attributesByClass[c, default: []].append(attributes) }
        current = (name, attributes)
        characters = ""
    }

    public func parser(_ parser: XMLParser, foundCharacters string: String) { characters += string }

    public func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        if name == "g" { openRound = nil }
        guard let current, current.element == name else { return }
        if name == "title" { title = characters }
        if name == "text", let c = current.attributes["class"] {
            textsByClass[c, default: []].append(characters)
            if c == "count", let option = current.attributes["data-option"] { counts[option] = Int(characters) }
        }
        self.current = nil
    }
}
