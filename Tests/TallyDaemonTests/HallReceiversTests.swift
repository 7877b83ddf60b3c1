import ClickerSim
import ClickerTransport
import ClickerWire
@testable import TallyDaemon
import XCTest

/// A 600-seat hall with receivers at the front, the middle and the back, merged into one tally as
/// `clicker-tally --simulate 600 --hall 30x20 --receivers front,middle,back` does.
final class HallReceiversTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func testThreeReceiversCountEverySeatOnceThoughManyAreHeardByTwo() async throws {
        let hall = LectureHall(geometry: HallGeometry(rows: 30, seatsPerRow: 20), receivers: [.front, .middle, .back])
        let seed: UInt64 = 41
        let air = SimulatedAir(.hall(hall, seed: seed))
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let run = Task { try await controller.run(central: air.receivingCentral()) }
        await controller.untilScanning()
        let secret = pollSecret(code)
        var rng = SplitMix64(seed: 41)
        var voterIDs = Set<UInt32>()
        for i in 0..<600 {
            var sealer = BallotSealer(secret: secret, deviceKey: DeviceKey.generate(using: &rng))
            while !voterIDs.insert(sealer.voterID).inserted {  // two voters must not share an ID
                sealer = BallotSealer(secret: secret, deviceKey: DeviceKey.generate(using: &rng))
            }
            let data = sealer.advertisement(question: 1, sequence: 1, answer: .choice(UInt8(i % 4)))
            try await air.addPeripheral().advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: data,
                                                                       interval: .milliseconds(100), connectable: false))
        }
        // Seats in range of two receivers or more, with 10 dB to spare: their ballots reach the tally twice.
        let seats = hall.seatOrder(seed: seed)
        let shared = (0..<600).filter { d in
            (0..<3).filter { hall.receivedPower(.device(d), .receiver($0), seats: seats, seed: seed) > LectureHall.sensitivity + 10 }.count >= 2
        }.count
        XCTAssertGreaterThan(shared, 100)
        for s in 1...40 { await air.advance(until: RadioInstant(nanoseconds: UInt64(s) * 250_000_000)) }
        let delivered = air.statistics.reportsDelivered
        let deadline = ContinuousClock.now + .seconds(60)  // a hang guard only
        while await controller.reportsHeard < delivered, ContinuousClock.now < deadline { await Task.yield() }
        let r = await controller.results()
        XCTAssertEqual(r.voters, 600, "every seat counted once")
        for a in 0..<4 { XCTAssertEqual(r.counts[Answer.choice(UInt8(a)).description], 150) }
        XCTAssertGreaterThan(delivered, 600 * 2, "ballots repeat, on several receivers")
        run.cancel()
        _ = try? await run.value
    }
}
