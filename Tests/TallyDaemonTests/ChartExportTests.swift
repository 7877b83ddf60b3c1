import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import TallyDaemon
import XCTest

/// `clicker-tally export` writes one SVG chart per question next to the CSVs, well formed and with
/// the counts the results report, and never replaces an earlier export's chart.
final class ChartExportTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func report(voter: UInt32, answer: Answer, question: UInt8) -> AdvertisementReport {
        let b = Ballot(voteID: code.voteID, question: question, voterID: voter, sequence: 1, answer: answer)
        return AdvertisementReport(address: DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(voter)), rssi: -60,
                                   companyID: BallotFormat.companyID,
                                   data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(code))),
                                   timestamp: RadioInstant(nanoseconds: 1_000_000))
    }

    func testExportWritesOneChartPerQuestionWithTheResultsCounts() async throws {
        let dir = NSTemporaryDirectory() + "clicker-charts-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let store = try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: store)
        // Question 1: closed, so an anonymous poll keeps only its totals; question 2 stays open.
        for (voter, letter) in [(1, 0), (2, 2), (3, 2), (4, 3)] {
            await controller.ingest(report(voter: UInt32(voter), answer: .choice(UInt8(letter)), question: 1))
        }
        let first = await controller.results(question: 1)
        try await controller.nextQuestion()
        for voter in 10..<17 {
            await controller.ingest(report(voter: UInt32(voter), answer: .choice(voter % 2 == 0 ? 1 : 3), question: 2))
        }
        let second = await controller.results(question: 2)
        XCTAssertEqual(first.counts, ["A": 1, "B": 0, "C": 2, "D": 1])
        XCTAssertEqual(second.counts, ["A": 0, "B": 4, "C": 0, "D": 3])

        let files = try await controller.export(to: dir + "/out")
        let charts = files.filter { $0.hasSuffix(".svg") }
        XCTAssertEqual(charts.count, 2, "one chart per question: \(files)")
        let csv = try XCTUnwrap(files.first { $0.hasSuffix("-summary.csv") })
        let stem = String(csv.dropLast("-summary.csv".count))
        XCTAssertEqual(charts, [stem + "-q1.svg", stem + "-q2.svg"], "next to the CSVs, by the same naming rule")
        for (path, results) in zip(charts, [first, second]) {
            let doc = try ParsedSVG(try String(contentsOfFile: path, encoding: .utf8))
            XCTAssertEqual(doc.bars, results.counts, path)
            XCTAssertEqual(doc.counts, results.counts, "the printed numbers: \(path)")
            XCTAssertEqual(doc.texts(class: "voters"), ["\(results.voters) voters"])
            var st = stat()
            XCTAssertEqual(stat(path, &st), 0)
            XCTAssertEqual(st.st_mode & 0o777, 0o600)
        }

        // A second export never replaces the first: its charts take the next free stem.
        let before = try String(contentsOfFile: charts[0], encoding: .utf8)
        await controller.ingest(report(voter: 30, answer: .choice(0), question: 2))
        let again = try await controller.export(to: dir + "/out").filter { $0.hasSuffix(".svg") }
        XCTAssertEqual(again, [stem + "-2-q1.svg", stem + "-2-q2.svg"])
        XCTAssertEqual(try String(contentsOfFile: charts[0], encoding: .utf8), before)
        XCTAssertEqual(try ParsedSVG(try String(contentsOfFile: again[1], encoding: .utf8)).bars["A"], 1)
    }

    /// Charts of a question set: titles and option texts from each question; a multi-select question
    /// counts each option chosen, and still does from its sealed totals once closed.
    func testChartsOfAQuestionSetAlsoFromSealedTotalsOfAnotherKind() async throws {
        let dir = NSTemporaryDirectory() + "clicker-charts-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let store = try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.questionSet = [
            QuestionSpec(number: 1, options: 3, title: "Pick <one> & go", optionTexts: ["x", "y", "z"]),
            QuestionSpec(number: 2, options: 3, kinds: [.multiSelect], title: "Several", optionTexts: ["p", "q", "r"]),
        ]
        let controller = try PollController(options: options, store: store)
        await controller.ingest(report(voter: 1, answer: .choice(2), question: 1))
        await controller.ingest(report(voter: 2, answer: .choice(2), question: 1))
        try await controller.nextQuestion()
        await controller.ingest(report(voter: 3, answer: .multiSelect(0b011), question: 2))
        await controller.ingest(report(voter: 4, answer: .multiSelect(0b110), question: 2))
        let voters = await controller.results(question: 2).voters
        XCTAssertEqual(voters, 2)

        let charts = try await controller.export(to: dir + "/out").filter { $0.hasSuffix(".svg") }
        XCTAssertEqual(charts.count, 2)
        let first = try ParsedSVG(try String(contentsOfFile: charts[0], encoding: .utf8))
        XCTAssertEqual(first.bars, ["A": 0, "B": 0, "C": 2], "question 1, sealed: from its totals")
        XCTAssertEqual(first.texts(class: "title"), ["Pick <one> & go"])
        XCTAssertEqual(first.texts(class: "option-text"), ["x", "y", "z"])
        let second = try ParsedSVG(try String(contentsOfFile: charts[1], encoding: .utf8))
        XCTAssertEqual(second.bars, ["A+": 1, "B+": 2, "C+": 1], "question 2, open: each option chosen")
        XCTAssertEqual(second.texts(class: "title"), ["Several"])

        try await controller.closeQuestion()
        let after = try await controller.export(to: dir + "/out").filter { $0.hasSuffix(".svg") }
        XCTAssertEqual(after.map { String($0.suffix(7)) }, ["-q1.svg", "-q2.svg"])
        let sealed = try ParsedSVG(try String(contentsOfFile: after[1], encoding: .utf8))
        XCTAssertEqual(sealed.bars, ["A+": 1, "B+": 2, "C+": 1], "question 2, sealed: from the answers its totals keep")
    }

    /// A ranked and a numeric question, both closed (an anonymous poll then keeps only their counted
    /// answers, without voter IDs): the export draws the ranked one's instant-runoff rounds and the
    /// numeric one's histogram from those totals, with the counts `results` reports.
    func testSealedRankedAndNumericQuestionsGetTheirRoundsAndHistogram() async throws {
        let dir = NSTemporaryDirectory() + "clicker-charts-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let store = try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.questionSet = [
            QuestionSpec(number: 1, options: 3, kinds: [.ranking], title: "Rank them"),
            QuestionSpec(number: 2, options: 1, kinds: [.numeric], title: "How far?", numeric: NumericRange(decimals: 1)),
        ]
        let controller = try PollController(options: options, store: store)
        // A>C ×3, B ×2, C>B ×2: round 1 A 3, B 2, C 2 of 7; C out (tied with B, the later letter);
        // round 2 A 3, B 4 of 7: B wins.
        let ballots: [[UInt8]] = [[0, 2], [0, 2], [0, 2], [1], [1], [2, 1], [2, 1]]
        for (i, order) in ballots.enumerated() {
            await controller.ingest(report(voter: UInt32(i + 1), answer: .ranking(try XCTUnwrap(Ranking(order: order))), question: 1))
        }
        try await controller.nextQuestion()
        for (i, v) in [Int16(12), 12, 15, 40].enumerated() {
            await controller.ingest(report(voter: UInt32(i + 1), answer: .numeric(v), question: 2))
        }
        try await controller.closeQuestion()

        let charts = try await controller.export(to: dir + "/out").filter { $0.hasSuffix(".svg") }
        XCTAssertEqual(charts.map { String($0.suffix(7)) }, ["-q1.svg", "-q2.svg"])
        let ranked = try String(contentsOfFile: charts[0], encoding: .utf8)
        let rounds = try ParsedSVG(ranked)
        XCTAssertEqual(rounds.roundOrder, [1, 2])
        XCTAssertEqual(rounds.rounds[1], ParsedSVG.Round(active: 7, exhausted: 0, eliminated: "C", votes: ["A": 3, "B": 2, "C": 2]))
        XCTAssertEqual(rounds.rounds[2], ParsedSVG.Round(active: 7, exhausted: 0, eliminated: nil, votes: ["A": 3, "B": 4]))
        XCTAssertEqual(rounds.winners, ["B"])
        let reported = await controller.results(question: 1)
        XCTAssertEqual(reported.ballots.count, 0, "sealed: no voter left")
        let reportedRounds = try XCTUnwrap(reported.results?.rounds)
        XCTAssertEqual(rounds.roundOrder, reportedRounds.map(\.round))
        for round in reportedRounds {
            XCTAssertEqual(rounds.rounds[round.round]?.votes, Dictionary(uniqueKeysWithValues: round.votes.map { ($0.option, $0.count) }))
        }
        for i in 1...7 { XCTAssertFalse(ranked.contains(IDText.voter(UInt32(i))), "no voter ID in the chart") }

        let numeric = try ParsedSVG(try String(contentsOfFile: charts[1], encoding: .utf8))
        XCTAssertEqual(numeric.binOrder, ["1.2", "1.5", "4.0"])
        XCTAssertEqual(numeric.bins, ["1.2": 2, "1.5": 1, "4.0": 1])
        XCTAssertEqual(numeric.attributes(class: "statistics").first?["data-median"], "1.35")
        XCTAssertEqual(numeric.texts(class: "voters"), ["4 voters"])
    }
}
