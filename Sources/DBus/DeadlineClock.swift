/// The clock a connection's reply deadlines are read on: any `Clock<Duration>` (the continuous clock
/// unless the connection was given another), read as nanoseconds since the connection was made.
struct DeadlineClock: Sendable {
    private let elapsed: @Sendable () -> Duration

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
    }

    /// Nanoseconds since the connection was made.
    var now: UInt64 { nanoseconds(elapsed()) }

    /// When a call made now with `timeout` is due (at once for a timeout of zero or less).
    func deadline(after timeout: Duration) -> UInt64 {
        let (sum, overflow) = now.addingReportingOverflow(nanoseconds(timeout))
        return overflow ? .max : sum
    }
}

/// `d` in whole nanoseconds: zero when negative, `UInt64.max` when it does not fit.
func nanoseconds(_ d: Duration) -> UInt64 {
    let (seconds, attoseconds) = d.components
    guard seconds >= 0 else { return 0 }
    let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
    if overflow { return .max }
    let (sum, carry) = whole.addingReportingOverflow(UInt64(max(0, attoseconds / 1_000_000_000)))
    return carry ? .max : sum
}
