import struct ClickerTransport.SplitMix64
import ClickerWire
import XCTest

/// Decoding is total: random and mutated bytes give a ballot or a reason, never a trap, and no
/// mutation of an authentic ballot is ever accepted as a different ballot.
final class DecodeTotalityTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // constant, known good
    lazy var keyring = PollKeyring(secret: pollSecret(code), roster: [device.rosterKey])
    let device = DeviceKey(bytes: Array(0x20..<0x40).map { UInt8($0) })!  // 32 bytes, constant

    func sampleBallots(_ rng: inout SplitMix64, count: Int) -> [(Ballot, [UInt8], [UInt8])] {
        let s = pollSecret(code)
        let roster = BallotSealer(secret: s, deviceKey: device, mode: .roster)
        let anonymous = (0..<8).map { _ in BallotSealer(secret: s, deviceKey: DeviceKey.generate(using: &rng)) }
        return (0..<count).map { i in
            let sealer = i % 5 == 0 ? roster : anonymous[i % anonymous.count]
            let k = Int.random(in: 1...8, using: &rng)
            let answers: [Answer] = [.choice(UInt8.random(in: 0..<8, using: &rng)), .trueFalse(Bool.random(using: &rng)),
                                     .multiSelect(UInt8.random(in: 1...255, using: &rng)),
                                     .ranking(Ranking(count: k, code: UInt16(Int.random(in: 0..<Ranking.arrangements(count: k), using: &rng)))!),
                                     .numeric(Int16.random(in: .min ... .max, using: &rng))]
            let q = UInt8.random(in: 0...255, using: &rng), seq = UInt16.random(in: 1...UInt16.max, using: &rng)
            let a = answers[i % answers.count]
            return (sealer.ballot(question: q, sequence: seq, answer: a), sealer.advertisement(question: q, sequence: seq, answer: a),
                    sealer.gattValue(question: q, sequence: seq, answer: a))
        }
    }

    func testSealedBallotsOpen() {
        var rng = SplitMix64(seed: 1)
        for (b, adv, gatt) in sampleBallots(&rng, count: 500) {
            XCTAssertEqual(try BallotCodec.openAdvertisement(adv, keyring: keyring).get(), b)
            XCTAssertEqual(try BallotCodec.openGATT(gatt, keyring: keyring).get().ballot, b)
            XCTAssertEqual(Array(gatt.prefix(22)), adv)
        }
    }

    func testEverySingleBitFlipIsRejected() {
        var rng = SplitMix64(seed: 2)
        // Every bit of 60 advertisements and of 12 signed GATT values (each GATT flip behind the tag
        // costs an Ed25519 verification, slow in a debug build).
        for (i, (_, adv, gatt)) in sampleBallots(&rng, count: 60).enumerated() {
            for payload in i < 12 ? [adv, gatt] : [adv] {
                for bit in 0..<(payload.count * 8) {
                    var m = payload
                    m[bit / 8] ^= 1 << (bit % 8)
                    let r = payload.count == 22 ? BallotCodec.openAdvertisement(m, keyring: keyring).map { SignedBallot(ballot: $0, publicKey: []) }
                        : BallotCodec.openGATT(m, keyring: keyring)
                    if case .success(let b) = r.map(\.ballot) { XCTFail("bit \(bit) flipped, still accepted: \(b)") }
                }
            }
        }
    }

    func testRandomAndMutatedBytesNeverTrapAndNeverVerify() {
        var rng = SplitMix64(seed: 3)
        let samples = sampleBallots(&rng, count: 50)
        var reasons: [Rejection: Int] = [:]
        for i in 0..<100_000 {
            var bytes: [UInt8]
            switch i % 4 {
            case 0:  // pure noise
                bytes = (0..<Int.random(in: 0...60, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            case 1:  // noise behind a valid header prefix
                let base = samples[i % samples.count].1
                bytes = Array(base.prefix(Int.random(in: 0...11, using: &rng)))
                while bytes.count < 22 { bytes.append(UInt8.random(in: 0...255, using: &rng)) }
            case 2:  // several random byte changes, truncations or extensions
                bytes = samples[i % samples.count].1
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0: bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
                    case 1: bytes.removeLast(Int.random(in: 0...min(3, bytes.count - 1), using: &rng))
                    default: bytes.append(UInt8.random(in: 0...255, using: &rng))
                    }
                }
                if bytes == samples[i % samples.count].1 { continue }
            default:  // GATT-length noise with our header
                bytes = Array(samples[i % samples.count].2.prefix(11))
                while bytes.count < BallotFormat.gattLength { bytes.append(UInt8.random(in: 0...255, using: &rng)) }
            }
            let r = i % 4 == 3 ? BallotCodec.openGATT(bytes, keyring: keyring).map(\.ballot)
                : BallotCodec.openAdvertisement(bytes, keyring: keyring)
            switch r {
            case .success(let b): XCTFail("forged bytes accepted: \(b)")
            case .failure(let reason): reasons[reason, default: 0] += 1
            }
        }
        // The generator reached the deep checks, not only the magic byte.
        for r: Rejection in [.notOurs, .truncated, .trailingBytes, .badTag, .unknownVersion] {
            XCTAssertGreaterThan(reasons[r] ?? 0, 0, "\(r) never reached")
        }
    }

    func testCheapChecksComeBeforeCrypto() {
        // A payload with the wrong vote ID and a garbage tag is `otherVoteID`, not `badTag`:
        var p = BallotCodec.sealAdvertisement(Ballot(voteID: 1234, question: 1, voterID: 9, sequence: 1, answer: .choice(0)),
                                              key: BallotKey.anonymous(pollSecret(code)))
        p[21] ^= 0xFF
        XCTAssertEqual(BallotCodec.openAdvertisement(p, keyring: keyring), .failure(.otherVoteID))
        // Header check alone (no key) gives the same answer.
        p.withUnsafeBytes { XCTAssertEqual(BallotCodec.header($0, length: 22, voteID: 4821), .failure(.otherVoteID)) }
    }
}
