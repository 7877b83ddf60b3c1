import ClickerSim
import ClickerTransport
import XCTest

/// The simulator against the analytic model: on the scanner's channel each other advertiser
/// sends one PDU per event, so a PDU is clean with probability (1 − 2a/I)^(N−1).
final class AnalyticModelTests: XCTestCase {
    struct Case { var n: Int; var intervalMS: Int; var seconds: Double }

    /// Clean fraction of the PDUs the scanner listened to, with capture and random loss off.
    func measuredCleanFraction(_ c: Case, seed: UInt64) async throws -> (fraction: Double, samples: Int) {
        let air = SimulatedAir(AirConfiguration(seed: seed, captureThreshold: nil, lossProbability: 0,
                                                firstEventPhase: .randomWithinInterval))
        let stream = air.central().advertisements(companyID: companyID)
        for i in 0..<c.n {
            try await air.addPeripheral().advertise(payload(i, interval: .milliseconds(c.intervalMS)))
        }
        // Skip the first interval (devices still starting), then count.
        air.run(until: at(Double(c.intervalMS) / 1000 + 0.011))
        let before = air.statistics
        air.run(until: at(c.seconds))
        let after = air.statistics
        _ = try await drain(air, stream)
        let listened = after.pdusListened - before.pdusListened
        let received = after.pdusReceived - before.pdusReceived
        XCTAssertEqual(after.captures + after.randomLosses + after.outOfRange, 0)
        XCTAssertEqual(listened - received, after.collisions - before.collisions)
        return (Double(received) / Double(listened), listened)
    }

    let seedBase: UInt64 = 1000

    func testCleanFractionMatchesModelAcrossCrowdSizesAndIntervals() async throws {
        // Several seeds per case: the phases of the advertisers stay correlated for many events,
        // so independent runs are worth more than one long run.
        let cases = [
            Case(n: 10, intervalMS: 20, seconds: 12),
            Case(n: 100, intervalMS: 100, seconds: 8),
            Case(n: 300, intervalMS: 100, seconds: 5),
            Case(n: 300, intervalMS: 500, seconds: 15),
            Case(n: 1000, intervalMS: 1000, seconds: 12),
        ]
        let seedsPerCase = 5
        let a = LegacyAdvertising.airTime(of: payload(0))
        XCTAssertEqual(a, .microseconds(376))
        for (k, c) in cases.enumerated() {
            let meanInterval = Duration.milliseconds(c.intervalMS) + .milliseconds(5)
            let model = AnalyticModel.cleanProbability(advertisers: c.n, airTime: a, meanEventInterval: meanInterval)
            // A wrong physics (vulnerable window a instead of 2a) would predict this instead:
            let wrong = AnalyticModel.cleanProbability(advertisers: c.n, airTime: a / 2, meanEventInterval: meanInterval)
            var received = 0.0, samples = 0
            for s in 0..<seedsPerCase {
                let (f, n) = try await measuredCleanFraction(c, seed: seedBase + UInt64(k * 100 + s))
                received += f * Double(n)
                samples += n
            }
            let measured = received / Double(samples)
            XCTAssertGreaterThan(samples, 8000, "\(c): too few samples to tell")
            let rel = abs(measured - model) / model
            print("N=\(c.n) I=\(c.intervalMS)ms samples=\(samples) measured=\(measured) model=\(model) exp=\(AnalyticModel.cleanProbabilityExponential(advertisers: c.n, airTime: a, meanEventInterval: meanInterval)) rel=\(rel)")
            XCTAssertLessThan(rel, 0.03, "N=\(c.n) I=\(c.intervalMS) ms: simulated \(measured), model \(model)")
            // The tolerance is tight enough to tell the right physics from a wrong one.
            XCTAssertGreaterThan(abs(wrong - model) / model, 0.1)
        }
    }
}
