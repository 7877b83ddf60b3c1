/// Any `Clock` measured in `Duration`, read as the time since this value was made: one concrete type
/// that a component stores for all its timers, whatever clock it was given (the continuous clock in
/// the binaries, a test clock or the simulated air's clock in tests).
public struct ElapsedClock: Clock {
    /// An instant as time since a clock's origin (for this clock, when it was made; the project's
    /// test clocks and the simulated air's clock read time the same way).
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the clock's origin.
        public var offset: Duration
        public init(offset: Duration) { self.offset = offset }
        public func advanced(by d: Duration) -> Instant { Instant(offset: offset + d) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    private let elapsed: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration, Duration?) async throws -> Void
    public let minimumResolution: Duration

    /// `clock`, read as time since now.
    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        sleeper = { offset, tolerance in try await clock.sleep(until: start.advanced(by: offset), tolerance: tolerance) }
        minimumResolution = clock.minimumResolution
    }

    public var now: Instant { Instant(offset: elapsed()) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await sleeper(deadline.offset, tolerance)
    }
}
