import ClickerLedger
import ClickerTestSupport
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import PostgresClient
import PostgresTestSupport
import Synchronization
import XCTest

/// One private PostgreSQL server per test class, started by its first test and stopped by the class's
/// tearDown. Without server binaries the tests are skipped, or fail when `CLICKER_REQUIRE_POSTGRES=1`
/// (scripts/test.sh sets it: CI must run them).
enum SharedServer {
    private static let server = Mutex<PostgresTestServer?>(nil)

    static func get() throws -> PostgresTestServer {
        try server.withLock { current in
            if let current { return current }
            guard PostgresTestServer.binaries() != nil else {
                let why = "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin): apt-get install postgresql"
                if ProcessInfo.processInfo.environment["CLICKER_REQUIRE_POSTGRES"] == "1" {
                    throw PostgresTestServer.Unavailable(why + " (CLICKER_REQUIRE_POSTGRES=1)")
                }
                throw XCTSkip(why)
            }
            let started = try PostgresTestServer()
            current = started
            return started
        }
    }

    static func stop() { server.withLock { $0?.stop(); $0 = nil } }

    /// A fresh, empty database on the shared server.
    static func database() throws -> String {
        try get().makeDatabase("t" + UUID().uuidString.lowercased().filter { $0 != "-" })
    }
}

extension LedgerBallot {
    /// The order a single receiver hearing everything would count ballots in: heard time, then the
    /// ledger's tie-breaks (answer bytes, address), then the rest, for a total order.
    var heardOrderKey: [Int64] {
        let (k, hi, lo) = answer.wireBytes
        return [heardAt, Int64(k), Int64(hi), Int64(lo), Int64(address.rawValue), Int64(question), Int64(voter.mode.rawValue),
                Int64(voter.voterID), Int64(sequence), verified ? 1 : 0]
    }
}

enum Reference {
    /// The voter's per-poll key: one per anonymous voter ID, so a signed read always matches the binding.
    static func key(_ voterID: UInt32) -> VoterPublicKey? {
        VoterPublicKey((0..<32).map { UInt8(truncatingIfNeeded: voterID >> (($0 % 4) * 8)) ^ UInt8($0) })
    }

    /// Feeds `ballots` once each, in heard order, to a fresh in-process tally.
    static func tally(_ ballots: some Sequence<LedgerBallot>, voteID: UInt16, policy: ChangePolicy, questions: [UInt8]) -> Tally {
        var tally = Tally(voteID: voteID, policy: policy)
        for q in questions { tally.open(.choice(q, options: 4)) }
        for b in ballots.sorted(by: { $0.heardOrderKey.lexicographicallyPrecedes($1.heardOrderKey) }) {
            let ballot = Ballot(mode: b.voter.mode, voteID: voteID, question: b.question, voterID: b.voter.voterID,
                                sequence: b.sequence, answer: b.answer)
            // A roster ballot is verified by its tag; an anonymous one by a signed read.
            var proof = BallotProof.advertised
            if b.verified, b.voter.mode == .anonymous, let key = key(b.voter.voterID) { proof = .signed(key) }
            _ = tally.record(ballot, from: b.address, at: RadioInstant(nanoseconds: UInt64(b.heardAt) * 1000), proof: proof)
        }
        return tally
    }
}

/// Checks that the ledger holds, for every question, what `tally` counted: the same voters with the
/// same counted ballot (answer, sequence, verified, address) and span (sequences, first and last
/// heard), and the same counts per answer.
func assertLedger(_ ledger: BallotLedger, poll: Int64, equals tally: Tally, questions: [UInt8], _ context: String,
                  file: StaticString = #filePath, line: UInt = #line) throws {
    for q in questions {
        let counted = try ledger.counted(poll: poll, question: q)
        let expected = tally.question(q)?.voters ?? [:]
        XCTAssertEqual(Set(counted.keys), Set(expected.keys), "\(context) q\(q): voters", file: file, line: line)
        for (key, r) in expected {
            guard let c = counted[key] else { continue }
            XCTAssertEqual(c.answer, r.answer, "\(context) q\(q) \(key): answer", file: file, line: line)
            XCTAssertEqual(c.sequence, r.sequence, "\(context) q\(q) \(key): sequence", file: file, line: line)
            XCTAssertEqual(c.verified, r.verified, "\(context) q\(q) \(key): verified", file: file, line: line)
            XCTAssertEqual(c.address, r.address, "\(context) q\(q) \(key): address", file: file, line: line)
            XCTAssertEqual([c.lowestSequence, c.highestSequence], [r.lowestSequence, r.highestSequence],
                           "\(context) q\(q) \(key): sequences heard", file: file, line: line)
            XCTAssertEqual([c.firstHeard, c.lastHeard], [Int64(r.firstHeard.nanoseconds / 1000), Int64(r.lastHeard.nanoseconds / 1000)],
                           "\(context) q\(q) \(key): first and last heard", file: file, line: line)
        }
        XCTAssertEqual(try ledger.counts(poll: poll, question: q), tally.question(q)?.counts ?? [:],
                       "\(context) q\(q): counts", file: file, line: line)
    }
}

/// `voter`'s anonymous choice ballot in the poll of `code`, sealed as a voter seals it, heard at `ms`
/// of radio time from an address of its own.
func anonymousReport(_ code: JoinCode, voter: UInt32, sequence: UInt16 = 1, answer: UInt8, question: UInt8 = 1,
                     at ms: UInt64) -> AdvertisementReport {
    let b = Ballot(mode: .anonymous, voteID: code.voteID, question: question, voterID: voter, sequence: sequence, answer: .choice(answer))
    return AdvertisementReport(address: DeviceAddress(rawValue: 0xD000_0000_0000 | UInt64(voter)), rssi: -60,
                               companyID: BallotFormat.companyID,
                               data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(code))),
                               timestamp: RadioInstant(nanoseconds: ms * 1_000_000))
}

/// The SQLSTATE of a refusal by PostgreSQL, through the ledger or a plain connection.
func sqlState(_ error: any Error) -> String? {
    switch error {
    case let e as LedgerError: if case .database(let p) = e { return p.sqlState } else { return nil }
    case let e as PostgresError: return e.sqlState
    default: return nil
    }
}
