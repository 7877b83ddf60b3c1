@testable import ClickerStore
import Foundation
import Glibc
import XCTest

final class ExportTests: XCTestCase {
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    func makeStore(mode: PollMode) throws -> (ClickerStore, PollRecord, [BallotRecord]) {
        let dir = try makeTempDir(self)
        let store = try ClickerStore(path: dir + "/db.sqlite")
        let poll = try store.createPoll(voteID: Data([0xDE, 0xAD]), joinCode: "123456",
                                        mode: mode, title: "Quiz, \"one\"\nline two", at: t0)
        try store.openQuestion(poll: poll.id, number: 1, at: t0)
        try store.openQuestion(poll: poll.id, number: 2, at: t0.addingTimeInterval(100))
        var bs: [BallotRecord] = []
        for v in 0..<6 as Range<UInt64> {
            bs.append(BallotRecord(poll: poll.id, question: 1, voter: voterID(0xC0FFEE00 + v), answer: .choice(UInt8(v % 4)), sequence: 1,
                                   address: "addr,\"\(v)\"", firstHeard: t0.addingTimeInterval(Double(v)),
                                   lastHeard: t0.addingTimeInterval(Double(v) + 0.25), gattVerified: v % 2 == 0))
        }
        bs.append(BallotRecord(poll: poll.id, question: 1, voter: voterID(0xC0FFEE00), answer: .choice(2), sequence: 2, address: "a",
                               firstHeard: t0.addingTimeInterval(50), lastHeard: t0.addingTimeInterval(50), gattVerified: false))
        bs.append(BallotRecord(poll: poll.id, question: 2, voter: voterID(0xC0FFEE01), answer: .choice(3), sequence: 1, address: "b",
                               firstHeard: t0.addingTimeInterval(101), lastHeard: t0.addingTimeInterval(102), gattVerified: true))
        try store.record(bs, rejections: [RejectionCount(poll: poll.id, question: 1, reason: "bad-tag", count: 7)])
        try store.closeQuestion(poll: poll.id, number: 1, at: t0.addingTimeInterval(90))
        return (store, poll, bs)
    }

    func testRosterExportHasOneRowPerBallot() throws {
        let (store, poll, bs) = try makeStore(mode: .roster)
        let e = try store.export(poll: poll.id)
        let rows = try csvRecords(try XCTUnwrap(e.ballotsCSV))
        XCTAssertEqual(rows.count, bs.count)
        XCTAssertEqual(try parseCSV(try XCTUnwrap(e.ballotsCSV)).first, Exporter.ballotColumns)
        for b in bs {
            let match = rows.filter { $0["voter"] == Exporter.voterText(b.voter) && $0["question"] == String(b.question)
                && $0["sequence"] == String(b.sequence) }
            XCTAssertEqual(match.count, 1, "ballot \(b)")
            guard let r = match.first else { continue }
            XCTAssertEqual(r["poll"], String(poll.id))
            XCTAssertEqual(r["answer"], b.answer.description)
            XCTAssertEqual(r["address"], b.address, "quoted field with comma and quotes parses back")
            XCTAssertEqual(r["gatt_verified"], b.gattVerified ? "true" : "false")
            XCTAssertEqual(r["first_heard"], Exporter.timestamp(b.firstHeard))
            XCTAssertEqual(r["last_heard"], Exporter.timestamp(b.lastHeard))
        }
        XCTAssertEqual(Exporter.timestamp(t0.addingTimeInterval(0.25)), "2026-09-21T14:13:20.250Z")
        XCTAssertEqual(rows.map { $0["voter"] ?? "" }.sorted().first, "c0ffee00", "IDText.voter: eight hex digits, no mode byte")

        let summary = try csvRecords(e.summaryCSV)
        XCTAssertEqual(summary.count, 2)
        XCTAssertEqual(summary[0]["question"], "1")
        XCTAssertEqual(summary[0]["state"], "closed")
        XCTAssertEqual(summary[0]["voters"], "6")
        XCTAssertEqual(summary[0]["changes"], "1")
        XCTAssertEqual(summary[0]["rejected"], "7")
        // voter 0 moved A → C: A = {4}, B = {1, 5}, C = {0, 2}, D = {3}
        XCTAssertEqual([summary[0]["A"], summary[0]["B"], summary[0]["C"], summary[0]["D"]], ["1", "2", "2", "1"])
        XCTAssertEqual(summary[1]["state"], "open")
        XCTAssertEqual(summary[1]["closed_at"], "")
        XCTAssertEqual(summary[1]["D"], "1")

        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: e.json) as? [String: Any])
        let jb = try XCTUnwrap(json["ballots"] as? [[String: Any]])
        XCTAssertEqual(jb.count, bs.count)
        let jp = try XCTUnwrap(json["poll"] as? [String: Any])
        XCTAssertEqual(jp["title"] as? String, "Quiz, \"one\"\nline two")
        XCTAssertEqual(jp["voteID"] as? String, "57005", "IDText.vote: decimal")
        XCTAssertNil(jp["joinSecret"])
        let jq = try XCTUnwrap(json["questions"] as? [[String: Any]])
        XCTAssertEqual((jq[0]["counts"] as? [String: Int]), ["A": 1, "B": 2, "C": 2, "D": 1])
        XCTAssertEqual(jq[0]["voters"] as? Int, 6)
        XCTAssertEqual(jq[0]["rejections"] as? [String: Int], ["bad-tag": 7])
        XCTAssertFalse(String(decoding: e.json, as: UTF8.self).contains("4243"), "join secret never exported")
    }

    func testAnonymousExportHasNoPerVoterData() throws {
        let (store, poll, bs) = try makeStore(mode: .anonymous)
        let e = try store.export(poll: poll.id)
        XCTAssertNil(e.ballotsCSV)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: e.json) as? [String: Any])
        XCTAssertNil(json["ballots"])
        let everything = e.summaryCSV + String(decoding: e.json, as: UTF8.self)
        for b in bs {
            XCTAssertFalse(everything.contains(Exporter.voterText(b.voter)), "voter ID leaked")
            XCTAssertFalse(everything.contains(b.address) && b.address.count > 1, "address leaked")
        }
        let summary = try csvRecords(e.summaryCSV)
        XCTAssertEqual(summary.map { $0["voters"] }, ["6", "1"])
        let dir = try makeTempDir(self)
        let files = try store.export(poll: poll.id, to: dir)
        XCTAssertEqual(files.map { ($0 as NSString).lastPathComponent }.sorted(),
                       ["poll-57005-20260921T141320Z-summary.csv", "poll-57005-20260921T141320Z.json"])
    }

    /// `poll-N` restarted with every database: two tallies exporting into one directory replaced
    /// each other's files. Names carry the vote ID and start time, and a name in use is never reused.
    func testExportsOfTwoDatabasesIntoOneDirectoryKeepEveryFile() throws {
        let shared = try makeTempDir(self)
        var contents: [String: Data] = [:]
        for (n, voteID) in [Data([0x08, 0xED]), Data([0x08, 0xEE])].enumerated() {
            let store = try ClickerStore(path: try makeTempDir(self) + "/db.sqlite")
            let poll = try store.createPoll(voteID: voteID, joinCode: "code-\(n)", mode: .anonymous,
                                            at: t0.addingTimeInterval(Double(n)))
            XCTAssertEqual(poll.id, 1, "each database numbers its polls from 1")
            try store.openQuestion(poll: poll.id, number: 1, at: t0)
            try store.countRejection(poll: poll.id, question: 1, reason: "db-\(n)")
            for _ in 0..<2 {  // the same poll exported twice: the second export keeps the first's files
                for path in try store.export(poll: poll.id, to: shared) {
                    XCTAssertNil(contents[path], "\(path) written twice")
                    contents[path] = try Data(contentsOf: URL(fileURLWithPath: path))
                }
            }
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: shared).sorted()
        XCTAssertEqual(names.count, 8, "\(names)")
        XCTAssertEqual(Set(names), Set(contents.keys.map { ($0 as NSString).lastPathComponent }))
        XCTAssertTrue(names.contains("poll-2285-20260921T141320Z.json"), "\(names)")
        XCTAssertTrue(names.contains("poll-2285-20260921T141320Z-2.json"), "\(names)")
        for (path, data) in contents {
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: path)), data, "\(path) was overwritten")
        }
    }

    /// A symbolic link planted at an export's name (pointing at a file the planter wants written), and
    /// a file already there: neither is written through or replaced; the export takes the next free
    /// stem, as new 0600 files.
    func testAPlantedLinkOrFileAtAnExportNameIsNotWrittenThrough() throws {
        let (store, poll, _) = try makeStore(mode: .anonymous)
        let out = try makeTempDir(self)
        let target = try makeTempDir(self) + "/victim.txt"
        try Data("keep".utf8).write(to: URL(fileURLWithPath: target))
        let stem = out + "/" + ExportNames.stem(poll)
        try FileManager.default.createSymbolicLink(atPath: stem + "-summary.csv", withDestinationPath: target)
        try FileManager.default.createSymbolicLink(atPath: stem + ".json", withDestinationPath: target + ".absent")
        try Data("mine".utf8).write(to: URL(fileURLWithPath: stem + "-2.json"))
        let written = try store.export(poll: poll.id, to: out)
        XCTAssertEqual(written.map { ($0 as NSString).lastPathComponent }.sorted(),
                       [ExportNames.stem(poll) + "-3-summary.csv", ExportNames.stem(poll) + "-3.json"])
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "keep", "the link's target is untouched")
        XCTAssertFalse(FileManager.default.fileExists(atPath: target + ".absent"), "a dangling link is not followed")
        XCTAssertEqual(try String(contentsOfFile: stem + "-2.json", encoding: .utf8), "mine", "an existing file stays")
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: stem + "-summary.csv"), target)
        for path in written {
            var st = stat()
            XCTAssertEqual(lstat(path, &st), 0)
            XCTAssertEqual(st.st_mode & S_IFMT, S_IFREG, path)
            XCTAssertEqual(st.st_mode & 0o777, 0o600, path)
        }
    }

    func testCSVQuoting() throws {
        let tricky = ["plain", "", "a,b", "say \"hi\"", " spaces ", "\"", ",", "é😀", "a,\"b\",c"]
        let text = Exporter.csv([tricky, tricky.reversed()])
        XCTAssertEqual(try parseCSV(text), [tricky, tricky.reversed()])
        XCTAssertEqual(Exporter.csvField("plain"), "plain")
        XCTAssertEqual(Exporter.csvField("a\"b"), "\"a\"\"b\"")
    }

    /// Roster names are written by whoever made the class list: none may become a spreadsheet
    /// formula (OWASP CSV injection) or reach a terminal as an escape sequence.
    func testHostileFieldsAreNeutralised() throws {
        let formulas = ["=HYPERLINK(\"http://evil\",\"x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)",
                        "\t=1", "\r=1", "=1,2"]
        for f in formulas {
            let out = try XCTUnwrap(try parseCSV(Exporter.csv([[f]])).first?.first)
            XCTAssertTrue(out.hasPrefix("'"), "\(f) → \(out)")
            XCTAssertFalse(out.unicodeScalars.contains { $0.value < 0x20 }, out)
        }
        XCTAssertEqual(Exporter.csvField("-3"), "-3", "a negative number is data, not a formula")
        XCTAssertEqual(Exporter.csvField("-0.5"), "-0.5")
        XCTAssertEqual(Exporter.csvField("-"), "'-")
        XCTAssertEqual(Exporter.csvField("Ada Lovelace"), "Ada Lovelace")
        let terminal = "Eve\u{1B}]0;owned\u{07}\u{1B}[2J\u{9B}31m\u{202E}gnp.exe\nline\u{7F}"
        let out = try XCTUnwrap(try parseCSV(Exporter.csv([[terminal]])).first?.first)
        XCTAssertEqual(out, "Eve\u{FFFD}]0;owned\u{FFFD}\u{FFFD}[2J\u{FFFD}31m\u{FFFD}gnp.exe\u{FFFD}line\u{FFFD}")
    }
}
