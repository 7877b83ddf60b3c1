import ClickerSim
import ClickerTransport
import XCTest

final class RealClockTests: XCTestCase {
    func testRealClockPacesEventsToWallTime() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 41, clock: .realTime()))
        defer { air.stop() }
        let central = air.central()
        let p = air.addPeripheral()
        try await p.advertise(payload(1, interval: .milliseconds(20)))
        try await p.publish(service: service, characteristic: ballot, value: [42])
        let start = RadioInstant.now()
        var reports: [AdvertisementReport] = []
        for try await r in central.advertisements(companyID: companyID) {
            reports.append(r)
            // Delivered close to when it happened on the wall clock.
            XCTAssertLessThan(secs(RadioInstant.now() - r.timestamp), 0.5)  // generous: shared, loaded CI machine
            if reports.count == 10 { break }
        }
        let elapsed = secs(RadioInstant.now() - start)
        // Ten events at 20–30 ms (one PDU each on the scanner's channel) take ≥ 180 ms of wall time.
        XCTAssertGreaterThan(elapsed, 0.18)
        XCTAssertLessThan(elapsed, 5)
        XCTAssertEqual(air.statistics.pdusReceived >= 10, true)

        let t0 = RadioInstant.now()
        let value = try await central.readCharacteristic(device: p.address, service: service, characteristic: ballot, timeout: .seconds(3))
        XCTAssertEqual(value, [42])
        XCTAssertGreaterThan(secs(RadioInstant.now() - t0), 0.12)  // connect + 4 connection events of 30 ms

        // A real-clock timeout: a device that never advertises connectably.
        let silent = air.addPeripheral()
        try await silent.publish(service: service, characteristic: ballot, value: [1])
        let t1 = RadioInstant.now()
        do {
            _ = try await central.readCharacteristic(device: silent.address, service: service, characteristic: ballot, timeout: .milliseconds(300))
            XCTFail("read from a silent device succeeded")
        } catch let e as TransportError {
            guard case .timeout = e else { return XCTFail("expected timeout, got \(e)") }
        }
        XCTAssertGreaterThanOrEqual(secs(RadioInstant.now() - t1), 0.3)
        XCTAssertLessThan(secs(RadioInstant.now() - t1), 2)
    }
}
