import struct ClickerTransport.SplitMix64
import ClickerWire
import XCTest

final class KeyTests: XCTestCase {
    func testDeviceKeyEncodingRoundTrips() throws {
        var rng = SplitMix64(seed: 5)
        let k = DeviceKey.generate(using: &rng)
        XCTAssertEqual(k.bytes.count, 32)
        XCTAssertEqual(try DeviceKey(encoded: k.encoded), k)
        XCTAssertTrue(k.encoded.hasPrefix("clicker-device-key-v1 "))
        XCTAssertNotEqual(DeviceKey.generate(), DeviceKey.generate())
        XCTAssertThrowsError(try DeviceKey(encoded: "hello")) { XCTAssertEqual($0 as? DeviceKeyError, .notADeviceKey) }
        XCTAssertThrowsError(try DeviceKey(encoded: "clicker-device-key-v1 abcd")) {
            XCTAssertEqual($0 as? DeviceKeyError, .wrongLength(4))
        }
        XCTAssertThrowsError(try DeviceKey(encoded: "clicker-device-key-v1 " + String(repeating: "g", count: 64))) {
            XCTAssertEqual($0 as? DeviceKeyError, .badHex)
        }
        XCTAssertNil(DeviceKey(bytes: [1, 2, 3]))
    }

    func testEnrollmentCodeRoundTripsAndCatchesTypos() throws {
        var rng = SplitMix64(seed: 6)
        for _ in 0..<200 {
            let k = DeviceKey.generate(using: &rng)
            let text = k.enrollmentCode.description
            XCTAssertTrue(text.hasPrefix("CE2-"))
            XCTAssertEqual(text.split(separator: "-").count, 8)
            XCTAssertEqual(try EnrollmentCode(parsing: text).rosterKey, k.rosterKey)
            XCTAssertEqual(try EnrollmentCode(parsing: text.lowercased().replacingOccurrences(of: "-", with: " ")
                .replacingOccurrences(of: "ce2 ", with: "CE2-")).rosterKey, k.rosterKey)
            // Change one character: the checksum (or the padding) catches it.
            var chars = Array(text)
            let i = Int.random(in: 4..<chars.count, using: &rng)
            if chars[i] == "-" { continue }
            chars[i] = chars[i] == "7" ? "8" : "7"
            XCTAssertThrowsError(try EnrollmentCode(parsing: String(chars)))
        }
        XCTAssertThrowsError(try EnrollmentCode(parsing: "")) { XCTAssertEqual($0 as? EnrollmentCodeError, .empty) }
        XCTAssertThrowsError(try EnrollmentCode(parsing: "XY1-ABC")) {
            XCTAssertEqual($0 as? EnrollmentCodeError, .notAnEnrollmentCode("XY1-ABC"))
        }
        XCTAssertThrowsError(try EnrollmentCode(parsing: "CE2-ABC")) { XCTAssertEqual($0 as? EnrollmentCodeError, .wrongLength(3)) }
        XCTAssertThrowsError(try EnrollmentCode(parsing: "CE2-" + String(repeating: "U", count: 56))) {
            XCTAssertEqual($0 as? EnrollmentCodeError, .badCharacter("U"))
        }
    }

    /// SECURITY.md: anonymous voter IDs cannot be linked across polls.
    func testAnonymousVoterIDsDifferAcrossPollsAndDevices() throws {
        var rng = SplitMix64(seed: 8)
        let devices = (0..<12).map { _ in DeviceKey.generate(using: &rng) }
        let polls = (0..<4).map { _ in pollSecret(JoinCode.random(using: &rng)) }
        var seen = Set<UInt32>()
        for d in devices {
            for p in polls {
                let id = d.anonymousVoterID(in: p)
                seen.insert(id)
                XCTAssertNotEqual(id, d.rosterVoterID(in: p))
            }
        }
        XCTAssertEqual(devices[0].anonymousVoterID(in: polls[0]), devices[0].anonymousVoterID(in: polls[0]), "stable")
        XCTAssertEqual(seen.count, devices.count * polls.count)
        // Same vote ID, different secret: still a different voter ID.
        let a = try JoinCode(voteID: 4821, secret: 1), b = try JoinCode(voteID: 4821, secret: 2)
        XCTAssertNotEqual(devices[0].anonymousVoterID(in: pollSecret(a)), devices[0].anonymousVoterID(in: pollSecret(b)))
    }

    func testKeyMaterialDependsOnEveryInput() throws {
        let d1 = DeviceKey(bytes: [UInt8](repeating: 1, count: 32))!, d2 = DeviceKey(bytes: [UInt8](repeating: 2, count: 32))!
        let a = try JoinCode(voteID: 4821, secret: 1), b = try JoinCode(voteID: 4821, secret: 2), c = try JoinCode(voteID: 4822, secret: 1)
        let secrets = [a, b, c].map(pollSecret)
        XCTAssertEqual(Set(secrets.map(\.bytes)).count, 3, "S depends on the secret and the vote ID")
        let poll = Set(secrets.map { KeyDerivation.pollKeyMaterial($0) })
        XCTAssertEqual(poll.count, 3)
        let roster = Set(secrets.flatMap { s in [d1, d2].map { KeyDerivation.rosterKeyMaterial(rosterKey: $0.rosterKey, secret: s) } })
        XCTAssertEqual(roster.count, 6)
        XCTAssertTrue(roster.isDisjoint(with: poll))
        XCTAssertNil(BallotKey(keyMaterial: [UInt8](repeating: 0, count: 63)))
        XCTAssertNotNil(BallotKey(keyMaterial: [UInt8](repeating: 0, count: 64)))
    }
}
