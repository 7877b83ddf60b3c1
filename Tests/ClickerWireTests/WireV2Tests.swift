import struct ClickerTransport.SplitMix64
import Crypto
import ClickerWire
import XCTest

/// The security properties version 2 adds (docs/PROTOCOL.md §2, §5, §6, §7), each by performing the attack.
final class WireV2Tests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // constant, known good

    func header(sequence: UInt16 = 7) -> Ballot {
        Ballot(voteID: 4821, question: 1, voterID: 0x0102_0304, sequence: sequence, answer: .choice(1))
    }

    /// A voter that reuses a header (same question, voter ID and sequence) for another answer leaks
    /// nothing but inequality: with synthetic IVs the two ciphertexts XOR to noise, not to the XOR of
    /// the answers (which a plain keystream, as in version 1, always gives).
    func testRepeatedHeaderDoesNotLeakTheAnswersXOR() {
        var rng = SplitMix64(seed: 21)
        let a1 = Answer.choice(1), a2 = Answer.choice(3)
        let plainXOR = [a1.wireBytes.0 ^ a2.wireBytes.0, a1.wireBytes.1 ^ a2.wireBytes.1, a1.wireBytes.2 ^ a2.wireBytes.2]
        var firstByte = [Int](repeating: 0, count: 256)
        let trials = 4096
        var leaks = 0
        for _ in 0..<trials {
            let material = (0..<8).flatMap { _ in withUnsafeBytes(of: rng.next()) { Array($0) } }
            guard let key = BallotKey(keyMaterial: material) else { return XCTFail("64 bytes") }
            var b1 = header(), b2 = header()
            b1.answer = a1
            b2.answer = a2
            let c1 = BallotCodec.sealAdvertisement(b1, key: key), c2 = BallotCodec.sealAdvertisement(b2, key: key)
            XCTAssertEqual(Array(c1.prefix(11)), Array(c2.prefix(11)), "same header")
            let x = (11..<14).map { c1[$0] ^ c2[$0] }
            if x == plainXOR { leaks += 1 }
            firstByte[Int(x[0])] += 1
            // The same answer again gives the identical payload: equality is all that shows.
            XCTAssertEqual(BallotCodec.sealAdvertisement(b1, key: key), c1)
        }
        // By chance ct1 ⊕ ct2 = a1 ⊕ a2 about once in 2^24 trials; with this seed, never.
        XCTAssertEqual(leaks, 0)
        // Uniform: every value of the first XOR byte shows up about trials/256 = 16 times.
        XCTAssertEqual(firstByte.filter { $0 == 0 }.count, 0, "\(firstByte)")
        XCTAssertLessThan(firstByte.max() ?? 0, 48, "\(firstByte)")
    }

    /// Issue: whoever held the roster could compute every anonymous voter ID (the enrollment code
    /// carried the device key). Now it carries D_roster; using it as a device key names nobody.
    func testRosterHolderCannotNameAnonymousBallots() throws {
        var rng = SplitMix64(seed: 22)
        let secret = pollSecret(code)
        let devices = (0..<30).map { _ in DeviceKey.generate(using: &rng) }
        let anonymous = Set(devices.map { $0.anonymousVoterID(in: secret) })
        var named = 0
        for d in devices {
            let leaked = try EnrollmentCode(parsing: d.enrollmentCode.description).rosterKey.bytes
            XCTAssertNotEqual(leaked, d.bytes, "the enrollment code does not carry the device key")
            // The instructor's best try: treat the key in the code as the device key.
            let guess = try XCTUnwrap(DeviceKey(bytes: leaked))
            if anonymous.contains(guess.anonymousVoterID(in: secret)) { named += 1 }
        }
        XCTAssertEqual(named, 0)
        XCTAssertEqual(anonymous.count, 30)
    }

    /// A classmate who knows the join code copies a victim's voter ID and serves a GATT value for it,
    /// signed with their own key: the voter ID is not the hash of that key, so it is `badSignature`.
    func testGATTValueForAnotherVotersIDIsRejected() throws {
        let secret = pollSecret(code)
        let keyring = PollKeyring(secret: secret)
        let victim = BallotSealer(secret: secret, deviceKey: DeviceKey(bytes: [UInt8](repeating: 1, count: 32))!)
        let attacker = DeviceKey(bytes: [UInt8](repeating: 2, count: 32))!
        let forged = Ballot(voteID: code.voteID, question: 1, voterID: victim.voterID, sequence: 0xFFFF, answer: .choice(3))
        let value = BallotCodec.sealGATT(forged, key: .anonymous(secret), signingKey: attacker.signingKey(mode: .anonymous, secret: secret))
        XCTAssertEqual(BallotCodec.openGATT(value, keyring: keyring).map(\.ballot), .failure(.badSignature))
        // Its advertisement still decodes (anyone with the join code can make one): that is why the
        // tally counts such a ballot as unverified until a GATT read signed by the bound key.
        XCTAssertEqual(try BallotCodec.openAdvertisement(Array(value.prefix(22)), keyring: keyring).get(), forged)
        // The victim's own value verifies and names its key.
        let own = try BallotCodec.openGATT(victim.gattValue(question: 1, sequence: 1, answer: .choice(0)), keyring: keyring).get()
        XCTAssertEqual(own.publicKey, victim.publicKey)
        XCTAssertEqual(KeyDerivation.anonymousVoterID(publicKey: own.publicKey), victim.voterID)
    }

    /// A voter with no ballot yet may serve an empty characteristic value: `notOurs` (PROTOCOL.md §7).
    func testEmptyGATTValueIsNotOurs() {
        let keyring = PollKeyring(secret: pollSecret(code))
        XCTAssertEqual(BallotCodec.openGATT([], keyring: keyring).map(\.ballot), .failure(.notOurs))
    }

    /// Sequence 0 is refused before any cryptography, whatever the tag.
    func testSequenceZeroIsBadSequence() {
        let keyring = PollKeyring(secret: pollSecret(code))
        var p = BallotCodec.sealAdvertisement(header(sequence: 0), key: .anonymous(pollSecret(code)))
        XCTAssertEqual(BallotCodec.openAdvertisement(p, keyring: keyring), .failure(.badSequence))
        p[21] ^= 0xFF
        p.withUnsafeBytes { XCTAssertEqual(BallotCodec.header($0, length: 22, voteID: 4821), .failure(.badSequence)) }
        XCTAssertEqual(try BallotCodec.openAdvertisement(BallotCodec.sealAdvertisement(header(sequence: 1),
                                                                                      key: .anonymous(pollSecret(code))),
                                                         keyring: keyring).get().sequence, 1)
    }

    /// S is scrypt of the canonical secret text: look-alikes and case give the same S, and the vote ID
    /// is part of the salt.
    func testPollSecretFollowsTheCanonicalText() throws {
        let typed = try JoinCode(parsing: "4821-k7qxm-3pf9a")
        XCTAssertEqual(pollSecret(typed), pollSecret(code))
        XCTAssertEqual(PollSecret.salt(voteID: 4821), Array("clicker-v2".utf8) + [0x12, 0xD5])
        XCTAssertFalse(pollSecret(code).description.contains(code.secretText), "S never prints the secret")
        XCTAssertNil(PollSecret(joinCode: code, derived: [1, 2, 3]))
    }
}
