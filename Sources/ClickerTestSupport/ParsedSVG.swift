import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import XCTest

/// What an SVG holds, as XMLParser reads it: bars by `data-option`, their `data-count`, widths and
/// fills, the printed counts, and text elements by class. Throws when the document is not well formed.
public final class ParsedSVG: NSObject, XMLParserDelegate {
    public private(set) var bars: [String: Int] = [:]
    public private(set) var widths: [String: Int] = [:]
    public private(set) var fills: [String] = []
    public private(set) var counts: [String: Int] = [:]
    public private(set) var title = ""
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

    public func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        if root == nil { root = name }
        if name == "rect", attributes["class"] == "bar" {
            guard let option = attributes["data-option"], let count = attributes["data-count"].flatMap({ Int($0) }) else {
                XCTFail("a bar without data-option or data-count: \(attributes)")
                return
            }
            XCTAssertNil(bars[option], "one bar per option")
            bars[option] = count
            widths[option] = attributes["width"].flatMap { Int($0) }
            fills.append(attributes["fill"] ?? "")
        }
        current = (name, attributes)
        characters = ""
    }

    public func parser(_ parser: XMLParser, foundCharacters string: String) { characters += string }

    public func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard let current, current.element == name else { return }
        if name == "title" { title = characters }
        if name == "text", let c = current.attributes["class"] {
            textsByClass[c, default: []].append(characters)
            if c == "count", let option = current.attributes["data-option"] { counts[option] = Int(characters) }
        }
        self.current = nil
    }
}
