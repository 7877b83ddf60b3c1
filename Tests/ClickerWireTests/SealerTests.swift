import ClickerWire
import XCTest

final class SealerTests: XCTestCase {
    func testSealerMatchesTheCodec() throws {
        let code = try JoinCode(parsing: "4821-K7QXM-3PF9A")
        let device = try XCTUnwrap(DeviceKey(bytes: Array(0x20..<0x40).map { UInt8($0) }))
        for mode in BallotMode.allCases {
            let s = BallotSealer(secret: pollSecret(code), deviceKey: device, mode: mode)
            let keyring = PollKeyring(secret: pollSecret(code), roster: [device.rosterKey])
            let adv = s.advertisement(question: 3, sequence: 7, answer: .choice(2))
            XCTAssertEqual(try BallotCodec.openAdvertisement(adv, keyring: keyring).get(),
                           s.ballot(question: 3, sequence: 7, answer: .choice(2)))
            XCTAssertEqual(try BallotCodec.openGATT(s.gattValue(question: 3, sequence: 7, answer: .choice(2)), keyring: keyring).get().ballot.voterID,
                           mode == .roster ? device.rosterVoterID(in: pollSecret(code)) : device.anonymousVoterID(in: pollSecret(code)))
        }
    }
}
