import struct ClickerTransport.SplitMix64
import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

final class RosterTests: XCTestCase {
    func keys(_ n: Int, seed: UInt64 = 41) -> [DeviceKey] {
        var rng = SplitMix64(seed: seed)
        return (0..<n).map { _ in DeviceKey.generate(using: &rng) }
    }

    func testParsesCSVWithHeaderQuotesAndCRLF() throws {
        let k = keys(3)
        let csv = "\u{FEFF}name,student_id,enrollment_code\r\n"
            + "Ada Lovelace, s001 ,\(k[0].enrollmentCode)\r\n"
            + "\r\n"
            + "\"Hopper, Grace\",s002,\(k[1].enrollmentCode.description.lowercased())\n"
            + "\"Said \"\"Bob\"\"\",s003,\(k[2].enrollmentCode)"
        let r = try Roster(csv: csv)
        XCTAssertEqual(r.entries.map(\.name), ["Ada Lovelace", "Hopper, Grace", "Said \"Bob\""])
        XCTAssertEqual(r.entries.map(\.studentID), ["s001", "s002", "s003"])
        XCTAssertEqual(r.rosterKeys, k.map(\.rosterKey))
        XCTAssertEqual(try Roster(csv: r.csv), r)
        // No header is fine too.
        XCTAssertEqual(try Roster(csv: "A,1,\(k[0].enrollmentCode)\n").entries.count, 1)
    }

    func testClearErrorsWithLineNumbers() {
        let k = keys(2)
        func error(_ csv: String) -> RosterError? {
            do { _ = try Roster(csv: csv); return nil } catch { return error }
        }
        XCTAssertEqual(error("name,student_id,enrollment_code\nA,1\n"), RosterError(line: 2, problem: .wrongFieldCount(2)))
        XCTAssertEqual(error("A,1,\(k[0].enrollmentCode)\n,2,\(k[1].enrollmentCode)"), RosterError(line: 2, problem: .emptyName))
        XCTAssertEqual(error("A,,\(k[0].enrollmentCode)"), RosterError(line: 1, problem: .emptyStudentID))
        XCTAssertEqual(error("A,1,CE2-XYZ"), RosterError(line: 1, problem: .badEnrollmentCode(.wrongLength(3))))
        XCTAssertEqual(error("A,1,CE1-XYZ"), RosterError(line: 1, problem: .badEnrollmentCode(.versionOne)))
        XCTAssertEqual(error("A,1,\(k[0].enrollmentCode)\n\nB,1,\(k[1].enrollmentCode)"),
                       RosterError(line: 3, problem: .duplicateStudentID("1", firstSeenAt: 1)))
        XCTAssertEqual(error("A,1,\(k[0].enrollmentCode)\nB,2,\(k[0].enrollmentCode)"),
                       RosterError(line: 2, problem: .duplicateEnrollmentCode(name: "A")))
        XCTAssertEqual(error("\"A,1,x"), RosterError(line: 1, problem: .unterminatedQuote))
        XCTAssertEqual(error("\"A\"x,1,\(k[0].enrollmentCode)"), RosterError(line: 1, problem: .textAfterQuote))
        XCTAssertEqual(error("A,1,\(k[0].enrollmentCode)\nB,2,\(k[1].enrollmentCode)\nC"),
                       RosterError(line: 3, problem: .wrongFieldCount(1)))
        XCTAssertTrue(RosterError(line: 3, problem: .emptyName).description.hasPrefix("roster line 3:"))
    }

    func testCSVParserNeverTraps() {
        var rng = SplitMix64(seed: 42)
        let alphabet = Array("ab,\"\n\r \t1CE-é")
        for _ in 0..<5000 {
            let s = String((0..<Int.random(in: 0...40, using: &rng)).map { _ in alphabet.randomElement(using: &rng) ?? "a" })
            _ = try? Roster(csv: s)
        }
    }

    /// SECURITY.md: in a roster poll, each enrolled student counts once under their own key; an
    /// unenrolled device's (anonymous) votes are kept apart; a roster ballot from a device not on
    /// the roster cannot be verified and is rejected as unknownVoter.
    func testRosterPollEndToEnd() throws {
        let k = keys(4)
        let roster = try Roster(entries: (0..<3).map {
            RosterEntry(name: "S\($0)", studentID: "\($0)", enrollment: k[$0].enrollmentCode)
        })
        let code = try JoinCode(parsing: "4821-K7QXM-3PF9A")
        var p = IngestPipeline(secret: pollSecret(code), roster: roster.rosterKeys, rosterOnly: true)
        p.tally.open(.choice(1))
        func report(_ s: BallotSealer, _ answer: Answer, seq: UInt16 = 1, addr: UInt64) -> AdvertisementReport {
            AdvertisementReport(address: DeviceAddress(rawValue: addr), rssi: nil, companyID: BallotFormat.companyID,
                                data: s.advertisement(question: 1, sequence: seq, answer: answer), timestamp: .ms(addr))
        }
        let s0 = BallotSealer(secret: pollSecret(code), deviceKey: k[0], mode: .roster)
        let s1 = BallotSealer(secret: pollSecret(code), deviceKey: k[1], mode: .roster)
        XCTAssertEqual(p.ingest(report(s0, .choice(0), addr: 1)).outcome, .new)
        XCTAssertEqual(p.ingest(report(s1, .choice(2), addr: 2)).outcome, .new)
        XCTAssertEqual(p.ingest(report(s1, .choice(3), seq: 2, addr: 2)).outcome, .changed(from: .choice(2)))
        // Device 3 is not enrolled: roster ballots unverifiable, anonymous ones kept apart.
        let outsider = BallotSealer(secret: pollSecret(code), deviceKey: k[3], mode: .roster)
        XCTAssertEqual(p.ingest(report(outsider, .choice(1), addr: 3)).outcome, .rejected(.unknownVoter))
        let anon = BallotSealer(secret: pollSecret(code), deviceKey: k[3])
        XCTAssertEqual(p.ingest(report(anon, .choice(1), addr: 4)).outcome, .unregistered)
        // Student 2's key with another poll's code does not verify here.
        let stale = BallotSealer(secret: pollSecret(try JoinCode(parsing: "4821-K7QXM-3PF9B")), deviceKey: k[2], mode: .roster)
        XCTAssertEqual(p.ingest(report(stale, .choice(1), addr: 5)).outcome, .rejected(.unknownVoter))
        // A student cannot vote as another: flipping the voter ID breaks the tag.
        var forged = report(s0, .choice(1), seq: 9, addr: 6)
        let other = s1.voterID
        forged.data[5] = UInt8(other >> 24); forged.data[6] = UInt8(truncatingIfNeeded: other >> 16)
        forged.data[7] = UInt8(truncatingIfNeeded: other >> 8); forged.data[8] = UInt8(truncatingIfNeeded: other)
        XCTAssertEqual(p.ingest(forged).outcome, .rejected(.badTag))
        // Nor can a classmate who copies student 1's voter ID off the air seal a winning ballot for it
        // with the poll key, all the join code gives (this pipeline makes no GATT reads).
        let copied = Ballot(mode: .roster, voteID: code.voteID, question: 1, voterID: s1.voterID, sequence: 0xFFFF,
                            answer: .choice(0))
        var copy = report(s1, .choice(3), seq: 2, addr: 7)
        copy.data = BallotCodec.sealAdvertisement(copied, key: .anonymous(pollSecret(code)))
        XCTAssertEqual(p.ingest(copy).outcome, .rejected(.badTag))
        // A classmate with the join code alone cannot read a student's answer: without the roster its
        // keyring has no key for the voter, and the poll's own key does not open the ballot.
        let heard = report(s1, .choice(3), seq: 2, addr: 2).data
        let classmate = PollKeyring(secret: pollSecret(code))
        XCTAssertEqual(BallotCodec.openAdvertisement(heard, keyring: classmate), .failure(.unknownVoter))
        let withPollKey = heard.withUnsafeBytes { b in
            BallotCodec.header(b, length: BallotFormat.advertisementLength, voteID: code.voteID).flatMap { h in
                BallotCodec.verifyAndDecrypt(b, header: h, key: .anonymous(pollSecret(code)))
            }
        }
        XCTAssertEqual(withPollKey, .failure(.badTag))
        XCTAssertEqual(try BallotCodec.openAdvertisement(heard, keyring: p.keyring).get().answer, .choice(3),
                       "the instructor's keyring, which holds the roster, opens it")

        let results = try XCTUnwrap(p.tally.results(question: 1))
        XCTAssertEqual(results.voters, 2)
        XCTAssertEqual(results.unregisteredVoters, 1)
        XCTAssertEqual(results.countTable[.choice(1)], 0)
        let byStudent = roster.answers(results, keyring: p.keyring)
        XCTAssertEqual(byStudent.map(\.entry.name), ["S0", "S1", "S2"])
        XCTAssertEqual(byStudent.map(\.answer), [.choice(0), .choice(3), nil])
    }
}
