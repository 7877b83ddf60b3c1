import ClickerSim
import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import TallyDaemon
import XCTest

/// What leaves the tally, and what stays in its files: no join secret anywhere but the instructor's
/// screen, no voter ID or address of a closed anonymous poll, and stored results that agree with the
/// live ones.
final class PollPrivacyTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // test constant, not input

    func directory() throws -> String {
        let dir = NSTemporaryDirectory() + "clicker-privacy-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return dir
    }

    /// Every byte of the files in `dir` (recursively).
    func bytes(of dir: String) throws -> [(String, Data)] {
        let names = try XCTUnwrap(FileManager.default.subpathsOfDirectory(atPath: dir) as [String]?)
        return try names.sorted().compactMap { name in
            var isDir: ObjCBool = false
            let path = dir + "/" + name
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue else { return nil }
            return (name, try Data(contentsOf: URL(fileURLWithPath: path)))
        }
    }

    /// The join secret as text in every form a careless writer could produce.
    func secretForms(_ c: JoinCode) -> [String] {
        let secret = c.secretText
        let dashed = String(secret.prefix(5)) + "-" + String(secret.dropFirst(5))
        return [secret, dashed, c.description, String(c.secret), String(c.secret, radix: 16)]
            .flatMap { [$0, $0.lowercased(), $0.uppercased()] }
    }

    func assertNone(_ needles: [String], in haystack: [(String, Data)], _ what: String,
                    file: StaticString = #filePath, line: UInt = #line) {
        for (name, data) in haystack {
            for n in needles where data.range(of: Data(n.utf8)) != nil {
                XCTFail("\(what) \"\(n)\" found in \(name)", file: file, line: line)
            }
        }
    }

    /// A real poll through `PollController`: votes, a change, a closed question, a second question,
    /// an export, the results and status JSON. None of it holds the join secret.
    func testNoExportResultsOrStatusCarriesTheJoinSecret() async throws {
        let dir = try directory()
        let db = try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false, title: "Week 3"),
                                            store: db)
        for v in UInt32(1)...12 { await controller.ingest(sealedReport(code, voter: v, answer: .choice(UInt8(v % 4)))) }
        await controller.ingest(sealedReport(code, voter: 1, answer: .choice(3), sequence: 2))
        try await controller.nextQuestion()
        for v in UInt32(1)...5 { await controller.ingest(sealedReport(code, voter: v, answer: .choice(0), sequence: 3, question: 2)) }
        let files = try await controller.export(to: dir + "/out")
        XCTAssertGreaterThanOrEqual(files.count, 2)
        let encoder = JSONEncoder()
        var outputs: [(String, Data)] = try bytes(of: dir + "/out")
        outputs.append(("status", try encoder.encode(await controller.viewModel(showJoinCode: false))))
        outputs.append(("results q1", try encoder.encode(await controller.results(question: 1))))
        outputs.append(("results q2", try encoder.encode(await controller.results(question: 2))))
        // The exports are real: they hold the poll and its counts.
        let json = try XCTUnwrap(outputs.first { $0.0.hasSuffix(".json") }?.1)
        XCTAssertTrue(String(decoding: json, as: UTF8.self).contains("\"voteID\" : \"4821\""))
        XCTAssertTrue(String(decoding: json, as: UTF8.self).contains("Week 3"))
        assertNone(secretForms(code), in: outputs, "join secret")
        // Only the local live view, the instructor's screen, shows the code.
        let screen = await controller.viewModel(showJoinCode: true)
        XCTAssertEqual(screen.joinCode, code.description)
    }

    /// A closed anonymous poll keeps no voter ID and no address: not in the database file (main file,
    /// WAL and shared memory), not in the export, not in the results JSON. Its totals survive a restart.
    func testClosedAnonymousPollHoldsNoVoterIDOrAddress() async throws {
        let dir = try directory()
        let path = dir + "/clicker.sqlite"
        let db = try ClickerStore(path: path, durability: .normal)
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: db)
        let voters = (UInt32(1)...24).map { 0x5EC0_0000 | $0 &* 7919 }
        for v in voters { await controller.ingest(sealedReport(code, voter: v, answer: .choice(UInt8(v % 4)))) }
        for v in voters.prefix(6) { await controller.ingest(sealedReport(code, voter: v, answer: .choice(1), sequence: 2)) }
        // While the question is open, rows list voter IDs but never an address.
        let open = await controller.results()
        XCTAssertEqual(open.ballots.count, 24)
        XCTAssertTrue(open.ballots.allSatisfy { $0.address == nil })
        try await controller.nextQuestion()
        for v in voters.prefix(10) { await controller.ingest(sealedReport(code, voter: v, answer: .choice(2), sequence: 3, question: 2)) }
        try await controller.closeQuestion()
        let q1 = await controller.results(question: 1), q2 = await controller.results(question: 2)
        XCTAssertEqual(q1.voters, 24)
        XCTAssertEqual(q2.counts["C"], 10)
        XCTAssertEqual(q1.ballots, [], "a closed anonymous question lists no voters")
        let shown = await controller.liveCounts()
        XCTAssertEqual(shown.counts, q2.counts, "the screen shows the sealed totals of the closed question")
        XCTAssertEqual(shown.voters, 10)
        _ = try await controller.export(to: dir + "/out")

        var haystack = try bytes(of: dir)
        haystack.append(("results q1", try JSONEncoder().encode(q1)))
        haystack.append(("results q2", try JSONEncoder().encode(q2)))
        XCTAssertTrue(haystack.contains { $0.0.hasSuffix("clicker.sqlite") && $0.1.count > 0 })
        for v in voters {
            let id = [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
            let hex = String(format: "%08x", v)
            let address = DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(v)).description
            for (name, data) in haystack {
                XCTAssertNil(data.range(of: Data(id)), "voter ID \(hex) (bytes) in \(name)")
            }
            assertNone([hex, hex.uppercased(), address, address.lowercased()], in: haystack, "voter or address")
        }

        // The totals are what is left, and a new start of the tally shows them again.
        let reopened = try ClickerStore(path: path, durability: .normal)
        let summary = try reopened.summary(poll: 1)
        XCTAssertEqual(summary.map(\.voters), [24, 10])
        XCTAssertEqual(summary[0].changes, q1.changes)
        XCTAssertEqual(summary[0].counts, ["A", "B", "C", "D"].map { q1.counts[$0] ?? -1 })
        XCTAssertEqual(try reopened.ballots(poll: 1), [])
        // With the poll's questions all closed, --resume rebuilds the same results from the totals.
        let resumed = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: reopened,
                                         start: .resume(maxAge: .seconds(3600)))
        let back1 = await resumed.results(question: 1), back2 = await resumed.results(question: 2)
        XCTAssertEqual(back1, q1)
        XCTAssertEqual(back2, q2)
        do {
            try await resumed.openQuestion()
            XCTFail("a sealed anonymous question must not reopen")
        } catch let e as PollError {
            XCTAssertEqual(e, .questionSealed(2))
        }
    }

    /// With GATT reads on (the default), each voter's key is bound to its voter ID and the binding is
    /// stored (table `voter_key`) until the poll closes. Closed by the next poll after its question was
    /// already sealed, the poll leaves no voter ID and no public key in the database files (main file,
    /// WAL and shared memory).
    func testClosedGATTConfirmedPollHoldsNoVoterIDOrKey() async throws {
        let dir = try directory()
        let db = try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
        let air = SimulatedAir(AirConfiguration(seed: 21, clock: .virtual))
        // On the air's clock, its beacon broadcasts at instants of the air that `drive` waits for.
        let controller = try PollController(options: PollOptions(joinCode: code), store: db, clock: PollClock(air.clock))
        let secret = PollSecret(deriving: code)
        let voters = (0..<8).map { i in
            BallotSealer(secret: secret, deviceKey: DeviceKey(bytes: [UInt8](repeating: UInt8(0x30 + i), count: 32))!)
        }
        let run = await air.start(controller)
        for (i, v) in voters.enumerated() {
            let p = air.addPeripheral(address: DeviceAddress(rawValue: 0xC0_0000_1000 + UInt64(i)))
            try await p.publish(service: BallotFormat.serviceUUID, characteristic: BallotFormat.ballotCharacteristicUUID,
                                value: v.gattValue(question: 1, sequence: 1, answer: .choice(UInt8(i % 4))))
            try await p.advertise(AdvertisingPayload(companyID: BallotFormat.companyID,
                                                     data: v.advertisement(question: 1, sequence: 1, answer: .choice(UInt8(i % 4)))))
        }
        await air.drive(controller, until: RadioInstant(nanoseconds: 20_000_000_000))
        run.cancel()
        _ = try? await run.value
        let counted = await controller.results()
        XCTAssertEqual(counted.voters, 8)
        XCTAssertEqual(counted.ballots.filter(\.gattVerified).count, 8, "every ballot read back and verified")
        XCTAssertEqual(try db.voterKeys(poll: 1).count, 8, "the bindings are stored while the poll is open")

        func found(_ v: BallotSealer, in haystack: [(String, Data)]) -> [String] {
            let id = [UInt8(v.voterID >> 24), UInt8((v.voterID >> 16) & 0xFF), UInt8((v.voterID >> 8) & 0xFF),
                      UInt8(v.voterID & 0xFF)]
            return haystack.compactMap { name, data in
                data.range(of: Data(id)) != nil || data.range(of: Data(v.publicKey)) != nil ? name : nil
            }
        }
        // The question is sealed (its ballots deleted, the WAL checkpointed), but the bindings stay:
        // the scan below does find them while the poll is open.
        try await controller.closeQuestion()
        let sealedQ1 = await controller.results(question: 1)
        XCTAssertEqual(sealedQ1.ballots, [])
        let beforeClose = try bytes(of: dir)
        XCTAssertTrue(voters.allSatisfy { !found($0, in: beforeClose).isEmpty }, "the bindings are in the files")

        try await controller.newPoll()  // closes poll 1
        XCTAssertEqual(try db.voterKeys(poll: 1), [])
        let haystack = try bytes(of: dir)
        XCTAssertTrue(haystack.contains { $0.0 == "clicker.sqlite" && $0.1.count > 0 })
        for v in voters {
            XCTAssertEqual(found(v, in: haystack), [], "voter \(IDText.voter(v.voterID)) or its key left in the files")
        }
    }

    /// Same sequence, another answer: the first counted ballot stands, live, in the store and after a
    /// restart, and the conflicting one is counted as `conflictingSequence`.
    func testSameSequenceConflictGivesTheSameResultsAfterARestart() async throws {
        let dir = try directory()
        let path = dir + "/clicker.sqlite"
        let first = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false),
                                       store: try ClickerStore(path: path, durability: .normal))
        await first.ingest(sealedReport(code, voter: 7, answer: .choice(2), sequence: 4))
        await first.ingest(sealedReport(code, voter: 7, answer: .choice(0), sequence: 4))
        await first.ingest(sealedReport(code, voter: 8, answer: .choice(1), sequence: 1))
        await first.flush()
        let live = await first.results()
        XCTAssertEqual(live.counts, ["A": 0, "B": 1, "C": 1, "D": 0], "the first ballot of sequence 4 (C) stands")
        XCTAssertEqual(live.rejected, ["conflictingSequence": 1])
        let second = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false),
                                        store: try ClickerStore(path: path, durability: .normal),
                                        start: .resume(maxAge: .seconds(3600)))
        let restarted = await second.results()
        XCTAssertEqual(restarted, live)
    }

    /// First-response-only: the exported summary counts each voter's first response, as the live
    /// tally does, whatever order the ballots arrived in.
    func testFirstResponseOnlyExportCountsWhatTheLiveTallyCounts() async throws {
        let dir = try directory()
        let db = try ClickerStore(path: dir + "/clicker.sqlite", durability: .normal)
        let controller = try PollController(options: PollOptions(joinCode: code, policy: .firstResponseOnly,
                                                                 confirmByGATT: false), store: db)
        await controller.ingest(sealedReport(code, voter: 1, answer: .choice(0), sequence: 1))
        await controller.ingest(sealedReport(code, voter: 1, answer: .choice(1), sequence: 2))  // ignored
        await controller.ingest(sealedReport(code, voter: 2, answer: .choice(3), sequence: 5))
        await controller.ingest(sealedReport(code, voter: 2, answer: .choice(2), sequence: 4))  // earlier response, late
        await controller.ingest(sealedReport(code, voter: 3, answer: .choice(1), sequence: 2))
        await controller.ingest(sealedReport(code, voter: 3, answer: .choice(1), sequence: 1))
        let live = await controller.results()
        XCTAssertEqual(live.counts, ["A": 1, "B": 1, "C": 1, "D": 0])
        XCTAssertEqual(live.rejected["changeIgnored"], 1)
        let export = try await controller.export(to: dir + "/out")
        let summaryCSV = try String(contentsOfFile: try XCTUnwrap(export.first { $0.hasSuffix("-summary.csv") }), encoding: .utf8)
        let rows = summaryCSV.split(separator: "\r\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let header = try XCTUnwrap(rows.first)
        let row = Dictionary(uniqueKeysWithValues: zip(header, rows[1]))
        XCTAssertEqual(["A", "B", "C", "D"].map { row[$0] }, ["A", "B", "C", "D"].map { live.counts[$0].map(String.init) })
        XCTAssertEqual(row["voters"], String(live.voters))
        XCTAssertEqual(row["changes"], String(live.changes))
        let stored = try XCTUnwrap(db.summary(poll: 1).first)
        XCTAssertEqual(stored.counts, [1, 1, 1, 0])
    }

    /// Rejections belong to the question that was current when they arrived; repeats of one bad
    /// payload count each time; a restart keeps them per question.
    func testRejectionsArePerQuestionAndRepeatsCountEachTime() async throws {
        let dir = try directory()
        let path = dir + "/clicker.sqlite"
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false),
                                            store: try ClickerStore(path: path, durability: .normal))
        let forged = sealedReport(try JoinCode(parsing: "4821-ZZZZZ-ZZZZZ"), voter: 9, answer: .choice(0))
        await controller.ingest(forged)
        await controller.ingest(forged)
        try await controller.nextQuestion()
        for _ in 0..<3 { await controller.ingest(forged) }
        await controller.ingest(sealedReport(code, voter: 1, answer: .choice(0)))  // question 1 is closed
        await controller.flush()
        let q1 = await controller.results(question: 1), q2 = await controller.results(question: 2)
        XCTAssertEqual(q1.rejected, ["badTag": 2])
        XCTAssertEqual(q2.rejected, ["badTag": 3, "otherQuestion": 1])
        let resumed = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false),
                                         store: try ClickerStore(path: path, durability: .normal),
                                         start: .resume(maxAge: .seconds(3600)))
        let r1 = await resumed.results(question: 1), r2 = await resumed.results(question: 2)
        XCTAssertEqual(r1.rejected, q1.rejected)
        XCTAssertEqual(r2.rejected, q2.rejected)
    }
}
