@testable import ClickerStore
import Foundation
import XCTest

/// The summary CSV names each question and its options as the instructor wrote them, read back
/// from the exported file.
final class SummaryTextsTests: XCTestCase {
    func testTheSummaryCSVHasTitlesAndOptionTexts() throws {
        let dir = try makeTempDir(self)
        let store = try ClickerStore(path: dir + "/db.sqlite")
        let t0 = Date(timeIntervalSince1970: 1_790_000_000)
        let poll = try store.createPoll(voteID: Data([0x12, 0xD5]), joinCode: "4821-ABCDE-FGHJK", mode: .anonymous, at: t0)
        try store.openQuestion(poll: poll.id, number: 1,
                               definition: QuestionDefinition(kinds: [.choice], options: 3, optionTexts: ["Paris", "Lyon", "=1+1"],
                                                              title: "Capital of France, today?"), at: t0)
        try store.openQuestion(poll: poll.id, number: 2, definition: .choice(options: 4), at: t0.addingTimeInterval(60))
        let files = try store.export(poll: poll.id, to: dir + "/out")
        let path = try XCTUnwrap(files.first { $0.hasSuffix("-summary.csv") })
        let rows = try csvRecords(try String(contentsOfFile: path, encoding: .utf8))
        XCTAssertEqual(rows.count, 2)
        XCTAssertEqual(rows[0]["title"], "Capital of France, today?")
        // A formula-looking option text is neutralised, as every field of every export.
        XCTAssertEqual(rows[0]["option_texts"], Exporter.neutralized("A: Paris; B: Lyon; C: =1+1"))
        XCTAssertEqual(rows[1]["title"], "")
        XCTAssertEqual(rows[1]["option_texts"], "")
    }
}
