import ClickerLedger
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import PostgresClient
import XCTest

/// The tally's beacon in the ledger (schema version 7), against a real server: what the tally writes
/// is what a receiver reads, every write is notified, and a receiver token reads its own poll's beacon
/// and writes none.
final class LedgerBeaconTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    let later = Int64(Date().timeIntervalSince1970) + 10 * 365 * 86_400

    /// A payload of `count` frames of assorted lengths (1…247 bytes), drawn from `rng`.
    func payload(_ count: Int, using rng: inout SplitMix64) -> BroadcastPayload {
        BroadcastPayload(companyID: 0xFFFF, frames: (0..<count).map { _ in
            (0..<Int.random(in: 1...247, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }, interval: .milliseconds(Int64.random(in: 20...10_240, using: &rng)))
    }

    func testWhatTheTallyWritesIsWhatAReceiverReadsAndEveryWriteIsNotified() throws {
        let url = try SharedServer.database()
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 4, voteID: 44, policy: .latestWins, questions: [1])
        let token = try instructor.issueReceiverToken(poll: 4, validUntil: later)
        let receiver = try BallotLedger(url: token.url(replacingCredentialsOf: url), migrate: false)
        let listening = try PostgresConnection(url: token.url(replacingCredentialsOf: url))
        try listening.execute("LISTEN \(LedgerSchema.beaconChannel)")
        XCTAssertNil(try receiver.beacon(poll: 4), "nothing written yet")

        var rng = SplitMix64(seed: 7)
        var notified = 0
        for round in 1...300 {
            // Every fifth round the tally stopped broadcasting; the others, 1–8 frames.
            let p: BroadcastPayload? = round % 5 == 0 ? nil : payload(Int.random(in: 1...8, using: &rng), using: &rng)
            try instructor.publishBeacon(poll: 4, payload: p)
            let read = try XCTUnwrap(try receiver.beacon(poll: 4))
            XCTAssertEqual(read.payload, p, "round \(round)")
            XCTAssertEqual(read.serial, Int64(round))
            XCTAssertLessThan(read.age, .seconds(60))
            XCTAssertGreaterThanOrEqual(read.age, .zero)
            notified += try listening.notifications(waitingUpTo: .seconds(10)).filter { $0.payload == "4" }.count
        }
        XCTAssertEqual(notified, 300, "one notification per write")

        // A beacon written 7 s ago reads as 7 s old, by the database's clock, whatever the reader's.
        try PostgresConnection(url: url).execute("UPDATE beacons SET written_at = now() - interval '7 seconds'")
        let old = try XCTUnwrap(try receiver.beacon(poll: 4))
        XCTAssertGreaterThanOrEqual(old.age, .seconds(7))
        XCTAssertLessThan(old.age, .seconds(67))
    }

    func testAReceiverTokenReadsItsOwnPollsBeaconAndWritesNone() throws {
        let url = try SharedServer.database()
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 1, voteID: 11, policy: .latestWins, questions: [1])
        try instructor.register(poll: 2, voteID: 22, policy: .latestWins, questions: [1])
        var rng = SplitMix64(seed: 3)
        let tallys = payload(3, using: &rng)
        try instructor.publishBeacon(poll: 1, payload: tallys)
        try instructor.publishBeacon(poll: 2, payload: payload(2, using: &rng))
        let token = try instructor.issueReceiverToken(poll: 1, validUntil: later)
        let receiverURL = token.url(replacingCredentialsOf: url)
        let receiver = try BallotLedger(url: receiverURL, migrate: false)
        XCTAssertEqual(try receiver.beacon(poll: 1)?.payload, tallys)
        XCTAssertNil(try receiver.beacon(poll: 2), "another poll's beacon is not visible")

        // 300 forged payloads through the ledger's own call, and the token's own SQL: all refused.
        for _ in 0..<300 {
            XCTAssertThrowsError(try receiver.publishBeacon(poll: 1, payload: payload(2, using: &rng))) {
                XCTAssertEqual(sqlState($0), "42501")
            }
        }
        let db = try PostgresConnection(url: receiverURL)
        for statement in ["UPDATE beacons SET frames = '\\x0143'", "DELETE FROM beacons",
                          "INSERT INTO beacons (poll_id, serial, company_id, interval_us, frames) VALUES (1, 99, 65535, 100000, '\\x0143')",
                          "UPDATE beacons SET written_at = now() + interval '1 day'"] {
            XCTAssertThrowsError(try db.execute(statement), statement) { XCTAssertEqual(sqlState($0), "42501", statement) }
        }
        let kept = try XCTUnwrap(try instructor.beacon(poll: 1))
        XCTAssertEqual(kept.payload, tallys)
        XCTAssertEqual(kept.serial, 1, "nothing the token did changed the tally's beacon")

        // What it learns of another poll's beacon: its number, when it changes.
        try db.execute("LISTEN \(LedgerSchema.beaconChannel)")
        try instructor.publishBeacon(poll: 2, payload: payload(1, using: &rng))
        XCTAssertEqual(try db.notifications(waitingUpTo: .seconds(10)).map(\.payload), ["2"])

        // Once the poll is closed the token reads nothing.
        try instructor.close(poll: 1)
        XCTAssertThrowsError(try BallotLedger(url: receiverURL, migrate: false).beacon(poll: 1))
    }

    /// A stored value this build did not write is an error, and decoding never traps: 2,000 random
    /// byte strings, and every frame list the encoder takes comes back as it was.
    func testTheStoredFormIsCheckedAndAForeignRowIsAnError() throws {
        var rng = SplitMix64(seed: 11)
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 0...600, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if let frames = LedgerBeacon.decode(bytes) {
                XCTAssertEqual(LedgerBeacon.encode(frames), bytes, "what decodes encodes back to the same bytes")
            }
            let frames = payload(Int.random(in: 0...10, using: &rng), using: &rng).frames
            XCTAssertEqual(LedgerBeacon.encode(frames).flatMap(LedgerBeacon.decode), frames)
        }
        XCTAssertNil(LedgerBeacon.encode([[]]), "an empty frame is not stored")
        XCTAssertNil(LedgerBeacon.encode([[UInt8](repeating: 1, count: 252)]), "nor one over 251 bytes")

        let url = try SharedServer.database()
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 3, voteID: 33, policy: .latestWins, questions: [1])
        try instructor.publishBeacon(poll: 3, payload: payload(2, using: &rng))
        let db = try PostgresConnection(url: url)
        try db.execute("UPDATE beacons SET frames = '\\x05cb4b'")
        XCTAssertThrowsError(try instructor.beacon(poll: 3)) { XCTAssertTrue("\($0)".contains("beacon row"), "\($0)") }
    }
}
