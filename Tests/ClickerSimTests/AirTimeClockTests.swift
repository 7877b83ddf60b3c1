import ClickerSim
import ClickerTransport
import Synchronization
import XCTest

/// The air's time as a `Clock`: what runs beside a virtual air (a tally's beacon) sleeps on the air's
/// time, not on the wall clock.
final class AirTimeClockTests: XCTestCase {
    /// A sleeper on a virtual air wakes when the air reaches its deadline, not before, however long the
    /// wall clock runs; a cancelled sleeper ends with `CancellationError`.
    func testASleeperWakesWhenTheVirtualAirReachesItsDeadline() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 5, clock: .virtual))
        let clock = air.clock
        let woke = Mutex<UInt64?>(nil)
        let sleeper = Task {
            try await clock.sleep(until: clock.now.advanced(by: .milliseconds(500)))
            woke.withLock { $0 = air.now.nanoseconds }
        }
        let stopped = Task { try await clock.sleep(for: .seconds(60)) }
        while air.clockSleepers < 2 { await Task.yield() }
        air.run(until: RadioInstant(nanoseconds: 499_000_000))
        try await Task.sleep(for: .milliseconds(50))
        XCTAssertNil(woke.withLock { $0 }, "woken before the air reached its deadline")
        air.run(until: RadioInstant(nanoseconds: 500_000_000))
        try await sleeper.value
        XCTAssertEqual(woke.withLock { $0 }, 500_000_000)
        stopped.cancel()
        do { try await stopped.value; XCTFail("a cancelled sleeper returned normally") } catch is CancellationError {}
    }
}
