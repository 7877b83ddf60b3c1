import BlueZ
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Voter
import XCTest

/// The beacon's capability probe is on the air for a moment, and every scanner near may hear it: voters
/// following a poll and the tally's own scanner. It must read as someone else's data, at every length the
/// probe may take (a legacy frame up to what MaxAdvLen allows less what bluetoothd keeps), never as a
/// malformed or forged frame of the poll.
final class BeaconProbeFrameTests: XCTestCase {
    static let voteID: UInt16 = 4821
    static let signer = BeaconSigner(seed: (0..<32).map { UInt8($0) })!
    static let secret = PollSecret(deriving: BeaconAnchor.joinCode(voteID: voteID, publicKey: signer.publicKey))
    static let key = BeaconKey(secret)
    /// The lengths the probe takes: a legacy frame, the shortest extended one worth probing, one report's
    /// worth, and the most MaxAdvLen 251 leaves.
    static let lengths = [BlueZBeacon.legacyFrameLength, BlueZBeacon.legacyFrameLength + 1, 187,
                          BlueZBeacon.singleReportFrameLength, 251 - BlueZBeacon.extendedOverhead]

    func testEveryDecoderTakesTheProbeForSomeoneElsesData() {
        for length in Self.lengths {
            let probe = BlueZBeacon.probeFrame(length: length)
            let verdict = probe.withUnsafeBytes { BeaconCodec.kind(of: $0, voteID: Self.voteID) }
            XCTAssertEqual(verdict.map(\.0), .failure(.notOurs), "\(length) bytes: a voter's decoder")
            XCTAssertEqual(BeaconCodec.envelope(probe, key: Self.key).map(\.frame), .failure(.notOurs))
        }
    }

    func testAFollowerHearingTheProbeChangesNothingAndCountsNoForgery() {
        // Before the poll's key is known and after: a thousand probes of each length change neither what the
        // student sees nor the follower's count of forgeries.
        for publicKey in [nil, Self.signer.publicKey] {
            var follower = BeaconFollower(key: Self.key, mode: .anonymous, voterID: 7, now: .zero, publicKey: publicKey)
            for (i, length) in Self.lengths.enumerated() {
                let probe = BlueZBeacon.probeFrame(length: length)
                var admission = follower.admission
                XCTAssertEqual(admission.admit(probe, at: .milliseconds(i)), .refused)
                for n in 0..<1000 { follower.hear(probe, at: .milliseconds(i * 1000 + n)) }
            }
            XCTAssertEqual(follower.status, .waiting, "the probe is no STATE frame")
            XCTAssertEqual(follower.advertising, .silent)
            XCTAssertEqual(follower.admission.forgeriesRefused, 0, "the probe is not counted as a forgery")
            XCTAssertEqual(follower.admission.verifications, 0, "nor checked as a signed frame")
        }
    }

    func testTheTallyRejectsTheProbeAsNotOurs() {
        // The tally's scanner hears its own probe under the company it broadcasts with.
        var p = IngestPipeline(secret: Self.secret, policy: FloodPolicy())
        p.tally.open(.choice(1))
        for length in Self.lengths {
            let report = AdvertisementReport(address: DeviceAddress(rawValue: 1), rssi: nil, companyID: BallotFormat.companyID,
                                             data: BlueZBeacon.probeFrame(length: length), timestamp: .zero)
            XCTAssertEqual(p.ingest(report).outcome, .rejected(.notOurs))
        }
        XCTAssertEqual(p.tally.rejections, [.notOurs: Self.lengths.count], "no malformed or forged ballot counted")
    }
}
