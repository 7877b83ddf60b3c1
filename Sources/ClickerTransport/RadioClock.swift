/// The clock a radio backend reads and waits on: the `RadioInstant`s it stamps reports and decides by,
/// and every timer it runs, from one `Clock`. On the continuous clock (the default) its instants are
/// `RadioInstant.now()`'s; a test passes a clock it moves itself.
public struct RadioClock: Sendable {
    private let timer: ElapsedClock
    private let base: RadioInstant

    public init(_ clock: some Clock<Duration> = ContinuousClock()) {
        base = RadioInstant.now()
        timer = ElapsedClock(clock)
    }

    public var now: RadioInstant { base + timer.now.offset }

    /// The same clock as a `Clock`, for what takes one (a D-Bus connection's reply deadlines).
    public var elapsed: ElapsedClock { timer }

    public func sleep(for duration: Duration) async throws {
        try await timer.sleep(for: duration)
    }

    public func sleep(until instant: RadioInstant) async throws {
        try await timer.sleep(until: ElapsedClock.Instant(offset: instant - base))
    }
}
