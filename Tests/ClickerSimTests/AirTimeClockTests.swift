import ClickerSim
import ClickerTransport
import Synchronization
import XCTest

/// The air's time as a `Clock`: what runs beside a virtual air (a tally's beacon) sleeps on the air's
/// time, not on the wall clock.
final class AirTimeClockTests: XCTestCase {
    /// A sleeper on a virtual air wakes when the air reaches its deadline, not before; a cancelled
    /// sleeper ends with `CancellationError`.
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
        // A sleeper woken leaves the air's list at once, within run(until:): none has.
        XCTAssertEqual(air.clockSleepers, 2, "woken before the air reached its deadline")
        XCTAssertNil(woke.withLock { $0 })
        air.run(until: RadioInstant(nanoseconds: 500_000_000))
        XCTAssertEqual(air.clockSleepers, 1, "the sleeper due at 500 ms is woken there; the other sleeps on")
        try await sleeper.value
        XCTAssertEqual(woke.withLock { $0 }, 500_000_000)
        stopped.cancel()
        do { try await stopped.value; XCTFail("a cancelled sleeper returned normally") } catch is CancellationError {}
    }
}
