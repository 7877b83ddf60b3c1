import Foundation

/// The one clock a poll runs on. Its timers (the beacon's) sleep on it, and the wall times it records
/// (votes per second, exports, the beacon's counter, the forgery alert) are read from it, so that a
/// test that moves it moves all of them together. It wraps any `Clock` measured in `Duration`: the
/// continuous clock in the binaries, a `TestClock` or the simulated air's clock in tests.
public struct PollClock: Clock {
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the clock was made.
        public var offset: Duration
        public func advanced(by d: Duration) -> Instant { Instant(offset: offset + d) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    /// The wall time when the clock was made (offset zero).
    public let origin: Date
    private let elapsed: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration, Duration?) async throws -> Void
    public let minimumResolution: Duration

    /// `clock` read as time since now; `origin` is the wall time of that moment.
    public init<C: Clock>(_ clock: C, origin: Date = Date()) where C.Duration == Duration {
        let start = clock.now
        self.origin = origin
        elapsed = { start.duration(to: clock.now) }
        sleeper = { offset, tolerance in try await clock.sleep(until: start.advanced(by: offset), tolerance: tolerance) }
        minimumResolution = clock.minimumResolution
    }

    public var now: Instant { Instant(offset: elapsed()) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await sleeper(deadline.offset, tolerance)
    }

    /// The wall time now, on this clock.
    public var date: Date { origin.addingTimeInterval(Self.seconds(elapsed())) }

    static func seconds(_ d: Duration) -> Double {
        let (s, atto) = d.components
        return Double(s) + Double(atto) * 1e-18
    }
}
