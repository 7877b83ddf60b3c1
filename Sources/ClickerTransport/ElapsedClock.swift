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
    private let armedSleeper: @Sendable (Duration, @escaping @Sendable () -> Void) async throws -> Void
    public let minimumResolution: Duration

    /// `clock`, read as time since now.
    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        sleeper = { offset, tolerance in try await clock.sleep(until: start.advanced(by: offset), tolerance: tolerance) }
        if let arming = clock as? any ArmingClock, let origin = start as? Instant {
            armedSleeper = { offset, armed in try await arming.sleep(until: origin.advanced(by: offset), armed: armed) }
        } else {
            // Nobody moves this clock but time: saying so just before the sleep is as good as at its start.
            armedSleeper = { offset, armed in
                armed()
                try await clock.sleep(until: start.advanced(by: offset), tolerance: nil)
            }
        }
        minimumResolution = clock.minimumResolution
    }

    public var now: Instant { Instant(offset: elapsed()) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await sleeper(deadline.offset, tolerance)
    }

    /// Sleeps until `deadline` like ``sleep(until:tolerance:)``, and calls `armed` once the sleep is
    /// registered with the clock (an ``ArmingClock``; another clock just before it sleeps), unless the
    /// deadline has passed already. A task that says "I am waiting" from `armed` is waiting for sure:
    /// a test that moves the clock after hearing it wakes it at the deadline, not later.
    public func sleep(until deadline: Instant, armed: @escaping @Sendable () -> Void) async throws {
        try await armedSleeper(deadline.offset, armed)
    }
}

/// A clock that a test moves (the test clock, the virtual air's clock), whose sleeps can say when they
/// are registered: from then on, moving the clock past the deadline wakes the sleeper at the deadline.
public protocol ArmingClock: Sendable {
    /// Sleeps until `deadline` (time since the clock's origin, as ``ElapsedClock`` reads it); calls
    /// `armed` once the sleeper is registered, never when the deadline has passed already.
    func sleep(until deadline: ElapsedClock.Instant, armed: @escaping @Sendable () -> Void) async throws
}
