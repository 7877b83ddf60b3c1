import ClickerSim
import ClickerTransport
import ClickerWire
import Synchronization
@testable import TallyDaemon
import XCTest

/// Beacon frames heard, per air.
final class FrameCounts: Sendable {
    let counts = Mutex([0, 0])
}

/// Two radios on the simulated air: one tally whose two adapters each hear a part of the room (the
/// front and the back of a hall, modelled as two airs on virtual clocks moved together).
final class MergedAirTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func testTwoRadiosEachHearingHalfTheRoomCountEveryoneOnceAndBothCarryTheBeacon() async throws {
        let front = SimulatedAir(AirConfiguration(seed: 11)), back = SimulatedAir(AirConfiguration(seed: 12))
        let merged = MergedCentral.combining([.init(name: "front", central: front.central()),
                                              .init(name: "back", central: back.central())])
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let run = Task { try await controller.run(central: merged) }
        await controller.untilScanning()

        // A listener on each air counts the beacon frames it hears.
        let heard = FrameCounts()
        let listeners = [front, back].enumerated().map { i, air in
            let stream = air.addPeripheral().listen(companyID: BallotFormat.companyID, dutyCycle: .continuous)
            return Task {
                for try await r in stream where BeaconFormat.isBeacon(r.data) { heard.counts.withLock { $0[i] += 1 } }
            }
        }
        // Four voters only the front radio hears, four only the back one, and one both hear.
        func voter(_ i: Int) -> BallotSealer {
            BallotSealer(secret: pollSecret(code), deviceKey: DeviceKey(bytes: (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 5 &+ i &* 17 &+ 3) })!)
        }
        for i in 0..<9 {
            let data = voter(i).advertisement(question: 1, sequence: 1, answer: .choice(UInt8(i % 3)))
            for air in i == 8 ? [front, back] : (i < 4 ? [front] : [back]) {
                try await air.addPeripheral().advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: data,
                                                                           interval: .milliseconds(100), connectable: false))
            }
        }
        for s in 1...20 {
            let t = RadioInstant(nanoseconds: UInt64(s) * 250_000_000)
            await front.advance(until: t)
            await back.advance(until: t)
        }
        let delivered = front.statistics.reportsDelivered + back.statistics.reportsDelivered
        let deadline = ContinuousClock.now + .seconds(30)  // a hang guard only
        while await controller.reportsHeard < delivered, ContinuousClock.now < deadline { await Task.yield() }
        let r = await controller.results()
        XCTAssertEqual(r.voters, 9, "everyone counted, the voter both radios hear once")
        XCTAssertEqual(r.counts[Answer.choice(0).description], 3)
        XCTAssertEqual(r.counts[Answer.choice(1).description], 3)
        XCTAssertEqual(r.counts[Answer.choice(2).description], 3)
        // The beacon starts on the controller's own clock, which may come after the steps above on a busy
        // machine: the airs go on carrying what it broadcasts until both listeners have heard it.
        var t = RadioInstant(nanoseconds: 20 * 250_000_000)
        while heard.counts.withLock({ $0.contains(0) }), ContinuousClock.now < deadline {
            t = RadioInstant(nanoseconds: t.nanoseconds + 250_000_000)
            await front.advance(until: t)
            await back.advance(until: t)
            await Task.yield()
        }
        let frames = heard.counts.withLock { $0 }
        XCTAssertGreaterThan(frames[0], 0, "the beacon is on the front air")
        XCTAssertGreaterThan(frames[1], 0, "the beacon is on the back air")
        for l in listeners { l.cancel() }
        run.cancel()
        _ = try? await run.value
        front.stop()
        back.stop()
    }
}
