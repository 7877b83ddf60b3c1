import ClickerSim
import ClickerTransport
import XCTest

final class RandomAndPhysicsTests: XCTestCase {
    func testSplitMix64MatchesReferenceOutputs() {
        var g = SplitMix64(seed: 0)
        XCTAssertEqual(g.next(), 0xE220_A839_7B1D_CDAF)
        XCTAssertEqual(g.next(), 0x6E78_9E6A_A1B9_65F4)
        XCTAssertEqual(g.next(), 0x06C4_5D18_8009_454F)
    }

    func testXoshiroIsReproducibleAndSeedDependent() {
        var a = Xoshiro256StarStar(seed: 42), b = Xoshiro256StarStar(seed: 42), c = Xoshiro256StarStar(seed: 43)
        let sa = (0..<100).map { _ in a.next() }, sb = (0..<100).map { _ in b.next() }, sc = (0..<100).map { _ in c.next() }
        XCTAssertEqual(sa, sb)
        XCTAssertNotEqual(sa, sc)
        // Roughly uniform: mean of the top bit over many draws near 1/2.
        var g = Xoshiro256StarStar(seed: 7)
        let ones = (0..<100_000).reduce(0) { acc, _ in acc + Int(g.next() >> 63) }
        XCTAssertEqual(Double(ones) / 100_000, 0.5, accuracy: 0.01)
    }

    func testAirTimeFollowsPDULength() {
        XCTAssertEqual(LegacyAdvertising.airTime(advertisingDataLength: 31), .microseconds(376))
        XCTAssertEqual(LegacyAdvertising.airTime(advertisingDataLength: 0), .microseconds(128))
        // 24 bytes of data + company ID + MSD header + flags = 31 bytes of AD.
        XCTAssertEqual(LegacyAdvertising.airTime(of: payload(0)), .microseconds(376))
        // Non-connectable advertising carries no flags: 3 bytes (24 µs) shorter.
        XCTAssertEqual(LegacyAdvertising.airTime(of: payload(0, connectable: false)), .microseconds(352))
    }

    func testOversizedPayloadIsRefused() async throws {
        let air = SimulatedAir()
        let p = air.addPeripheral()
        do {
            try await p.advertise(payload(0, bytes: 25))
            XCTFail("25 bytes of connectable manufacturer data cannot fit 31 bytes of AD")
        } catch let e as TransportError {
            guard case .unsupported = e else { return XCTFail("unexpected \(e)") }
        }
        try await p.advertise(payload(0, connectable: false, bytes: 27))  // fits without flags
    }

    func testAnalyticHelpers() {
        let a = Duration.microseconds(376), i = Duration.milliseconds(105)
        let p = AnalyticModel.cleanProbabilityExponential(advertisers: 300, airTime: a, meanEventInterval: i)
        XCTAssertEqual(p, 0.117, accuracy: 0.002)
        XCTAssertEqual(AnalyticModel.cleanProbability(advertisers: 300, airTime: a, meanEventInterval: i), p, accuracy: 0.003)
        let t50 = AnalyticModel.timeToHear(fraction: 0.5, cleanProbability: p, meanEventInterval: i)
        XCTAssertEqual(t50?.components.seconds ?? 9, 0)  // about 0.58 s
        XCTAssertEqual(AnalyticModel.fractionHeard(after: t50 ?? .zero, cleanProbability: p, meanEventInterval: i), 0.5, accuracy: 1e-6)
    }

    func testRandomPhaseModel() {
        let i = Duration.milliseconds(100)
        // Before one interval has passed, only those whose first event came have had one chance.
        XCTAssertEqual(AnalyticModel.fractionHeardRandomPhase(after: .milliseconds(50), cleanProbability: 0.4, meanEventInterval: i), 0.5 * 0.4, accuracy: 1e-9)
        XCTAssertEqual(AnalyticModel.fractionHeardRandomPhase(after: .milliseconds(200), cleanProbability: 0.4, meanEventInterval: i), 1 - 0.36, accuracy: 1e-9)
        let t = AnalyticModel.timeToHearRandomPhase(fraction: 0.9, cleanProbability: 0.4, meanEventInterval: i)
        XCTAssertEqual(AnalyticModel.fractionHeardRandomPhase(after: t ?? .zero, cleanProbability: 0.4, meanEventInterval: i), 0.9, accuracy: 1e-6)
        // Later than the model without phases, by up to one interval.
        let simple = AnalyticModel.timeToHear(fraction: 0.9, cleanProbability: 0.4, meanEventInterval: i)
        XCTAssertGreaterThan(t ?? .zero, simple ?? .seconds(9))
        XCTAssertLessThan(t ?? .seconds(9), (simple ?? .zero) + i)
    }

    func testExtremeInputsDoNotTrap() async throws {
        XCTAssertNil(AnalyticModel.timeToHear(fraction: 0.5, cleanProbability: 1e-300, meanEventInterval: .milliseconds(25)))
        let air = SimulatedAir(AirConfiguration(seed: 1, connections: ConnectionConfiguration(connectionInterval: .seconds(Int64.max), exchangeEvents: Int.max)))
        let central = air.central()
        let p = air.addPeripheral(rssi: .nan)
        try await p.advertise(AdvertisingPayload(companyID: 1, data: [], interval: .seconds(Int64.max)))
        try await p.publish(service: service, characteristic: ballot, value: [1])
        air.schedule(after: .seconds(Int64.max)) { _ in }
        let read = Task { try await central.readCharacteristic(device: p.address, service: service, characteristic: ballot, timeout: .seconds(Int64.max)) }
        await waitForPendingReads(air, 1)
        air.run(for: .seconds(30))
        read.cancel()
        do { _ = try await read.value } catch { XCTAssertTrue(error is CancellationError) }
        XCTAssertEqual(air.pendingReads, 0)
        air.perform { ctx in ctx.setRSSI(p.address, -.infinity) }
    }
}
