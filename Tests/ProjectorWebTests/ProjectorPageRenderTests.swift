import ClickerTally
import Foundation
import ProjectorPage
import ProjectorWeb
import XCTest

/// The page's script in a real browser: Debian's chromium (installed by `scripts/setup.sh --test`),
/// headless, renders an encoded snapshot handed to the page by a stand-in `EventSource`, and the test
/// reads the DOM it built. Virtual time (`--virtual-time-budget`), not a wait: the browser runs the
/// page until it is idle. Skipped where chromium is not installed.
final class ProjectorPageRenderTests: XCTestCase {
    static let chromium = "/usr/bin/chromium"

    /// The DOM after the page rendered `snapshot`.
    func render(_ snapshot: ProjectorSnapshot) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: Self.chromium) else { throw XCTSkip("no \(Self.chromium)") }
        let json = String(decoding: ProjectorFeed.encode(snapshot), as: UTF8.self)
        let literal = String(decoding: try JSONEncoder().encode(json), as: UTF8.self)
        // Delivers the snapshot as the server's first event would.
        let stub = "<script>class EventSource{constructor(){this.readyState=1;setTimeout(()=>this.listener({data:\(literal)}),0);}"
            + "addEventListener(name,f){if(name===\"snapshot\")this.listener=f;}close(){}}EventSource.CLOSED=2;</script>"
        let html = ProjectorPage.html.replacingOccurrences(of: "<title>", with: stub + "<title>")
        let path = NSTemporaryDirectory() + "projector-render-\(UUID().uuidString).html"
        try html.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["60", Self.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                             "--dump-dom", "file://" + path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let dom = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0)
        return dom
    }

    /// Every start tag named `tag` whose attributes include `having`, as attribute dictionaries.
    func elements(_ dom: String, _ tag: String, having: String) -> [[String: String]] {
        let tagPattern = try! NSRegularExpression(pattern: "<\(tag)\\b([^>]*)>")  // constant pattern
        let attributePattern = try! NSRegularExpression(pattern: "([a-z-]+)=\"([^\"]*)\"")  // constant pattern
        let ns = dom as NSString
        return tagPattern.matches(in: dom, range: NSRange(location: 0, length: ns.length)).compactMap { m in
            let text = ns.substring(with: m.range(at: 1))
            var attributes: [String: String] = [:]
            for a in attributePattern.matches(in: text, range: NSRange(location: 0, length: (text as NSString).length)) {
                attributes[(text as NSString).substring(with: a.range(at: 1))] = (text as NSString).substring(with: a.range(at: 2))
            }
            return attributes[having] == nil ? nil : attributes
        }
    }

    /// A ranked question: the last round's bars with the winner marked, one table row per round with
    /// each option's votes, the exhausted and active ballots and the option eliminated.
    func testRankedQuestionShowsTheLastRoundAndEveryRound() throws {
        let spec = QuestionSpec(number: 4, options: 3, kinds: [.ranking], optionTexts: ["<b>Paris</b>", "Rome"])
        let s = ProjectorSnapshot(joinCode: testCode, roster: false, spec: spec, open: false, hidden: false, voters: 12,
                                  counts: ["A>C": 5, "B>C": 4, "C>": 1, "C>B": 2])
        let dom = try render(s)
        XCTAssertTrue(dom.contains("data-kind=\"rounds\""), dom)
        let bars = elements(dom, "div", having: "data-option").filter { $0["class"] == "bar" }
        XCTAssertEqual(bars.map { $0["data-option"] }, ["A", "B"])
        XCTAssertEqual(bars.map { $0["data-count"] }, ["5", "6"])
        XCTAssertEqual(bars.filter { $0["data-winner"] == "true" }.map { $0["data-option"] }, ["B"])
        let rows = elements(dom, "tr", having: "data-round")
        XCTAssertEqual(rows.map { $0["data-round"] }, ["1", "2"])
        let cells = elements(dom, "td", having: "data-count").map { "\($0["data-option"] ?? "")\($0["data-count"] ?? "")" }
        XCTAssertEqual(cells, ["A5", "B4", "C3", "A5", "B6"])
        XCTAssertEqual(elements(dom, "td", having: "data-exhausted").map { $0["data-exhausted"] }, ["0", "1"])
        XCTAssertEqual(elements(dom, "td", having: "data-active").map { $0["data-active"] }, ["12", "11"])
        XCTAssertEqual(elements(dom, "td", having: "data-eliminated").map { $0["data-eliminated"] }, ["C"])
        XCTAssertTrue(dom.contains("<b id=\"leader\">B</b>"), dom)
        XCTAssertTrue(dom.contains("&lt;b&gt;Paris&lt;/b&gt;"), "option text set as text")
    }

    /// A numeric question: one bar per bin, and the statistics in the question's units.
    func testNumericQuestionShowsItsHistogramAndStatistics() throws {
        let spec = QuestionSpec(number: 2, kinds: [.numeric], numeric: NumericRange(decimals: 1))
        let s = ProjectorSnapshot(joinCode: testCode, roster: false, spec: spec, open: true, hidden: false, voters: 8,
                                  counts: ["-5": 1, "12": 2, "15": 1, "20": 3, "30": 1])
        let dom = try render(s)
        XCTAssertTrue(dom.contains("data-kind=\"histogram\""), dom)
        let bins = elements(dom, "div", having: "data-bin")
        XCTAssertEqual(bins.map { $0["data-bin"] }, ["-0.5", "1.2", "1.5", "2.0", "3.0"])
        XCTAssertEqual(bins.map { $0["data-count"] }, ["1", "2", "1", "3", "1"])
        XCTAssertEqual(elements(dom, "div", having: "data-option").filter { $0["class"] == "bar" }.count, 0)
        for (id, value) in [("median", "1.75"), ("lowerQuartile", "1.2"), ("upperQuartile", "2.0"), ("minimum", "-0.5"),
                            ("maximum", "3.0")] {
            XCTAssertTrue(dom.contains("<b id=\"\(id)\">\(value)</b>"), id)
        }
    }

    /// Hidden: no bar, bin, round or statistic in the DOM.
    func testHiddenRankedQuestionShowsNothing() throws {
        let s = ProjectorSnapshot(joinCode: testCode, roster: false, spec: QuestionSpec(number: 1, options: 3, kinds: [.ranking]),
                                  open: true, hidden: true, voters: 3, counts: ["A>B": 2, "C>": 1])
        let dom = try render(s)
        XCTAssertTrue(dom.contains("data-hidden=\"true\""), dom)
        let main = try XCTUnwrap(dom.range(of: "<main>").flatMap { start in
            dom.range(of: "</main>").map { String(dom[start.lowerBound..<$0.upperBound]) }
        })
        XCTAssertTrue(main.contains("id=\"results\""), main)
        for hook in ["data-count", "data-round", "data-bin", "id=\"rounds\"", "id=\"outcome\"", "id=\"median\"", "class=\"bar\""] {
            XCTAssertFalse(main.contains(hook), hook)
        }
    }
}
