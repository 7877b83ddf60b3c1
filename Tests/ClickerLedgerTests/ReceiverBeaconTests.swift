import ClickerLedger
import ClickerSim
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import Logging
import Receivers
import TallyDaemon
import Voter
import XCTest

/// A receiver broadcasts the tally's beacon: students heard only by the receiver follow the question
/// and see "counted" from what the receiver's radio broadcasts, the tally's frames as it sealed them.
final class ReceiverBeaconTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func testStudentsHeardOnlyByAReceiverSeeCountedInItsBeaconAndThePollsCloseThere() async throws {
        let url = try SharedServer.database()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // The tally: its own radio on an air where no student is, broadcasting extended frames.
        var air = AirConfiguration(seed: 5)
        air.broadcast.extended = true
        let tallyAir = SimulatedAir(air)
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let link = try await TallyLedgerLink.start(url: url, poll: 21, controller: controller, journalPath: dir + "/tally.sqlite",
                                                   radioEpoch: 0)
        let linked = Task { await link.run(logger: Logger(label: "test")) }
        let running = Task { try await controller.run(central: tallyAir.central()) }

        // The receiver, its writer, and its radio broadcasting what the ledger has of the tally's beacon.
        let instructor = try BallotLedger(url: url)
        let token = try instructor.issueReceiverToken(poll: 21, validUntil: Int64(Date().timeIntervalSince1970) + 3600)
        let tokenURL = token.url(replacingCredentialsOf: url)
        let receiver = try await LedgerReceiver.join(url: tokenURL, secret: pollSecret(code), journalPath: dir + "/receiver.sqlite",
                                                     radioEpoch: 0, clock: TestClock())
        let feed = try XCTUnwrap(LedgerBeaconFeed(url: tokenURL, poll: 21))
        let radio = RelayRadio(.extended)
        let relaying = Task { await BeaconRelay(radio: radio, logger: Logger(label: "test")).run(feed.readings, clock: ContinuousClock()) }

        // 200 students, each heard by the receiver only, follow what its radio broadcasts.
        let students = UInt32(1)...200
        let key = BeaconKey(pollSecret(code))
        var followers = Dictionary(uniqueKeysWithValues: students.map {
            ($0, BeaconFollower(key: key, mode: .anonymous, voterID: $0, now: .zero))
        })
        func answer(_ v: UInt32) -> UInt8 { UInt8(v % 4) }
        let started = ContinuousClock.now
        var calls = radio.calls.makeAsyncIterator()
        var sent = false
        let guardTask = Task { try await Task.sleep(for: .seconds(90)); radio.giveUp() }
        defer { guardTask.cancel() }
        while followers.values.contains(where: { if case .counted = $0.status { false } else { true } }) {
            guard let call = await calls.next() else { return XCTFail("the relay ended before every student saw counted") }
            guard case .broadcast(let payload) = call else { continue }
            let now = ContinuousClock.now - started
            for v in students {
                for f in payload.frames { followers[v]?.hear(f, at: now) }
                // Once the question is on its screen, the student answers; its ballot is sealed with sequence 1.
                if case .open = followers[v]?.status {
                    followers[v]?.answer(.choice(answer(v)))
                    if case .ballot(_, _, let g, _) = followers[v]?.advertising { followers[v]?.sealed(generation: g, sequence: 1) }
                }
            }
            // What the students send reaches the receiver's radio (and never the tally's).
            if !sent, followers.values.allSatisfy({ if case .sending = $0.status { true } else { false } }) {
                await receiver.take(students.map { anonymousReport(code, voter: $0, answer: answer($0), at: 10) })
                await receiver.sync()
                sent = true
            }
        }
        XCTAssertTrue(sent)
        for v in students { XCTAssertEqual(followers[v]?.status, .counted(.choice(answer(v))), "student \(v)") }
        let counted = await controller.results().voters
        XCTAssertEqual(counted, 200, "the tally counted them from the ledger")

        // The poll ends: the closing STATE reaches the students through the receiver, then it stops.
        running.cancel()
        _ = try? await running.value
        await controller.endBeacon(closing: .milliseconds(500))
        var closed = false
        while let call = await calls.next() {
            if case .broadcast(let payload) = call {
                let now = ContinuousClock.now - started
                for v in students { for f in payload.frames { followers[v]?.hear(f, at: now) } }
                closed = followers.values.allSatisfy { $0.status == .pollClosed }
            } else if call == .stop { break }
        }
        XCTAssertTrue(closed, "every student saw the poll closed before the receiver stopped")
        _ = await link.finish()
        linked.cancel()
        await linked.value
        relaying.cancel()
        let summary = await relaying.value
        XCTAssertGreaterThanOrEqual(summary.broadcast, 2)
        XCTAssertEqual(summary.refused, 0)
        await feed.stop()
        _ = await receiver.finish()
    }
}
