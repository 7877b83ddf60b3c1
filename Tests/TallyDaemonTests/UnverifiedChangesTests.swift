import ClickerTally
import ClickerTransport
import ClickerWire
@testable import TallyDaemon
import XCTest

/// Without GATT reads nothing is verified: the version-1 rule holds, a takeover is possible, and the
/// view says "changes unverified".
final class UnverifiedChangesTests: XCTestCase {
    let code = TakeoverAttackTests.code
    let pollKey = BallotKey.anonymous(TakeoverAttackTests.secret)

    func report(voter: UInt32, sequence: UInt16, answer: Answer, address: UInt64) -> AdvertisementReport {
        let b = Ballot(voteID: code.voteID, question: 1, voterID: voter, sequence: sequence, answer: answer)
        return AdvertisementReport(address: DeviceAddress(rawValue: address), rssi: -60, companyID: BallotFormat.companyID,
                                   data: BallotCodec.sealAdvertisement(b, key: pollKey), timestamp: .zero)
    }

    func testWithGATTConfirmationOffTheVersion1RuleHoldsAndTheViewSaysSo() async throws {
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let status = await controller.verificationStatus
        XCTAssertEqual(status, .changesUnverified)
        await controller.ingest(report(voter: 7, sequence: 3, answer: .choice(1), address: 1))
        await controller.ingest(report(voter: 7, sequence: 0xFFFF, answer: .choice(3), address: 666))
        let r = await controller.results()
        XCTAssertEqual(r.counts["D"], 1, "the copy with the higher sequence wins: a takeover is possible")
        XCTAssertEqual(r.ballots.first?.gattVerified, false)
        let view = await controller.viewModel()
        XCTAssertEqual(view.status, "changes unverified (no GATT reads)")
        let afterAction = try await controller.viewModel(status: "question 1 closed")
        XCTAssertEqual(afterAction.status, "question 1 closed · changes unverified (no GATT reads)",
                       "an operator message does not hide it")
    }

    /// A radio that cannot read GATT (raw HCI) turns verification off at its first refusal, and no
    /// read is asked for after it.
    func testARadioWithoutGATTTurnsVerificationOff() async throws {
        let central = RecordingCentral(gattSupported: false)
        let controller = try PollController(options: PollOptions(joinCode: code), store: nil)
        let before = await controller.verificationStatus
        XCTAssertEqual(before, .verified)
        var pump = await ReadPump(controller, central)
        await controller.ingest(report(voter: 7, sequence: 3, answer: .choice(1), address: 1))
        let first = await pump.drain()
        XCTAssertEqual(first, [DeviceAddress(rawValue: 1)])
        let status = await controller.verificationStatus
        XCTAssertEqual(status, .changesUnverified)
        let view = await controller.viewModel()
        XCTAssertEqual(view.status, "changes unverified (no GATT reads)")
        await controller.ingest(report(voter: 8, sequence: 1, answer: .choice(2), address: 2))
        let after = await pump.drain()
        XCTAssertEqual(after, [], "no read is asked for once the radio refused one")
        XCTAssertEqual(central.readDevices, [DeviceAddress(rawValue: 1)])
    }

    func testRosterPollsAreVerifiedWithoutGATT() async throws {
        let roster = try Roster(entries: [])
        let controller = try PollController(options: PollOptions(joinCode: code, roster: roster, confirmByGATT: false), store: nil)
        let status = await controller.verificationStatus
        XCTAssertEqual(status, .roster)
        let view = await controller.viewModel()
        XCTAssertNil(view.status)
    }
}
