import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import TallyDaemon
import TerminalView
import XCTest

/// The live counts every consumer reads: epochs of at least 10 voters and 5 s while a question is
/// open, hidden by default in roster polls, exact once closed. Injected clock, no sleeps.
final class LiveCountsTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func report(voter: UInt32, answer: UInt8, sequence: UInt16 = 1, question: UInt8 = 1) -> AdvertisementReport {
        let b = Ballot(voteID: code.voteID, question: question, voterID: voter, sequence: sequence, answer: .choice(answer))
        return AdvertisementReport(address: DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(voter)), rssi: -60,
                                   companyID: BallotFormat.companyID,
                                   data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(code))), timestamp: .zero)
    }

    func counts(_ c: PollController, at t: Date) async -> [Int] {
        await c.viewModel(status: nil, now: t).answers.map(\.count)
    }

    func testCountsMoveOnlyAtEpochsOfTenVotersAndFiveSeconds() async throws {
        let c = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let t0 = Date()
        for v in UInt32(1)...9 { await c.ingest(report(voter: v, answer: 0)) }
        // One voter changing their answer over and over is one voter: it cannot fill an epoch.
        for s in UInt16(2)...11 { await c.ingest(report(voter: 9, answer: UInt8(s % 4), sequence: s)) }
        let nine = await counts(c, at: t0 + 60)
        XCTAssertEqual(nine, [0, 0, 0, 0], "nine voters are not an epoch")
        let model = await c.viewModel(status: nil, now: t0 + 60)
        XCTAssertEqual(model.voters, 0, "voters move with the counts")
        let exact = await c.results()
        XCTAssertEqual(exact.voters, 9, "results are exact")

        await c.ingest(report(voter: 10, answer: 1))
        let ten = await counts(c, at: t0 + 61)
        XCTAssertEqual(ten, [8, 1, 0, 1], "ten voters and 61 s: an epoch")

        // Ten more voters at once: not before 5 s have passed since that epoch.
        for v in UInt32(11)...20 { await c.ingest(report(voter: v, answer: 3)) }
        let early = await counts(c, at: t0 + 65.9)
        XCTAssertEqual(early, [8, 1, 0, 1])
        let due = await counts(c, at: t0 + 66.5)
        XCTAssertEqual(due, [8, 1, 0, 11])

        // Closing shows the exact counts at once, whatever the epoch.
        await c.ingest(report(voter: 21, answer: 2))
        try await c.closeQuestion()
        let closed = await counts(c, at: t0 + 67)
        XCTAssertEqual(closed, [8, 1, 1, 11])
        let r = await c.results()
        XCTAssertEqual(closed, ["A", "B", "C", "D"].map { r.counts[$0] ?? -1 })

        // The next question starts from zero and batches again.
        try await c.nextQuestion()
        for v in UInt32(1)...3 { await c.ingest(report(voter: v, answer: 2, question: 2)) }
        let next = await counts(c, at: Date() + 60)
        XCTAssertEqual(next, [0, 0, 0, 0])
    }

    func testRosterPollsHideCountsWhileOpenUntilShown() async throws {
        let keys = (0..<12).map { _ in DeviceKey.generate() }
        let roster = try Roster(entries: keys.enumerated().map {
            RosterEntry(name: "S\($0.offset)", studentID: "s\($0.offset)", enrollment: $0.element.enrollmentCode)
        })
        let c = try PollController(options: PollOptions(joinCode: code, roster: roster, confirmByGATT: false), store: nil)
        let t0 = Date()
        for (i, k) in keys.enumerated() {
            let s = BallotSealer(secret: pollSecret(code), deviceKey: k, mode: .roster)
            await c.ingest(AdvertisementReport(address: DeviceAddress(rawValue: UInt64(i + 1)), rssi: nil,
                                               companyID: BallotFormat.companyID,
                                               data: s.advertisement(question: 1, sequence: 1, answer: .choice(UInt8(i % 2))),
                                               timestamp: .zero))
        }
        var m = await c.viewModel(status: nil, now: t0 + 60)
        XCTAssertTrue(m.countsHidden)
        XCTAssertEqual(m.answers.map(\.count), [0, 0, 0, 0], "the model carries no count while hidden")
        XCTAssertEqual(m.voters, 12, "an epoch passed: voters counted still show")
        XCTAssertEqual(PlainLineFormatter().statusLine(m).contains("A="), false)

        // The h key (what `watch` sends over D-Bus as ShowCounts) shows them, batched.
        let status = await c.perform(.toggleCounts, exportDirectory: "/nonexistent")
        XCTAssertEqual(status, "counts shown")
        m = await c.viewModel(status: nil, now: t0 + 60)
        XCTAssertFalse(m.countsHidden)
        XCTAssertEqual(m.answers.map(\.count), [6, 6, 0, 0])

        // Hidden again, then closed: closed questions always show their exact results.
        _ = await c.perform(.toggleCounts, exportDirectory: "/nonexistent")
        try await c.closeQuestion()
        m = await c.viewModel(status: nil, now: t0 + 61)
        XCTAssertFalse(m.countsHidden)
        XCTAssertEqual(m.answers.map(\.count), [6, 6, 0, 0])
    }
}
