import ClickerStore
import ClickerWire
import Foundation
import XCTest

/// The built `clicker-tally` binary: which poll a run starts. (The controller's rules are tested in
/// PollLifecycleTests; this checks that the command line asks for them.)
final class CommandLineTests: XCTestCase {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    func clickerTally(_ args: [String], runtime: String) throws -> Run {
        try TallyDaemonTests.clickerTally(args, runtime: runtime)
    }

    /// `--adapter` with several adapters: refused before anything opens when an adapter is given twice,
    /// is no adapter name, or comes with `--radio hci` (which takes one), for a run and for the daemon.
    func testSeveralAdaptersAreCheckedBeforeAnythingOpens() throws {
        let dir = NSTemporaryDirectory() + "clicker-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let db = dir + "/clicker.sqlite"
        for command in [[], ["daemon"]] {
            let twice = try clickerTally(command + ["--adapter", "hci0,hci1,hci0", "--db", db], runtime: dir)
            XCTAssertNotEqual(twice.status, 0)
            XCTAssertTrue(twice.stderr.contains("--adapter: hci0 is given twice; name each adapter once"), twice.stderr)
            let bad = try clickerTally(command + ["--adapter", "hci0,usb", "--db", db], runtime: dir)
            XCTAssertNotEqual(bad.status, 0)
            XCTAssertTrue(bad.stderr.contains("--adapter: 'usb' is not an adapter"), bad.stderr)
            let hci = try clickerTally(command + ["--radio", "hci", "--adapter", "hci0,hci1", "--db", db], runtime: dir)
            XCTAssertNotEqual(hci.status, 0)
            XCTAssertTrue(hci.stderr.contains("--radio hci takes one adapter; several (hci0,hci1) work through BlueZ"), hci.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: db), "nothing opened")
    }

    func testEachRunIsANewPollAndResumeIsExplicit() throws {
        let dir = NSTemporaryDirectory() + "clicker-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let db = dir + "/clicker.sqlite"
        let base = ["--radio", "sim", "--no-gatt-confirm", "--duration", "0.2", "--json", "--db", db]

        for _ in 0..<2 { XCTAssertEqual(try clickerTally(base, runtime: dir).status, 0) }
        var polls = try ClickerStore(path: db).polls()
        XCTAssertEqual(polls.count, 2, "every run starts a poll")
        XCTAssertNotNil(polls[0].closedAt, "and closes the one before")
        XCTAssertNotEqual(polls[0].joinCode, polls[1].joinCode)

        let resumed = try clickerTally(base + ["--resume"], runtime: dir)
        XCTAssertEqual(resumed.status, 0, resumed.stderr)
        polls = try ClickerStore(path: db).polls()
        XCTAssertEqual(polls.count, 2, "--resume continues the open poll")
        let parts = try XCTUnwrap(polls[1].joinCode).split(separator: "-").map(String.init)
        XCTAssertEqual(parts.count, 3)
        XCTAssertTrue(resumed.stdout.contains("\"voteID\":\(parts[0])"), resumed.stdout)
        XCTAssertFalse(resumed.stdout.contains(parts[1]) || resumed.stdout.contains(parts[2]), "no join secret in --json")

        let reused = try clickerTally(base + ["--join-code", try XCTUnwrap(polls[0].joinCode)], runtime: dir)
        XCTAssertEqual(reused.status, 1)
        XCTAssertTrue(reused.stderr.contains("was already used by poll 1"), reused.stderr)
        XCTAssertEqual(try ClickerStore(path: db).polls().count, 2)
    }

    /// `--questions FILE` stores the set and opens its first question; a bad file stops the start with
    /// its line and field; the ad-hoc flags define the question; a resume with another file is refused.
    func testQuestionFileAndAdHocFlags() throws {
        let dir = NSTemporaryDirectory() + "clicker-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let db = dir + "/clicker.sqlite"
        let base = ["--radio", "sim", "--no-gatt-confirm", "--duration", "0.2", "--json", "--db", db]
        let good = dir + "/lecture.yaml", bad = dir + "/bad.yaml", other = dir + "/other.yaml"
        try "questions:\n  - title: Largest planet?\n    kind: single\n    options: [Venus, Jupiter]\n    correct: B\n  - title: Noble\n    kind: multi\n    options: [He, Fe, Ne]\n"
            .write(toFile: good, atomically: true, encoding: .utf8)
        try "questions:\n  - title: Largest planet?\n    kind: single\n    options: [Venus, Jupiter]\n  - title: Noble\n    kind: multiple\n    options: [He, Fe, Ne]\n"
            .write(toFile: bad, atomically: true, encoding: .utf8)
        try "questions:\n  - title: Other\n    kind: truefalse\n".write(toFile: other, atomically: true, encoding: .utf8)

        let refused = try clickerTally(base + ["--questions", bad], runtime: dir)
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stderr.contains("\(bad):6: question 2: 'kind': 'multiple' is not one of single, multi, truefalse, numeric, ranked"),
                      refused.stderr)
        let both = try clickerTally(base + ["--questions", good, "--kind", "multi"], runtime: dir)
        XCTAssertEqual(both.status, 64)
        XCTAssertTrue(both.stderr.contains("--questions defines every question"), both.stderr)
        let kind = try clickerTally(base + ["--kind", "multiple"], runtime: dir)
        XCTAssertEqual(kind.status, 64)
        XCTAssertTrue(kind.stderr.contains("'multiple' is not a question kind"), kind.stderr)

        XCTAssertEqual(try clickerTally(base + ["--questions", good], runtime: dir).status, 0)
        var store = try ClickerStore(path: db)
        var poll = try XCTUnwrap(store.polls().last).id
        XCTAssertEqual(try store.plan(poll: poll).map(\.title), ["Largest planet?", "Noble"])
        XCTAssertEqual(try store.questions(poll: poll).map(\.definition),
                       [QuestionDefinition(kinds: [.choice], options: 2, optionTexts: ["Venus", "Jupiter"], title: "Largest planet?",
                                           correct: [.choice(1)])])
        let contradicted = try clickerTally(base + ["--resume", "--questions", other], runtime: dir)
        XCTAssertEqual(contradicted.status, 1)
        XCTAssertTrue(contradicted.stderr.contains("--questions contradicts the open poll"), contradicted.stderr)
        let otherKind = try clickerTally(base + ["--resume", "--kind", "truefalse"], runtime: dir)
        XCTAssertEqual(otherKind.status, 1)
        XCTAssertTrue(otherKind.stderr.contains("--kind contradicts the open poll"), otherKind.stderr)
        // What only defines a new question is refused with --resume, not silently dropped.
        for flags in [["--title", "Other"], ["--kind", "numeric", "--range", "0..10"], ["--kind", "numeric", "--decimals", "1"],
                      ["--options", "Mars,Venus"]] {
            let r = try clickerTally(base + ["--resume"] + flags, runtime: dir)
            XCTAssertEqual(r.status, 64, "\(flags)")
            XCTAssertTrue(r.stderr.contains("--resume continues the open question as the database holds it"), "\(flags): \(r.stderr)")
        }
        XCTAssertEqual(try clickerTally(base + ["--resume"], runtime: dir).status, 0, "a resume needs no flag")
        let tooFine = try clickerTally(base + ["--kind", "numeric", "--range", "0.00001..0.00002"], runtime: dir)
        XCTAssertEqual(tooFine.status, 64)
        XCTAssertTrue(tooFine.stderr.contains("range '0.00001..0.00002' has 5 decimals: a numeric question has 0 to 4"), tooFine.stderr)

        let adHoc = try clickerTally(base + ["--kind", "numeric", "--range", "-2.5..2.5", "--title", "Charge"], runtime: dir)
        XCTAssertEqual(adHoc.status, 0, adHoc.stderr)
        store = try ClickerStore(path: db)
        poll = try XCTUnwrap(store.polls().last).id
        XCTAssertEqual(try store.questions(poll: poll).map(\.definition),
                       [QuestionDefinition(kinds: [.numeric], options: 1, title: "Charge", numeric: .init(decimals: 1, lowest: -25, highest: 25))])
        // The summary of a numeric question speaks its units: the histogram and statistics, not a
        // line per wire value (17 for 1.7).
        let room = try clickerTally(["--simulate", "30", "--simulate-speed", "50", "--seed", "3", "--no-store", "--duration", "6",
                                     "--kind", "numeric", "--range", "0..10", "--decimals", "1"], runtime: dir)
        XCTAssertEqual(room.status, 0, room.stderr)
        XCTAssertTrue(room.stdout.contains("  median "), room.stdout)
        // In units (one decimal): bins of a range, or single values when few voters were counted in the
        // 6 s (a loaded machine runs the 50× room behind; in 2.5 s at 20× it once counted nobody); the
        // binning itself is KindResultsTests'.
        XCTAssertTrue(room.stdout.range(of: #"  histogram: \d\.\d(–\d\.\d)?: "#, options: .regularExpression) != nil, room.stdout)
        XCTAssertFalse(room.stdout.split(separator: "\n").contains { $0.range(of: #"^  -?\d+  #"#, options: .regularExpression) != nil },
                       room.stdout)
        XCTAssertEqual(try clickerTally(base + ["--kind", "ranked", "--options", "Swift,Rust,Go"], runtime: dir).status, 0)
        store = try ClickerStore(path: db)
        poll = try XCTUnwrap(store.polls().last).id
        XCTAssertEqual(try store.questions(poll: poll).map(\.definition),
                       [QuestionDefinition(kinds: [.ranking], options: 3, optionTexts: ["Swift", "Rust", "Go"])])
    }

    /// `--hall` and `--receivers`: bad input is a usage error that says what is wrong, for a run and for
    /// the daemon; a room seated in a hall with two receivers votes.
    func testHallArgumentsAreCheckedAndASeatedRoomVotes() throws {
        let dir = NSTemporaryDirectory() + "clicker-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let db = dir + "/clicker.sqlite"
        let cases: [([String], String)] = [
            (["--hall", "30x20"], "--hall seats a simulated room: give --simulate N too"),
            (["--simulate", "601", "--hall", "30x20"], "a 30x20 hall has 600 seats, too few for --simulate 601"),
            (["--simulate", "60", "--hall", "30by20"], "a hall is ROWSxSEATS, such as 30x20"),
            (["--simulate", "60", "--hall", "30x20", "--receivers", "front,side"], "unknown receiver position \"side\""),
            (["--simulate", "60", "--hall", "30x20", "--receivers", "40:2"], "receiver 40:2 is outside the hall"),
            (["--simulate", "60", "--receivers", "front"], "--receivers places receivers in a hall: give --hall too"),
        ]
        for command in [[], ["daemon"]] {
            for (args, message) in cases {
                let r = try clickerTally(command + args + ["--db", db], runtime: dir)
                XCTAssertEqual(r.status, 64, "\(args): \(r.stderr)")
                XCTAssertTrue(r.stderr.contains(message), "\(args): \(r.stderr)")
            }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: db), "nothing opened")
        let room = try clickerTally(["--simulate", "40", "--hall", "5x8", "--receivers", "front,back", "--simulate-speed", "50",
                                     "--seed", "3", "--no-store", "--duration", "6", "--json"], runtime: dir)
        XCTAssertEqual(room.status, 0, room.stderr)
        let last = try XCTUnwrap(room.stdout.split(separator: "\n").last)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any])
        XCTAssertGreaterThan(try XCTUnwrap(json["voters"] as? Int), 0, room.stdout)
        XCTAssertTrue(room.stderr.contains("receivers: front, back"), room.stderr)
    }

    func testTheDaemonRefusesNoStoreBeforeOpeningAnything() throws {
        let dir = NSTemporaryDirectory() + "clicker-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let db = dir + "/clicker.sqlite"
        let r = try clickerTally(["daemon", "--no-store", "--db", db], runtime: dir)
        XCTAssertEqual(r.status, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("leave out --no-store"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: db), "no database was created")
    }

    /// The daemon without a bus says what the clients say, and leaves the database alone.
    func testTheDaemonWithoutABusGivesTheHintAndOpensNoDatabase() throws {
        let dir = NSTemporaryDirectory() + "clicker-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let db = dir + "/clicker.sqlite"
        let bus = "unix:path=\(dir)/no-bus"
        let daemon = try clickerTally(["daemon", "--bus", bus, "--db", db, "--radio", "sim"], runtime: dir)
        let client = try clickerTally(["status", "--bus", bus], runtime: dir)
        XCTAssertEqual(daemon.status, 1, daemon.stderr)
        XCTAssertTrue(daemon.stderr.contains("is dbus running? (sudo systemctl start dbus)"), daemon.stderr)
        XCTAssertTrue(client.stderr.contains("is dbus running? (sudo systemctl start dbus)"), client.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: db), "the database was opened before the bus worked")
    }

    /// `--help` shows the default run's options, `--version` answers, and out-of-range values get
    /// a message that names the range.
    func testHelpVersionAndRangeMessages() throws {
        let dir = NSTemporaryDirectory() + "clicker-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        let help = try clickerTally(["--help"], runtime: dir)
        XCTAssertEqual(help.status, 0)
        for option in ["--simulate", "--duration", "--json", "--radio", "--adapter", "--export-directory", "SUBCOMMANDS"] {
            XCTAssertTrue(help.stdout.contains(option), "\(option) missing from --help:\n\(help.stdout)")
        }
        XCTAssertTrue(help.stdout.contains("4821-K7QXM-3PF9A"), "the join code's real shape")
        let exportHelp = help.stdout.components(separatedBy: "--export-directory").dropFirst().joined()
            .components(separatedBy: "--version").first ?? ""
        XCTAssertEqual(exportHelp.components(separatedBy: "efault").count - 1, 1, "the default is stated once: \(exportHelp)")
        let version = try clickerTally(["--version"], runtime: dir)
        XCTAssertEqual(version.status, 0)
        let line = version.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(line.hasPrefix("clicker-tally ") && line.hasSuffix("(ballot protocol \(BallotFormat.version))"), line)

        let duration = try clickerTally(["--duration", "-1", "--no-store", "--radio", "sim"], runtime: dir)
        XCTAssertEqual(duration.status, 64)
        XCTAssertTrue(duration.stderr.contains("--duration is above 0, up to 86400 seconds"), duration.stderr)
        let question = try clickerTally(["--question", "300", "--no-store", "--radio", "sim"], runtime: dir)
        XCTAssertEqual(question.status, 64)
        XCTAssertTrue(question.stderr.contains("--question is 1 to 255 (got 300)"), question.stderr)
    }
}
