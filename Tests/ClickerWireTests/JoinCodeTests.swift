import struct ClickerTransport.SplitMix64
import ClickerWire
import XCTest

final class JoinCodeTests: XCTestCase {
    func testParsesAndPrintsCanonically() throws {
        let c = try JoinCode(parsing: "4821-K7QXM-3PF9A")
        XCTAssertEqual(c.voteID, 4821)
        XCTAssertEqual(c.secretText, "K7QXM3PF9A")
        XCTAssertEqual(c.description, "4821-K7QXM-3PF9A")
        // Lower case, look-alikes and surrounding space read the same code.
        XCTAssertEqual(try JoinCode(parsing: "  4821-k7qxm-3pf9a\n"), c)
        XCTAssertEqual(try JoinCode(parsing: "1-OOOOO-IIIIL").description, "1-00000-11111")
        XCTAssertEqual(JoinCode("4821-K7QXM-3PF9A"), c)
        XCTAssertNil(JoinCode("4821-K7QXM"))
    }

    func testRejectsMalformedCodesWithTheRightReason() {
        func reason(_ s: String) -> JoinCodeError? {
            do { _ = try JoinCode(parsing: s); return nil } catch { return error }
        }
        XCTAssertEqual(reason(""), .empty)
        XCTAssertEqual(reason("   "), .empty)
        XCTAssertEqual(reason("4821-7319"), .wrongShape("4821-7319"))
        XCTAssertEqual(reason("4821-K7QXM-3PF9A-1"), .wrongShape("4821-K7QXM-3PF9A-1"))
        XCTAssertEqual(reason("4821-K7QX-M3PF9A"), .wrongGroupLength(group: 2, "K7QX"))
        XCTAssertEqual(reason("4821-K7QXM-3PF9AA"), .wrongGroupLength(group: 3, "3PF9AA"))
        XCTAssertEqual(reason("48a1-K7QXM-3PF9A"), .badVoteID("48a1"))
        XCTAssertEqual(reason("-K7QXM-3PF9A"), .badVoteID(""))
        XCTAssertEqual(reason("123456-K7QXM-3PF9A"), .badVoteID("123456"))
        XCTAssertEqual(reason("65536-K7QXM-3PF9A"), .voteIDOutOfRange("65536"))
        XCTAssertEqual(reason("0-K7QXM-3PF9A"), .voteIDOutOfRange("0"))
        XCTAssertEqual(reason("4821-K7QXU-3PF9A"), .badSecretCharacter("U"))
        XCTAssertEqual(reason("4821-K7QX!-3PF9A"), .badSecretCharacter("!"))
        XCTAssertEqual(reason("4821-K7QXé-3PF9A"), .badSecretCharacter("é"))
        XCTAssertEqual(reason("٤٨٢١-K7QXM-3PF9A"), .badVoteID("٤٨٢١"))
        XCTAssertThrowsError(try JoinCode(voteID: 1, secret: 1 << 50))
        XCTAssertThrowsError(try JoinCode(voteID: 0, secret: 1))
        // Every error explains itself.
        XCTAssertTrue(JoinCodeError.wrongShape("x").description.contains("4821-K7QXM-3PF9A"))
        // The message names the group that is wrong, and never claims three groups are missing.
        let groupError = JoinCodeError.wrongGroupLength(group: 2, "K7QX").description
        XCTAssertTrue(groupError.contains("second group 'K7QX' has 4 characters, expected 5"), groupError)
        XCTAssertTrue(JoinCodeError.wrongShape("4821-7319").description.contains("has 2 dash-separated groups"))
    }

    func testRandomCodesRoundTrip() throws {
        var rng = SplitMix64(seed: 7)
        var secrets = Set<UInt64>()
        for _ in 0..<2000 {
            let c = JoinCode.random(using: &rng)
            XCTAssertTrue((1000...9999).contains(c.voteID))
            XCTAssertLessThan(c.secret, 1 << 50)
            XCTAssertEqual(try JoinCode(parsing: c.description), c)
            XCTAssertEqual(c.description.count, 16)
            secrets.insert(c.secret)
        }
        XCTAssertEqual(secrets.count, 2000)
        XCTAssertNotEqual(JoinCode.random(), JoinCode.random())
    }

    func testParserNeverTrapsOnRandomText() {
        var rng = SplitMix64(seed: 11)
        let alphabet = Array("0123456789-ABCDEFGHIJKLMNOPQRSTUVWXYZabcz é٤\n")
        var parsed = 0
        for _ in 0..<20_000 {
            let n = Int.random(in: 0...20, using: &rng)
            let s = String((0..<n).map { _ in alphabet.randomElement(using: &rng) ?? "-" })
            if let c = try? JoinCode(parsing: s) {
                parsed += 1
                XCTAssertEqual(try? JoinCode(parsing: c.description), c)
            }
        }
        XCTAssertLessThan(parsed, 20_000)
    }
}
