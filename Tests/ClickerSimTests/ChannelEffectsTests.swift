import ClickerSim
import ClickerTransport
import XCTest

final class ChannelEffectsTests: XCTestCase {
    /// Two advertisers whose events always coincide (no advDelay, same start): every PDU overlaps.
    func lockstepPair(capture: Double?) async throws -> [DeviceAddress: Int] {
        let air = SimulatedAir(AirConfiguration(seed: 31, maxAdvertisingDelay: .zero, captureThreshold: capture,
                                                firstEventPhase: .immediate))
        let stream = air.central().advertisements(companyID: companyID)
        let strong = air.addPeripheral(address: DeviceAddress(rawValue: 1), rssi: -40)
        let weak = air.addPeripheral(address: DeviceAddress(rawValue: 2), rssi: -70)
        try await strong.advertise(payload(1))
        try await weak.advertise(payload(2))
        air.run(until: at(3))
        var heard: [DeviceAddress: Int] = [:]
        for r in try await drain(air, stream) { heard[r.address, default: 0] += 1 }
        return heard
    }

    func testOverlappingPDUsDestroyEachOtherWithoutCapture() async throws {
        let heard = try await lockstepPair(capture: nil)
        XCTAssertEqual(heard, [:])
    }

    func testCaptureLetsTheStrongerPDUThrough() async throws {
        let heard = try await lockstepPair(capture: 10)  // 30 dB apart: the strong one survives
        XCTAssertGreaterThan(heard[DeviceAddress(rawValue: 1)] ?? 0, 25)
        XCTAssertNil(heard[DeviceAddress(rawValue: 2)])
        let tooStrict = try await lockstepPair(capture: 35)  // 30 dB is not enough
        XCTAssertEqual(tooStrict, [:])
    }

    func testRandomLossDropsTheConfiguredShare() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 32, lossProbability: 0.3))
        let stream = air.central().advertisements(companyID: companyID)
        try await air.addPeripheral().advertise(payload(1, interval: .milliseconds(20)))
        air.run(until: at(60))
        let reports = try await drain(air, stream)
        let s = air.statistics
        XCTAssertEqual(s.pdusListened, s.pdusReceived + s.randomLosses)
        XCTAssertEqual(Double(s.randomLosses) / Double(s.pdusListened), 0.3, accuracy: 0.02)
        XCTAssertEqual(reports.count, s.pdusReceived)
    }

    func testSynchronizedStartIsMuchWorseThanStaggeredStart() async throws {
        func heard(_ phase: FirstEventPhase) async throws -> Int {
            let air = SimulatedAir(AirConfiguration(seed: 33, firstEventPhase: phase))
            let stream = air.central().advertisements(companyID: companyID)
            for i in 0..<100 { try await air.addPeripheral().advertise(payload(i)) }
            air.run(until: at(0.5))
            return Set(try await drain(air, stream).map(\.address)).count
        }
        let staggered = try await heard(.randomWithinInterval), synchronized = try await heard(.immediate)
        // Staggered: p ≈ 0.49 per event, ~4 events: ≈ 93 of 100 heard. Synchronized: all events
        // within the first 10 ms of each interval: almost nothing gets through.
        XCTAssertGreaterThan(staggered, 80)
        XCTAssertLessThan(synchronized, staggered / 2)
    }
}
