import struct ClickerTransport.SplitMix64
import ClickerWire
import XCTest

/// The false-acknowledgement bound of docs/PROTOCOL.md §11.4: computed from the constants, and the
/// formula it rests on measured with fingerprints narrowed to one byte.
final class AckBoundTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // constant, known good
    lazy var key = BeaconKey(pollSecret(code))

    func testTheFalseAcknowledgementBoundIsAtMostOneInTenThousand() throws {
        let bound = AckFingerprint.falseAcknowledgementBound
        XCTAssertEqual(bound, Double(AckFingerprint.maxHeardPerQuestion) / 4_294_967_296)
        XCTAssertEqual(bound, 1.0 / 16_384)   // 2^-14
        XCTAssertLessThanOrEqual(bound, 1e-4)
        // Four per voter of the most a question holds (TallyDaemon's limit).
        XCTAssertEqual(AckFingerprint.maxHeardPerQuestion, 4 * 65_536)
        // One byte less would not do for this many fingerprints.
        XCTAssertGreaterThan(AckFingerprint.falseAcknowledgementBound(heard: AckFingerprint.maxHeardPerQuestion,
                                                                      bytes: AckFingerprint.length - 1), 1e-4)
        // The constant is what the wire carries: each fingerprint takes `length` bytes of an ACKS frame
        // and is the first `length` bytes of the HMAC.
        let fps = (1...3).map { key.fingerprint(voterID: UInt32($0), question: 1, sequence: 1) }
        let frame = try BeaconCodec.seal(.acks(BeaconAcks(counter: 1, question: 1, fingerprints: fps)), key: key)
        XCTAssertEqual((frame.count - BeaconFormat.acksHeaderLength - BeaconFormat.shortTagLength) / fps.count, AckFingerprint.length)
        XCTAssertEqual(Array(frame[BeaconFormat.acksHeaderLength..<(BeaconFormat.acksHeaderLength + AckFingerprint.length)]),
                       Array(key.fingerprintMAC(voterID: 1, question: 1, sequence: 1).prefix(AckFingerprint.length)))
    }

    /// With 1-byte fingerprints, an uncounted ballot heard against N fingerprints of counted ballots
    /// is falsely acknowledged at the rate 1 − (255/256)^N, which the bound N/256 covers: measured
    /// over 10,000 uncounted ballots for N = 16 and N = 64, within 4 standard deviations.
    func testNarrowFingerprintsMatchFalselyAtTheRateOfTheBound() {
        var rng = SplitMix64(seed: 1606)
        let question: UInt8 = 7
        let trials = 10_000
        // Fingerprints of counted ballots of other voters (odd voter IDs), full width, compared on 1
        // byte. Trial i of N takes the i-th run of N of them, so trials of one N share none.
        let stream = (0..<(trials * 64)).map { _ in
            key.fingerprint(voterID: UInt32.random(in: 0...UInt32.max, using: &rng) | 1, question: question,
                            sequence: UInt16.random(in: 1...UInt16.max, using: &rng))
        }
        for n in [16, 64] {
            var falseMatches = 0
            for i in 0..<trials {
                let acks = BeaconAcks(counter: 1, question: question, fingerprints: Array(stream[(i * n)..<((i + 1) * n)]))
                // An uncounted ballot (even voter ID: never one of the counted ones).
                let mine = AckMatcher(key: key, voterID: UInt32.random(in: 0...UInt32.max, using: &rng) & ~1, question: question,
                                      sequence: UInt16.random(in: 1...UInt16.max, using: &rng), comparedBytes: 1)
                if mine.isAcknowledged(by: acks) { falseMatches += 1 }
            }
            let measured = Double(falseMatches) / Double(trials)
            var miss = 1.0
            for _ in 0..<n { miss *= 255.0 / 256.0 }
            let exact = 1 - miss
            let sigma = (exact * (1 - exact) / Double(trials)).squareRoot()
            XCTAssertEqual(measured, exact, accuracy: 4 * sigma, "N = \(n): measured \(measured), expected \(exact)")
            XCTAssertLessThanOrEqual(measured, AckFingerprint.falseAcknowledgementBound(heard: n, bytes: 1) + 4 * sigma)
            print("false acknowledgements with 1-byte fingerprints, N = \(n): measured \(measured), exact \(exact), bound \(Double(n) / 256), 4σ \(4 * sigma)")
        }
    }
}
