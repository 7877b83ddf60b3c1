import ClickerTransport
import Foundation

/// The one clock a poll runs on. Its timers (the beacon's) sleep on it, and the wall times it records
/// (votes per second, exports, the beacon's counter, the forgery alert) are read from it, so that a
/// test that moves it moves all of them together. It wraps any `Clock` measured in `Duration`: the
/// continuous clock in the binaries, a `TestClock` or the simulated air's clock in tests.
public struct PollClock: Clock {
    public typealias Instant = ElapsedClock.Instant

    /// The wall time when the clock was made (offset zero).
    public let origin: Date
    private let base: ElapsedClock

    /// `clock` read as time since now; `origin` is the wall time of that moment.
    public init<C: Clock>(_ clock: C, origin: Date = Date()) where C.Duration == Duration {
        base = ElapsedClock(clock)
        self.origin = origin
    }

    public var now: Instant { base.now }
    public var minimumResolution: Duration { base.minimumResolution }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await base.sleep(until: deadline, tolerance: tolerance)
    }

    /// Sleeps until `deadline`, calling `armed` once the clock knows the sleeper (``ElapsedClock/sleep(until:armed:)``).
    public func sleep(until deadline: Instant, armed: @escaping @Sendable () -> Void) async throws {
        try await base.sleep(until: deadline, armed: armed)
    }

    /// The wall time now, on this clock.
    public var date: Date { origin.addingTimeInterval(Self.seconds(base.now.offset)) }

    static func seconds(_ d: Duration) -> Double {
        let (s, atto) = d.components
        return Double(s) + Double(atto) * 1e-18
    }
}
