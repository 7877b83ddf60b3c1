import struct ClickerTransport.SplitMix64
@testable import ClickerStore
import ClickerWire
import Foundation
import XCTest

final class StoreTests: XCTestCase {
    let t0 = Date(timeIntervalSince1970: 1_790_000_000.125)

    func ballot(_ poll: Int64, q: Int, voter: UInt64, answer: Int, seq: UInt32, at offset: Double = 0,
                verified: Bool = false) -> BallotRecord {
        BallotRecord(poll: poll, question: q, voter: voterID(voter), answer: .choice(UInt8(answer)), sequence: seq,
                     address: "00:AA:01:00:00:\(String(format: "%02X", voter % 256))",
                     firstHeard: t0.addingTimeInterval(offset), lastHeard: t0.addingTimeInterval(offset + 0.5),
                     gattVerified: verified)
    }

    func testRoundTrip() throws {
        let dir = try makeTempDir(self)
        let store = try ClickerStore(path: dir + "/db.sqlite")
        let poll = try store.createPoll(voteID: Data([1, 2, 3, 4]), joinCode: "482913",
                                        mode: .roster, title: "Week 1", at: t0)
        XCTAssertEqual(try store.polls(), [poll])
        let q1 = try store.openQuestion(poll: poll.id, number: 1, at: t0)
        XCTAssertEqual(q1.state, .open)
        let ballots = [ballot(poll.id, q: 1, voter: 1, answer: 0, seq: 1),
                       ballot(poll.id, q: 1, voter: 2, answer: 3, seq: 7, verified: true),
                       ballot(poll.id, q: 1, voter: 1, answer: 2, seq: 2, at: 3)]
        try store.record(ballots[0])
        try store.record(Array(ballots[1...]), rejections: [RejectionCount(poll: poll.id, question: 1, reason: "bad-tag", count: 2)])
        try store.countRejection(poll: poll.id, question: 1, reason: "bad-tag")
        try store.countRejection(poll: poll.id, question: 1, reason: "replay", count: 5)
        let closed = try store.closeQuestion(poll: poll.id, number: 1, at: t0.addingTimeInterval(60))
        XCTAssertEqual(closed.state, .closed)
        XCTAssertEqual(closed.closedAt, t0.addingTimeInterval(60))
        XCTAssertEqual(closed.openedAt, t0, "timestamps round-trip exactly")

        let back = try store.ballots(poll: poll.id)
        XCTAssertEqual(Set(back), Set(ballots))
        XCTAssertEqual(back.map(\.sequence), [1, 2, 7], "ordered by voter then sequence")
        XCTAssertEqual(try store.rejections(poll: poll.id),
                       [RejectionCount(poll: poll.id, question: 1, reason: "bad-tag", count: 3),
                        RejectionCount(poll: poll.id, question: 1, reason: "replay", count: 5)])

        let summary = try XCTUnwrap(store.summary(poll: poll.id).first)
        XCTAssertEqual(summary.counts, [0, 0, 1, 1])
        XCTAssertEqual(summary.voters, 2)
        XCTAssertEqual(summary.changes, 1)
        XCTAssertEqual(summary.gattVerified, 1)
        XCTAssertEqual(summary.rejections, ["bad-tag": 3, "replay": 5])

        try store.enroll([EnrolledStudent(studentId: "s1", name: "Ada", enrollmentKey: Data([7]))])
        try store.enroll([EnrolledStudent(studentId: "s1", name: "Ada L.", enrollmentKey: Data([7])),
                          EnrolledStudent(studentId: "s0", name: "Bob", enrollmentKey: nil)])
        XCTAssertEqual(try store.roster().map(\.name), ["Bob", "Ada L."])
        XCTAssertEqual(try store.integrityCheck(), ["ok"])
    }

    /// Every answer kind is stored in the wire's answer encoding and reads back as itself; the
    /// export writes it as the voter typed it.
    func testEveryAnswerKindRoundTrips() throws {
        let store = try ClickerStore(path: try makeTempDir(self) + "/db.sqlite")
        let poll = try store.createPoll(voteID: Data([8, 0xED]), joinCode: nil, mode: .roster, at: t0)
        try store.openQuestion(poll: poll.id, number: 1, at: t0)
        let answers: [Answer] = [.choice(7), .trueFalse(true), .multiSelect(0b101), .numeric(-3),
                                 .ranking(try XCTUnwrap(Ranking(order: [1, 0, 2])))]
        var ballots = answers.enumerated().map { ballot(poll.id, q: 1, voter: UInt64($0.offset), answer: 0, seq: 1) }
        for i in ballots.indices { ballots[i].answer = answers[i] }
        try store.record(ballots)
        XCTAssertEqual(try store.ballots(poll: poll.id).map(\.answer), answers)
        let rows = try csvRecords(try XCTUnwrap(try store.export(poll: poll.id).ballotsCSV))
        XCTAssertEqual(rows.map { $0["answer"] ?? "" }, ["H", "true", "A+C", "-3", "B>A>C"])
    }

    /// The first answer of a sequence stays, except that a verified ballot replaces an unverified one
    /// with its sequence (the tally counted the verified one); an unverified one never replaces it back.
    func testReheardBallotWidensIntervalAndKeepsFirstAnswer() throws {
        let dir = try makeTempDir(self)
        let store = try ClickerStore(path: dir + "/db.sqlite")
        let poll = try store.createPoll(voteID: Data([1]), joinCode: nil, mode: .roster, at: t0)
        try store.openQuestion(poll: poll.id, number: 1, at: t0)
        try store.record(ballot(poll.id, q: 1, voter: 5, answer: 1, seq: 3, at: 10))
        var again = ballot(poll.id, q: 1, voter: 5, answer: 2, seq: 3, at: 20, verified: true)
        try store.record(again)
        again = ballot(poll.id, q: 1, voter: 5, answer: 1, seq: 3, at: 5)
        try store.record(again)
        let stored = try store.ballots(poll: poll.id)
        XCTAssertEqual(stored.count, 1)
        XCTAssertEqual(stored[0].answer, .choice(2))
        XCTAssertEqual(stored[0].firstHeard, t0.addingTimeInterval(5))
        XCTAssertEqual(stored[0].lastHeard, t0.addingTimeInterval(20.5))
        XCTAssertTrue(stored[0].gattVerified)
    }

    func testUnknownQuestionAndPollAreTypedErrors() throws {
        let dir = try makeTempDir(self)
        let store = try ClickerStore(path: dir + "/db.sqlite")
        let poll = try store.createPoll(voteID: Data([1]), joinCode: nil, mode: .anonymous, at: t0)
        XCTAssertThrowsError(try store.record(ballot(poll.id, q: 4, voter: 1, answer: 0, seq: 1))) {
            XCTAssertEqual($0 as? StoreError, .unknownQuestion(poll: poll.id, number: 4))
        }
        XCTAssertThrowsError(try store.openQuestion(poll: 99, number: 1)) { XCTAssertEqual($0 as? StoreError, .unknownPoll(99)) }
        XCTAssertThrowsError(try store.openQuestion(poll: poll.id, number: 0))
        XCTAssertThrowsError(try store.closeQuestion(poll: poll.id, number: 2)) {
            XCTAssertEqual($0 as? StoreError, .unknownQuestion(poll: poll.id, number: 2))
        }
        // A failed batch leaves nothing behind.
        try store.openQuestion(poll: poll.id, number: 1)
        XCTAssertThrowsError(try store.record([ballot(poll.id, q: 1, voter: 1, answer: 0, seq: 1),
                                                ballot(poll.id, q: 2, voter: 1, answer: 0, seq: 1)]))
        XCTAssertEqual(try store.ballots(poll: poll.id), [])
    }

    func testResumeAfterReopeningTheFile() throws {
        let dir = try makeTempDir(self)
        let path = dir + "/db.sqlite"
        var expected: [BallotRecord] = []
        var pollID: Int64 = 0
        do {
            let store = try ClickerStore(path: path)
            let old = try store.createPoll(voteID: Data([0]), joinCode: "1", mode: .roster, at: t0)
            try store.closePoll(old.id)
            // A roster poll: an anonymous one keeps only totals of a closed question (StoreSealTests).
            let poll = try store.createPoll(voteID: Data([0xAB, 0xCD]), joinCode: "771204",
                                            mode: .roster, at: t0)
            pollID = poll.id
            try store.openQuestion(poll: poll.id, number: 1, at: t0)
            var rng = SplitMix64(seed: 42)
            for v in 0..<50 as Range<UInt64> {
                let b = ballot(poll.id, q: 1, voter: v, answer: Int.random(in: 0..<4, using: &rng), seq: 1)
                expected.append(b)
            }
            try store.record(expected)
            try store.closeQuestion(poll: poll.id, number: 1, at: t0.addingTimeInterval(30))
            try store.openQuestion(poll: poll.id, number: 2, at: t0.addingTimeInterval(40))
            let late = ballot(poll.id, q: 2, voter: 3, answer: 1, seq: 2)
            try store.record(late)
            expected.append(late)
            try store.countRejection(poll: poll.id, question: 2, reason: "bad-tag", count: 4)
        }
        let reopened = try ClickerStore(path: path)
        let state = try XCTUnwrap(reopened.resume())
        XCTAssertEqual(state.poll.id, pollID)
        XCTAssertEqual(state.poll.joinCode, "771204")
        XCTAssertEqual(state.poll.mode, .roster)
        XCTAssertEqual(state.questions.map(\.state), [.closed, .open])
        XCTAssertEqual(state.questions.map(\.number), [1, 2])
        XCTAssertEqual(Set(state.ballots), Set(expected))
        XCTAssertEqual(state.ballots.count, expected.count)
        XCTAssertEqual(state.rejections, [RejectionCount(poll: pollID, question: 2, reason: "bad-tag", count: 4)])
        // Closing the poll means nothing is resumed any more.
        try reopened.closePoll(pollID)
        XCTAssertNil(try reopened.resume())
        XCTAssertEqual(try reopened.questions(poll: pollID).map(\.state), [.closed, .closed])
    }

    func testFilePermissionsAndDefaultLocation() throws {
        let dir = try makeTempDir(self)
        let stateDir = dir + "/xdg/state"
        let env = ["XDG_STATE_HOME": stateDir, "HOME": "/nonexistent"]
        XCTAssertEqual(try StoreLocation.defaultPath(environment: env), stateDir + "/clicker/clicker.sqlite")
        XCTAssertEqual(try StoreLocation.defaultPath(environment: ["STATE_DIRECTORY": "/var/lib/clicker:/var/lib/other", "XDG_STATE_HOME": "/x"]),
                       "/var/lib/clicker/clicker.sqlite")
        XCTAssertEqual(try StoreLocation.defaultPath(environment: ["HOME": "/home/ada"]), "/home/ada/.local/state/clicker/clicker.sqlite")
        XCTAssertThrowsError(try StoreLocation.defaultPath(environment: [:]))

        let store = try ClickerStore(environment: env)
        let poll = try store.createPoll(voteID: Data([1]), joinCode: nil, mode: .roster)
        try store.openQuestion(poll: poll.id, number: 1)
        func mode(_ p: String) throws -> Int {
            let attrs = try FileManager.default.attributesOfItem(atPath: p)
            return try XCTUnwrap(attrs[.posixPermissions] as? Int)
        }
        XCTAssertEqual(store.path, stateDir + "/clicker/clicker.sqlite")
        XCTAssertEqual(try mode(stateDir + "/clicker"), 0o700)
        XCTAssertEqual(try mode(store.path), 0o600)
        XCTAssertEqual(try mode(store.path + "-wal"), 0o600)
        let exportDir = dir + "/export"
        let files = try store.export(poll: poll.id, to: exportDir)
        XCTAssertEqual(files.count, 3)
        for f in files { XCTAssertEqual(try mode(f), 0o600) }
    }

    func testSummaryCountsOnlyEachVotersLatestBallot() {
        let q = QuestionRecord(poll: 1, number: 1, state: .open, openedAt: t0, closedAt: nil)
        var bs: [BallotRecord] = []
        // voter 1: A → B → A (changed), voter 2: D twice (no change), voter 3: answer 5 (extends counts).
        bs.append(ballot(1, q: 1, voter: 1, answer: 0, seq: 9))
        bs.append(ballot(1, q: 1, voter: 1, answer: 1, seq: 10))
        bs.append(ballot(1, q: 1, voter: 1, answer: 0, seq: 12))
        bs.append(ballot(1, q: 1, voter: 2, answer: 3, seq: 1))
        bs.append(ballot(1, q: 1, voter: 2, answer: 3, seq: 2))
        bs.append(ballot(1, q: 1, voter: 3, answer: 5, seq: 1))
        bs.append(ballot(1, q: 2, voter: 3, answer: 1, seq: 1)) // other question, ignored
        let s = ClickerStore.summarize(questions: [q], ballots: bs.shuffled(), rejections: [])
        XCTAssertEqual(s.count, 1)
        XCTAssertEqual(s[0].counts, [1, 0, 0, 1, 0, 1])
        XCTAssertEqual(s[0].voters, 3)
        XCTAssertEqual(s[0].changes, 1, "voters whose counted answer changed, as the live tally counts")
    }

    /// Anonymous poll: a verified ballot is the counted one whatever the sequences, as in the live tally.
    func testSummaryCountsTheVerifiedBallotOverAHigherUnverifiedOne() {
        let q = QuestionRecord(poll: 1, number: 1, state: .open, openedAt: t0, closedAt: nil)
        let bs = [ballot(1, q: 1, voter: 1, answer: 3, seq: 0xFFFF),
                  ballot(1, q: 1, voter: 1, answer: 1, seq: 4, verified: true)]
        let s = ClickerStore.summarize(questions: [q], ballots: bs, rejections: [], mode: .anonymous)
        XCTAssertEqual(s[0].counts, [0, 1, 0, 0])
        XCTAssertEqual(s[0].gattVerified, 1)
        let roster = ClickerStore.summarize(questions: [q], ballots: bs, rejections: [], mode: .roster)
        XCTAssertEqual(roster[0].counts, [0, 0, 0, 1], "roster ballots are all verified: the highest sequence counts")
    }
}
