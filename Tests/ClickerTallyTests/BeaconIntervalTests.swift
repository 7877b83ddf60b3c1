import ClickerSim
import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

/// The STATE interval a tally announces (``BeaconAirModel``, docs/DESIGN.md, "The STATE interval this tally
/// announces").
final class BeaconIntervalTests: XCTestCase {
    let a = BeaconAirModel.ballotAirTime

    func testTheBallotAirtimeIsTheSimulatorsForABallot() {
        let ballot = AdvertisingPayload(companyID: BallotFormat.companyID,
                                        data: [UInt8](repeating: 0, count: BallotFormat.advertisementLength))
        XCTAssertEqual(a, LegacyAdvertising.airTime(of: ballot))
        XCTAssertEqual(a, .microseconds(360))
    }

    func testTheIntervalPutsTheChannelAtLoadOne() {
        // Without acknowledged voters, S is largest at u/(I+δ) = 1/(2a): I = 2au − 5 ms.
        for u in [50, 100, 300, 1000, 3000] {
            let chosen = BeaconAirModel.stateInterval(unacknowledged: u, acknowledged: 0)
            let ideal = 2 * 0.000360 * Double(u) - 0.005
            XCTAssertEqual(Double(chosen.milliseconds ?? 0) / 1000, ideal, accuracy: 0.010, "u = \(u)")
            // And it is the best code: its neighbours hear fewer.
            let s = { (ms: Int) in BeaconAirModel.heardPerSecond(unacknowledged: u, acknowledged: 0, interval: .milliseconds(ms)) }
            let ms = chosen.milliseconds ?? 0
            XCTAssertGreaterThanOrEqual(s(ms), s(ms + 10))
            if ms > 20 { XCTAssertGreaterThanOrEqual(s(ms), s(ms - 10)) }
        }
    }

    func testLimitsAndMonotony() {
        XCTAssertEqual(BeaconAirModel.stateInterval(unacknowledged: 0, acknowledged: 500).milliseconds, 20)
        XCTAssertEqual(BeaconAirModel.stateInterval(unacknowledged: 1, acknowledged: 0).milliseconds, 20)
        XCTAssertEqual(BeaconAirModel.stateInterval(unacknowledged: 20, acknowledged: 0).milliseconds, 20,
                       "a small room at load below one: as fast as BLE allows")
        XCTAssertEqual(BeaconAirModel.stateInterval(unacknowledged: 100_000, acknowledged: 0).milliseconds, 2550)
        var last = 0
        for u in stride(from: 2, through: 4000, by: 37) {
            let ms = BeaconAirModel.stateInterval(unacknowledged: u, acknowledged: 0).milliseconds ?? 0
            XCTAssertGreaterThanOrEqual(ms, last, "more voters to hear never shortens the interval (u = \(u))")
            last = ms
        }
    }

    func testAcknowledgedVotersAtTheKeepAliveLowerTheRateButNotTheBestInterval() {
        // Their PDUs are a load that does not depend on I: exp(−2a·k/(K+δ)) is a constant factor of S, so
        // the best I is the same; the rate at which the others are heard drops by that factor.
        for u in [30, 200, 800] {
            let alone = BeaconAirModel.stateInterval(unacknowledged: u, acknowledged: 0)
            let crowded = BeaconAirModel.stateInterval(unacknowledged: u, acknowledged: 5000)
            XCTAssertEqual(alone, crowded, "u = \(u)")
            let i = Duration.milliseconds(alone.milliseconds ?? 20)
            let ratio = BeaconAirModel.heardPerSecond(unacknowledged: u, acknowledged: 5000, interval: i)
                / BeaconAirModel.heardPerSecond(unacknowledged: u, acknowledged: 0, interval: i)
            XCTAssertEqual(ratio, exp(-2 * 0.000360 * 5000 / 10.245), accuracy: 1e-9)
        }
    }

    func testBestThroughputAndTheBeaconsShare() {
        XCTAssertEqual(BeaconAirModel.bestThroughput(), 1 / (2 * 0.000360 * M_E), accuracy: 1e-6)
        let withBeacon = BeaconAirModel.bestThroughput(broadcast: .init(interval: .milliseconds(20)))
        // 3 × (360 + 376) µs every 25 ms: the tally loses 8.8 % of what it could hear.
        XCTAssertEqual(withBeacon / BeaconAirModel.bestThroughput(), 1 - 3 * (0.000360 + 0.000376) / 0.025, accuracy: 1e-9)
    }

    /// The simulated air agrees: 300 voters at the chosen interval are heard more often than at half
    /// or twice it (one scanner at 100 % duty, as the model assumes, no beacon).
    func testTheSimulatedAirHearsMostAtTheChosenInterval() async throws {
        let u = 300
        let chosen = BeaconAirModel.stateInterval(unacknowledged: u, acknowledged: 0, broadcast: nil).milliseconds ?? 0
        var heard: [Int: Int] = [:]
        for ms in [chosen / 2, chosen, chosen * 2] {
            let room = try await AirRoom(voters: u, intervalMs: ms, seed: 7), air = room.air
            air.run(until: RadioInstant(nanoseconds: 3_000_000_000))
            heard[ms] = air.statistics.pdusReceived
            air.finishAdvertisementStreams()
            withExtendedLifetime(room.scanning) {}
            // And the model predicts the rate within 15 %.
            let predicted = BeaconAirModel.heardPerSecond(unacknowledged: u, acknowledged: 0, interval: .milliseconds(ms),
                                                          broadcast: nil) * 3
            XCTAssertEqual(Double(air.statistics.pdusReceived), predicted, accuracy: 0.15 * predicted, "\(ms) ms")
        }
        XCTAssertGreaterThan(heard[chosen]!, heard[chosen / 2]!)
        XCTAssertGreaterThan(heard[chosen]!, heard[chosen * 2]!)
    }
}
