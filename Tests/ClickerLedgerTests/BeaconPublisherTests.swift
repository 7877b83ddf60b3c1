import ClickerLedger
import ClickerTransport
import Dispatch
import Foundation
@testable import Receivers
import XCTest

/// The tally's writer of its beacon: handing it a payload never waits on the ledger, and it writes the
/// newest, not every one.
final class BeaconPublisherTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    func payload(_ n: Int) -> BroadcastPayload {
        BroadcastPayload(companyID: 0xFFFF, frames: [[0xCB, 0x4B, UInt8(n >> 8), UInt8(n & 0xFF)]], interval: .milliseconds(100))
    }

    func testALedgerThatHangsHoldsUpNoPayloadAndOnlyTheNewestIsWrittenAfter() async throws {
        let url = try SharedServer.database()
        let instructor = try BallotLedger(url: url)
        try instructor.register(poll: 6, voteID: 66, policy: .latestWins, questions: [1])
        // The ledger's connection hangs until the test lets it through.
        let hanging = DispatchSemaphore(value: 0), connecting = DispatchSemaphore(value: 0)
        let publisher = try XCTUnwrap(BeaconPublisher(poll: 6) {
            connecting.signal()
            hanging.wait()
            return try BallotLedger(url: url)
        })
        publisher.submit(payload(1))
        // The writer has taken the first payload and hangs in its connection: 500 more are handed over.
        connecting.wait()
        for n in 2...501 { publisher.submit(payload(n)) }
        XCTAssertEqual(publisher.status.published, 0, "nothing written while the ledger hangs")
        hanging.signal()
        await publisher.finish()
        let written = try XCTUnwrap(try instructor.beacon(poll: 6))
        XCTAssertEqual(written.payload, payload(501), "the newest payload is the ledger's")
        XCTAssertEqual(written.serial, 2, "the one it had taken, then the newest: not 501 writes")
        XCTAssertEqual(publisher.status.published, 2)
    }
}
