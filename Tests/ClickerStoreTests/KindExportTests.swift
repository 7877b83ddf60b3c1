@testable import ClickerStore
import ClickerTally
import ClickerWire
import Foundation
import XCTest

/// The exports carry each kind's results: the summary CSV's result cells, the rounds CSV of a ranked
/// question, and a sealed anonymous question's results from its answer totals alone.
final class KindExportTests: XCTestCase {
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    func ranking(_ s: String) -> Answer {
        .ranking(Ranking(order: s.split(separator: ">").map { UInt8($0.unicodeScalars.first!.value - 65) })!)
    }

    /// Question 1 ranked over A–C, question 2 numeric; `mode` anonymous seals question 1 on close.
    func makePoll(mode: PollMode) throws -> (ClickerStore, PollRecord) {
        let store = try ClickerStore(path: try makeTempDir(self) + "/db.sqlite")
        let poll = try store.createPoll(voteID: Data([0x12, 0x34]), joinCode: "1234", mode: mode, title: nil, at: t0)
        try store.openQuestion(poll: poll.id, number: 1, definition: QuestionDefinition(kinds: [.ranking], options: 3), at: t0)
        // 4 × A>B>C, 3 × B>C, 2 × C>B, 1 × C alone: C goes first (tied with B, the later letter),
        // its two C>B ballots move to B, the C-only ballot is exhausted, B wins 5 of 9.
        var answers: [Answer] = Array(repeating: ranking("A>B>C"), count: 4) + Array(repeating: ranking("B>C"), count: 3)
        answers += Array(repeating: ranking("C>B"), count: 2) + [ranking("C")]
        var ballots = answers.enumerated().map { i, a in
            BallotRecord(poll: poll.id, question: 1, voter: voterID(0xA000 + UInt64(i)), answer: a, sequence: 1,
                         address: "", firstHeard: t0, lastHeard: t0, gattVerified: false)
        }
        try store.openQuestion(poll: poll.id, number: 2, definition: QuestionDefinition(kinds: [.numeric], options: 1),
                               at: t0.addingTimeInterval(60))
        for (i, v) in [8, 3, 1, 5, 2, 7, 4, 6].enumerated() {
            ballots.append(BallotRecord(poll: poll.id, question: 2, voter: voterID(0xB000 + UInt64(i)), answer: .numeric(Int16(v)),
                                        sequence: 1, address: "", firstHeard: t0, lastHeard: t0, gattVerified: false))
        }
        try store.record(ballots, rejections: [])
        return (store, poll)
    }

    func testSummaryCellsAndRoundsOfARankedAndANumericQuestion() throws {
        let (store, poll) = try makePoll(mode: .roster)
        let e = try store.export(poll: poll.id)
        let summary = try csvRecords(e.summaryCSV)
        XCTAssertEqual(summary.count, 2)
        let ranked = summary[0], numeric = summary[1]
        XCTAssertEqual(ranked["kind"], "ranked")
        // Letter columns of a ranked question: first preferences.
        XCTAssertEqual([ranked["A"], ranked["B"], ranked["C"]], ["4", "3", "3"])
        XCTAssertEqual(ranked["rounds"], "2")
        XCTAssertEqual(ranked["outcome"], "winner")
        XCTAssertEqual(ranked["winner"], "B")
        XCTAssertEqual(ranked["median"], "")
        XCTAssertEqual(numeric["kind"], "numeric")
        XCTAssertEqual(numeric["A"], "", "a numeric question has no option counts")
        XCTAssertEqual([numeric["minimum"], numeric["lower_quartile"], numeric["median"], numeric["upper_quartile"],
                        numeric["maximum"]], ["1", "2.5", "4.5", "6.5", "8"])
        XCTAssertEqual(numeric["histogram"], "1: 1; 2: 1; 3: 1; 4: 1; 5: 1; 6: 1; 7: 1; 8: 1")
        XCTAssertEqual(numeric["winner"], "")

        let rounds = try csvRecords(try XCTUnwrap(e.roundsCSV))
        XCTAssertEqual(try parseCSV(try XCTUnwrap(e.roundsCSV)).first, Exporter.roundColumns)
        XCTAssertEqual(rounds.map { "\($0["round"]!) \($0["option"]!)=\($0["votes"]!)" }, ["1 A=4", "1 B=3", "1 C=3", "2 A=4", "2 B=5"])
        XCTAssertEqual(rounds.map { $0["eliminated"]! }, ["C", "C", "C", "", ""])
        XCTAssertEqual(rounds.map { $0["exhausted"]! }, ["0", "0", "0", "1", "1"])
        XCTAssertEqual(rounds.map { $0["active"]! }, ["10", "10", "10", "9", "9"])

        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: e.json) as? [String: Any])
        let questions = try XCTUnwrap(json["questions"] as? [[String: Any]])
        let results = try XCTUnwrap(questions[0]["results"] as? [String: Any])
        XCTAssertEqual(results["winner"] as? String, "B")
        XCTAssertEqual((results["rounds"] as? [Any])?.count, 2)
        XCTAssertEqual((questions[1]["results"] as? [String: Any])?["median"] as? Double, 4.5)
    }

    func testASealedAnonymousQuestionKeepsItsResultsWithoutVoterIDs() throws {
        let (store, poll) = try makePoll(mode: .anonymous)
        let before = try store.export(poll: poll.id)
        try store.closeQuestion(poll: poll.id, number: 1, at: t0.addingTimeInterval(30))
        try store.closeQuestion(poll: poll.id, number: 2, at: t0.addingTimeInterval(90))
        XCTAssertEqual(try store.ballots(poll: poll.id), [], "sealed: no per-voter row left")
        let totals = try store.pool.read { try QuestionTotals.fetchAll($0) }
        XCTAssertEqual(totals.count, 2)
        XCTAssertEqual(totals.first { $0.question == 1 }?.answers?.map(\.count).reduce(0, +), 10)
        let after = try store.export(poll: poll.id)
        XCTAssertEqual(after.roundsCSV, before.roundsCSV)
        let cells = try csvRecords(after.summaryCSV).map { r in Exporter.resultColumns.map { r[$0] ?? "?" } }
        XCTAssertEqual(cells, try csvRecords(before.summaryCSV).map { r in Exporter.resultColumns.map { r[$0] ?? "?" } })
    }
}
