import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import TallyDaemon
import TerminalView
import XCTest

/// Results by kind through the daemon: `--json` (the encoded `PollResults`) carries every
/// instant-runoff round, the live view model shows them, and a closed anonymous question keeps them.
final class KindResultsDaemonTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // test constant, not input

    func ranking(_ s: String) -> Answer {
        .ranking(Ranking(order: s.split(separator: ">").map { UInt8($0.unicodeScalars.first!.value - 65) })!)
    }

    /// Ten voter IDs that occur nowhere else.
    let voters = (UInt32(1)...10).map { 0x5EA1_0000 | $0 &* 613 }

    /// 4 × A>B>C, 3 × B>C, 2 × C>B, 1 × C alone, on an anonymous poll with a database.
    func rankedPoll() async throws -> (PollController, String) {
        let dir = NSTemporaryDirectory() + "clicker-kinds-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let store = try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
        var options = PollOptions(joinCode: code, options: 3, confirmByGATT: false)
        options.adHoc = QuestionSpec(number: 1, options: 3, kinds: [.ranking])
        let controller = try PollController(options: options, store: store)
        let cast = Array(repeating: "A>B>C", count: 4) + Array(repeating: "B>C", count: 3) + ["C>B", "C>B", "C"]
        for (i, text) in cast.enumerated() {
            await controller.ingest(sealedReport(code, voter: voters[i], answer: ranking(text)))
        }
        return (controller, dir)
    }

    /// The JSON that `clicker-tally --json` prints, as a script reads it.
    func json(_ r: PollResults) throws -> [String: Any] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try XCTUnwrap(JSONSerialization.jsonObject(with: encoder.encode(r)) as? [String: Any])
    }

    func testJSONCarriesEveryInstantRunoffRound() async throws {
        let (controller, _) = try await rankedPoll()
        let r = await controller.results()
        XCTAssertEqual(r.voters, 10)
        let results = try XCTUnwrap(try json(r)["results"] as? [String: Any])
        XCTAssertEqual(results["kind"] as? String, "ranked")
        XCTAssertEqual(results["ballots"] as? Int, 10)
        XCTAssertEqual(results["outcome"] as? String, "winner")
        XCTAssertEqual(results["winner"] as? String, "B")
        let rounds = try XCTUnwrap(results["rounds"] as? [[String: Any]])
        XCTAssertEqual(rounds.count, 2)
        func votes(_ round: [String: Any]) -> [String] {
            (round["votes"] as? [[String: Any]] ?? []).map { "\($0["option"] ?? "?")=\($0["count"] ?? "?")" }
        }
        XCTAssertEqual(votes(rounds[0]), ["A=4", "B=3", "C=3"])
        XCTAssertEqual(rounds[0]["eliminated"] as? String, "C")
        XCTAssertEqual(rounds[0]["exhausted"] as? Int, 0)
        XCTAssertEqual(votes(rounds[1]), ["A=4", "B=5"])
        XCTAssertEqual(rounds[1]["active"] as? Int, 9)
        XCTAssertEqual(rounds[1]["exhausted"] as? Int, 1)
        XCTAssertNil(rounds[1]["eliminated"])
        // The text summary (`clicker-tally` at the end of a run, `results` without --json).
        XCTAssertEqual(r.results?.summaryLines, ["round 1: A 4 · B 3 · C 3 · exhausted 0 → C out",
                                                 "round 2: A 4 · B 5 · exhausted 1",
                                                 "winner B (5 of 9 active ballots, round 2)"])
        // `results --json` reads it back as the same value.
        let back = try JSONDecoder().decode(PollResults.self, from: JSONEncoder().encode(r))
        XCTAssertEqual(back, r)
    }

    func testTheLiveViewShowsTheRounds() async throws {
        let (controller, _) = try await rankedPoll()
        await controller.setCountsShown(true)
        try await controller.closeQuestion()
        let m = await controller.viewModel()
        XCTAssertEqual(m.answers.map { "\($0.label)=\($0.count)" }, ["A=4", "B=5"], "bars: the last round")
        XCTAssertEqual(m.barsCaption, "Round 2 of instant-runoff · 10 ballots")
        XCTAssertEqual(m.details, ["Round 1: A 4 · B 3 · C 3 · exhausted 0 → C out", "Round 2: A 4 · B 5 · exhausted 1",
                                   "Winner B (5 of 9 active ballots, round 2)"])
    }

    /// The live view's lines under the bars and the text summary are one writer's: the same lines
    /// (the view's as sentences), but for the histogram the view draws as bars and the combinations
    /// it does not list.
    func testTheViewsLinesAreTheSummarysLines() {
        func r(_ s: String) -> Answer { ranking(s) }
        let cases: [(QuestionSpec, [Answer: Int])] = [
            (QuestionSpec(number: 1, options: 3, kinds: [.ranking]), [r("A>B>C"): 4, r("B>C"): 3, r("C>B"): 2, r("C"): 1]),
            (QuestionSpec(number: 1, options: 3, kinds: [.ranking]), [r("A>B"): 2, r("B>A"): 2]),
            (QuestionSpec(number: 1, options: 3, kinds: [.ranking]), [:]),
            (QuestionSpec(number: 1, options: 4, kinds: [.multiSelect]), [.multiSelect(0b101): 3, .multiSelect(0b10): 1]),
            (QuestionSpec(number: 1, kinds: [.numeric], numeric: NumericRange(decimals: 2)),
             [.numeric(-15): 1, .numeric(20): 2, .numeric(3): 1]),
        ]
        for (spec, counts) in cases {
            let results = KindResults(spec: spec, counts: counts)
            let summary = KindReport(results).summaryLines
            let shown = ResultsPanel(results).details
            XCTAssertFalse(summary.isEmpty, "\(counts)")
            XCTAssertEqual(shown, summary.filter { !$0.hasPrefix("histogram: ") }.map { $0.prefix(1).uppercased() + $0.dropFirst() },
                           "\(counts)")
        }
        // A tie says how many votes each tied option holds, in the view and in the summary alike.
        let tie = KindReport(KindResults(spec: QuestionSpec(number: 1, options: 3, kinds: [.ranking]),
                                         counts: [r("A>B"): 2, r("B>A"): 2])).summaryLines
        XCTAssertEqual(tie.last, "tie A, B (2 each, round 2)")
    }

    func testAClosedAnonymousRankedQuestionKeepsItsRoundsAndNoVoter() async throws {
        let (controller, dir) = try await rankedPoll()
        let open = await controller.results()
        XCTAssertEqual(open.ballots.count, 10)
        try await controller.closeQuestion()
        let closed = await controller.results(question: 1)
        XCTAssertEqual(closed.ballots, [], "no voter listed once closed")
        XCTAssertEqual(closed.results, open.results, "the rounds survive the seal")
        XCTAssertEqual(closed.results?.rounds?.count, 2)
        // In the database: the answers with their counts, no voter ID.
        let reopened = try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
        XCTAssertEqual(try reopened.ballots(poll: 1), [])
        let summary = try reopened.summary(poll: 1)
        XCTAssertEqual(summary.first?.answers[ranking("A>B>C")], 4)
        XCTAssertEqual(summary.first?.answers.values.reduce(0, +), 10)
        // A restart of the tally shows the same rounds, from the totals and the stored definition.
        let resumed = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: reopened,
                                         start: .resume(maxAge: .seconds(3600)))
        let back = await resumed.results(question: 1)
        XCTAssertEqual(back.results, open.results)
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) {
            let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))
            for v in voters {
                let bytes = [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
                XCTAssertNil(data.range(of: Data(bytes)), "voter \(IDText.voter(v)) in \(name)")
                XCTAssertNil(data.range(of: Data(IDText.voter(v).utf8)), "voter \(IDText.voter(v)) as text in \(name)")
            }
        }
    }

    func testTextSummaryOfANumericQuestionKeepsItsDecimals() {
        let spec = QuestionSpec(number: 1, kinds: [.numeric], numeric: NumericRange(decimals: 1))
        let report = KindReport(KindResults(spec: spec, counts: [.numeric(15): 1, .numeric(20): 1, .numeric(25): 1, .numeric(-5): 1]))
        XCTAssertEqual(report.summaryLines, ["median 1.75 · quartiles 0.5 and 2.25 · lowest -0.5 · highest 2.5",
                                             "histogram: -0.5: 1 · 1.5: 1 · 2.0: 1 · 2.5: 1"])
    }
}
