import ClickerTally
import ClickerWire
import Foundation
import NIOCore
import ProjectorPage
import ProjectorWeb
import XCTest

/// The pure parts: the snapshot by question kind, the page itself, addresses and tokens, the fan-out.
final class ProjectorSnapshotTests: XCTestCase {
    func testChoiceBarsCarryOptionTextsAndEveryOption() throws {
        let spec = QuestionSpec(number: 3, options: 3, kinds: [.choice], title: "Which <b>planet</b>?",
                                optionTexts: ["Mars", "Venus \"the hot one\""])
        let s = ProjectorSnapshot(joinCode: testCode, roster: false, spec: spec, open: true, hidden: false, voters: 5,
                                  counts: ["A": 2, "C": 3])
        XCTAssertEqual(s.question.kind, .choice)
        XCTAssertEqual(s.question.title, "Which <b>planet</b>?")
        XCTAssertEqual(s.question.options.map(\.label), ["A", "B", "C"])
        XCTAssertEqual(s.results?.bars.map(\.option), ["A", "B", "C"])
        XCTAssertEqual(s.results?.bars.map(\.count), [2, 0, 3])
        XCTAssertEqual(s.results?.bars.map(\.text), ["Mars", "Venus \"the hot one\"", nil])
        XCTAssertEqual(s.howToVote, "Vote: clicker-vote 4821-ABCDE-FGHJK A")
        XCTAssertEqual(s.vote, "4821")
        // Text from the poll stays text in JSON (the page sets it with textContent).
        let json = String(decoding: ProjectorFeed.encode(s), as: UTF8.self)
        XCTAssertTrue(json.contains(#""title":"Which <b>planet</b>?""#), json)
        XCTAssertTrue(json.contains(#""text":"Venus \"the hot one\"""#), json)
        XCTAssertEqual(try JSONDecoder().decode(ProjectorSnapshot.self, from: Data(json.utf8)), s)
    }

    func testMultiSelectCountsVotersPerOption() {
        let spec = QuestionSpec(number: 1, options: 4, kinds: [.multiSelect])
        // A+C twice, C alone once, B+C+D once.
        let counts = [Answer.multiSelect(0b0101).description: 2, Answer.multiSelect(0b0100).description: 1,
                      Answer.multiSelect(0b1110).description: 1]
        let s = ProjectorSnapshot(joinCode: testCode, roster: false, spec: spec, open: true, hidden: false, voters: 4,
                                  counts: counts)
        XCTAssertEqual(s.question.kind, .multiSelect)
        XCTAssertEqual(s.results?.bars.map(\.count), [2, 1, 4, 1])
        XCTAssertEqual(s.results?.ballots, 4)
        XCTAssertEqual(s.results?.combinations, [.init(answer: "A+C", count: 2), .init(answer: "B+C+D", count: 1),
                                                 .init(answer: "C+", count: 1)])
        XCTAssertEqual(s.howToVote, "Vote: clicker-vote 4821-ABCDE-FGHJK A+C")
    }

    func testTrueFalseAndRoster() {
        let tf = ProjectorSnapshot(joinCode: testCode, roster: true, spec: QuestionSpec(number: 2, kinds: [.trueFalse]),
                                   open: false, hidden: false, voters: 3, counts: ["true": 2, "false": 1])
        XCTAssertEqual(tf.results?.bars.map(\.option), ["true", "false"])
        XCTAssertEqual(tf.results?.bars.map(\.count), [2, 1])
        XCTAssertEqual(tf.question.options, [])
        XCTAssertEqual(tf.state, .closed)
        XCTAssertEqual(tf.howToVote, "Vote: clicker-vote --roster 4821-ABCDE-FGHJK true")
    }

    /// A ranked question: every instant-runoff round, the outcome, and the last round as the bars.
    /// Hand-counted: A>C ×5, B>C ×4, C ×1, C>B ×2. Round 1: A 5, B 4, C 3 of 12, C out. Round 2: the
    /// lone C ballot is exhausted, C>B moves to B: A 5, B 6 of 11 active, B wins.
    func testRankedSnapshotCarriesEveryRound() throws {
        let spec = QuestionSpec(number: 4, options: 3, kinds: [.ranking], optionTexts: ["Paris", "Rome"])
        let s = ProjectorSnapshot(joinCode: testCode, roster: false, spec: spec, open: false, hidden: false, voters: 12,
                                  counts: ["A>C": 5, "B>C": 4, "C>": 1, "C>B": 2, "A": 7])
        XCTAssertEqual(s.question.kind, .ranked)
        let r = try XCTUnwrap(s.results)
        XCTAssertEqual(r.kind, .rounds)
        XCTAssertEqual(r.ballots, 12, "a single choice is not a ranking: left out")
        XCTAssertEqual(r.rounds, [
            .init(round: 1, votes: [.init(option: "A", text: "Paris", count: 5), .init(option: "B", text: "Rome", count: 4),
                                    .init(option: "C", text: nil, count: 3)], active: 12, exhausted: 0, eliminated: "C"),
            .init(round: 2, votes: [.init(option: "A", text: "Paris", count: 5), .init(option: "B", text: "Rome", count: 6)],
                  active: 11, exhausted: 1, eliminated: nil),
        ])
        XCTAssertEqual(r.outcome, "winner")
        XCTAssertEqual(r.winner, "B")
        XCTAssertNil(r.tied)
        XCTAssertEqual(r.bars.map(\.option), ["A", "B"])
        XCTAssertEqual(r.bars.map(\.count), [5, 6])
        XCTAssertNil(r.bins)
        XCTAssertNil(r.median)
        let json = String(decoding: ProjectorFeed.encode(s), as: UTF8.self)
        XCTAssertTrue(json.contains(#""round":2,"votes":[{"count":5,"option":"A","text":"Paris"},{"count":6,"option":"B","text":"Rome"}]"#), json)
        XCTAssertEqual(try JSONDecoder().decode(ProjectorSnapshot.self, from: Data(json.utf8)), s)

        // Every option with the same votes: a tie between them.
        let tie = ProjectorSnapshot(joinCode: testCode, roster: false, spec: spec, open: true, hidden: false, voters: 4,
                                    counts: ["A>B": 2, "B>A": 2])
        XCTAssertEqual(tie.results?.outcome, "tie")
        XCTAssertEqual(tie.results?.tied, ["A", "B"])
        XCTAssertNil(tie.results?.winner)
    }

    /// A numeric question: the histogram's bins and the statistics in the question's units.
    /// Hand-counted (one decimal): -0.5, 1.2 ×2, 1.5, 2.0 ×3, 3.0: median (1.5 + 2.0) / 2 = 1.75,
    /// quartiles 1.2 (of -0.5 1.2 1.2 1.5) and 2.0 (of 2.0 2.0 2.0 3.0).
    func testNumericSnapshotIsAHistogramWithMedianAndQuartiles() throws {
        let spec = QuestionSpec(number: 2, kinds: [.numeric], numeric: NumericRange(decimals: 1))
        let s = ProjectorSnapshot(joinCode: testCode, roster: false, spec: spec, open: true, hidden: false, voters: 8,
                                  counts: ["-5": 1, "12": 2, "15": 1, "20": 3, "30": 1, "7": 0])
        XCTAssertEqual(s.question.kind, .numeric)
        XCTAssertEqual(s.question.options, [])
        let r = try XCTUnwrap(s.results)
        XCTAssertEqual(r.kind, .histogram)
        XCTAssertEqual(r.bins, [.init(from: -0.5, to: -0.5, label: "-0.5", count: 1), .init(from: 1.2, to: 1.2, label: "1.2", count: 2),
                                .init(from: 1.5, to: 1.5, label: "1.5", count: 1), .init(from: 2, to: 2, label: "2.0", count: 3),
                                .init(from: 3, to: 3, label: "3.0", count: 1)])
        XCTAssertEqual([r.minimum, r.lowerQuartile, r.median, r.upperQuartile, r.maximum], ["-0.5", "1.2", "1.75", "2.0", "3.0"])
        XCTAssertEqual(r.ballots, 8)
        XCTAssertEqual(r.bars, [])
        XCTAssertNil(r.rounds)
        let json = String(decoding: ProjectorFeed.encode(s), as: UTF8.self)
        XCTAssertTrue(json.contains(#""median":"1.75""#), json)

        // Many values: equal bins (here two wide, in whole units); no ballot: no bin and no statistic.
        let whole = QuestionSpec(number: 2, kinds: [.numeric])
        var counts: [String: Int] = [:]
        for v in 0...10 { counts[String(v)] = 1 }
        let many = ProjectorSnapshot(joinCode: testCode, roster: false, spec: whole, open: true, hidden: false, voters: 11, counts: counts)
        XCTAssertEqual(many.results?.bins?.map(\.label), ["0–1", "2–3", "4–5", "6–7", "8–9", "10–11"])
        XCTAssertEqual(many.results?.bins?.map(\.count), [2, 2, 2, 2, 2, 1])
        XCTAssertEqual(many.results?.median, "5")
        let none = ProjectorSnapshot(joinCode: testCode, roster: false, spec: whole, open: true, hidden: false, voters: 0, counts: [:])
        XCTAssertEqual(none.results?.bins, [])
        XCTAssertNil(none.results?.median)
    }

    /// Hiding the results of a ranked or a numeric question sends no round, bin or statistic.
    func testHiddenRankedAndNumericSnapshotsCarryNoRoundsOrBins() {
        let ranked = ProjectorSnapshot(joinCode: testCode, roster: false, spec: QuestionSpec(number: 1, options: 3, kinds: [.ranking]),
                                       open: true, hidden: true, voters: 3, counts: ["A>B": 2, "C>": 1])
        let numeric = ProjectorSnapshot(joinCode: testCode, roster: false, spec: QuestionSpec(number: 2, kinds: [.numeric]),
                                        open: true, hidden: true, voters: 3, counts: ["12": 2, "40": 1])
        for s in [ranked, numeric] {
            XCTAssertNil(s.results)
            let json = String(decoding: ProjectorFeed.encode(s), as: UTF8.self)
            for key in ["round", "votes", "exhausted", "winner", "bins", "median", "Quartile", "count", "\"12\"", "40"] {
                XCTAssertFalse(json.contains(key), "\(key) in \(json)")
            }
        }
    }

    func testHiddenSnapshotHasNoResultsAtAll() {
        let s = ProjectorSnapshot(joinCode: testCode, roster: false, spec: .choice(1), open: true, hidden: true, voters: 7,
                                  counts: ["A": 4, "B": 3])
        XCTAssertNil(s.results)
        let json = String(decoding: ProjectorFeed.encode(s), as: UTF8.self)
        XCTAssertFalse(json.contains("count"), json)
        XCTAssertTrue(json.contains(#""hidden":true"#), json)
        XCTAssertTrue(json.contains(#""voters":7"#), json)
    }
}

final class ProjectorPageTests: XCTestCase {
    /// The page weighs at most 100 kB and loads nothing from anywhere: no URL, no font, no import.
    func testThePageIsSmallAndSelfContained() {
        print("page weight: \(ProjectorPage.bytes.count) bytes")
        XCTAssertLessThanOrEqual(ProjectorPage.bytes.count, 100_000)
        let html = ProjectorPage.html.lowercased()
        for outside in ["http:", "https:", "//cdn", "@import", "@font-face", "url(", "<link", " src="] {
            XCTAssertFalse(html.contains(outside), outside)
        }
    }

    /// Text from the poll is never parsed as HTML, and the DOM hooks tests rely on are there.
    func testThePageSetsTextOnlyAndHasItsHooks() {
        let script = ProjectorPage.script
        for sink in ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"] {
            XCTAssertFalse(script.contains(sink), sink)
        }
        for hook in ["dataset.option", "dataset.count", "new EventSource(\"/events\"+query)", "\"snapshot\"", "case \"bars\"",
                     // Ranked: rounds, each round's row and cells, the winner; numeric: bins and statistics.
                     "case \"rounds\"", "case \"histogram\"", "dataset.round", "dataset.winner", "dataset.exhausted",
                     "dataset.active", "dataset.eliminated", "dataset.bin", "table.id=\"rounds\"", "line(\"outcome\"",
                     "\"median\"", "\"lowerQuartile\"", "\"upperQuartile\"", "\"minimum\"", "\"maximum\"",
                     "dataset.answer", "line(\"combinations\""] {
            XCTAssertTrue(script.contains(hook), hook)
        }
        for id in ["joincode", "howto", "question", "title", "state", "voters", "results", "hidden"] {
            XCTAssertTrue(ProjectorPage.html.contains("id=\"\(id)\""), id)
        }
        // Okabe–Ito.
        XCTAssertTrue(script.contains("\"#E69F00\",\"#56B4E9\",\"#009E73\",\"#F0E442\",\"#0072B2\",\"#D55E00\",\"#CC79A7\""))
    }
}

final class ProjectorAccessTests: XCTestCase {
    func testAddresses() throws {
        XCTAssertEqual(try ProjectorAddress(parsing: "8080"), ProjectorAddress(host: "127.0.0.1", port: 8080))
        XCTAssertEqual(try ProjectorAddress(parsing: "0.0.0.0:80"), ProjectorAddress(host: "0.0.0.0", port: 80))
        XCTAssertEqual(try ProjectorAddress(parsing: "[::1]:9000"), ProjectorAddress(host: "::1", port: 9000))
        XCTAssertEqual(try ProjectorAddress(parsing: "localhost:0"), ProjectorAddress(host: "localhost", port: 0))
        XCTAssertEqual(try ProjectorAddress(parsing: "[::1]:9000").description, "[::1]:9000")
        for bad in ["", ":", "80a", "65536", "-1", "::1:80", "[::1]", "[::1]80", "host name:80", "a/b:80", "1.2.3.4:",
                    ":8080", "99999999999999999999", "[]:80"] {
            XCTAssertThrowsError(try ProjectorAddress(parsing: bad), bad)
        }
        for loop in ["127.0.0.1", "127.1.2.3", "localhost", "::1", "LocalHost"] {
            XCTAssertTrue(ProjectorAddress(host: loop, port: 1).isLoopback, loop)
        }
        for other in ["0.0.0.0", "192.168.1.10", "::", "128.0.0.1", "127.0.0.1.evil", "1127.0.0.1", "127.0.0.256"] {
            XCTAssertFalse(ProjectorAddress(host: other, port: 1).isLoopback, other)
        }
    }

    func testTokens() {
        let a = ProjectorAccess.randomToken(), b = ProjectorAccess.randomToken()
        XCTAssertEqual(a.count, 32)
        XCTAssertTrue(a.allSatisfy(\.isHexDigit))
        XCTAssertNotEqual(a, b)
        let access = ProjectorAccess(token: a)
        XCTAssertTrue(access.permits(token: Substring(a), host: "anything"))
        XCTAssertFalse(access.permits(token: nil, host: "127.0.0.1"))
        XCTAssertFalse(access.permits(token: Substring(b), host: "127.0.0.1"))
        XCTAssertFalse(access.permits(token: "", host: "127.0.0.1"))
        let open = ProjectorAccess(token: nil)
        XCTAssertTrue(open.permits(token: nil, host: "127.0.0.1:8080"))
        XCTAssertTrue(open.permits(token: nil, host: "[::1]:8080"))
        XCTAssertFalse(open.permits(token: nil, host: nil))
        XCTAssertFalse(open.permits(token: nil, host: "[::1]x"))
        XCTAssertFalse(open.permits(token: nil, host: "example.org:8080"))
    }
}

final class SnapshotFanOutTests: XCTestCase {
    /// Encoded once: every subscriber gets the very same bytes in memory; an unchanged snapshot is not
    /// sent again.
    func testSubscribersShareOneEncodedFrame() async throws {
        let fanOut = SnapshotFanOut()
        let streams = (0..<3).compactMap { _ in fanOut.subscribe() }
        XCTAssertEqual(streams.count, 3)
        XCTAssertTrue(fanOut.publish(json: Array(#"{"voters":1}"#.utf8)))
        XCTAssertFalse(fanOut.publish(json: Array(#"{"voters":1}"#.utf8)), "the same snapshot again")
        XCTAssertTrue(fanOut.publish(json: Array(#"{"voters":2}"#.utf8)))
        var addresses: Set<Int> = []
        var iterators = streams.map { $0.makeAsyncIterator() }
        for i in iterators.indices {
            // Each subscriber holds only the latest event.
            let next = await iterators[i].next()
            let frame = try XCTUnwrap(next)
            XCTAssertEqual(frame.sequence, 2)
            XCTAssertEqual(String(buffer: frame.event), "id: 2\nevent: snapshot\ndata: {\"voters\":2}\n\n")
            addresses.insert(frame.event.withUnsafeReadableBytes { Int(bitPattern: $0.baseAddress) })
        }
        XCTAssertEqual(addresses.count, 1, "one buffer shared by all")
        fanOut.finish()
        for i in iterators.indices {
            let end = await iterators[i].next()
            XCTAssertNil(end)
        }
        XCTAssertNil(fanOut.subscribe(), "finished")
    }

    func testSubscribersAreBounded() {
        let fanOut = SnapshotFanOut(maxSubscribers: 2)
        let kept = [fanOut.subscribe(), fanOut.subscribe()]
        XCTAssertNotNil(kept[0])
        XCTAssertNil(fanOut.subscribe())
        XCTAssertEqual(fanOut.subscriberCount, 2)
    }
}
