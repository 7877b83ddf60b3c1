/// When a following voter asks the radio again to put its ballot on the air after the radio refused
/// (bluetoothd gone or slow, a registration refused): ``first`` after the first refusal, doubled per
/// refusal in a row, at most ``longest``, on the follower's clock. Until then the beacon frames and
/// ticks that arrive leave the radio alone (each used to send the registrations again: 16
/// `RegisterApplication` calls in 170 ms), and a wake-up at the time makes sure the next try comes
/// even when nothing is heard. Pure.
struct RadioRetry: Sendable, Equatable {
    static let first: Duration = .milliseconds(250)
    static let longest: Duration = .seconds(8)

    /// Refusals in a row.
    private(set) var failures = 0
    /// When the radio may be asked again (nil: at once).
    private(set) var next: Duration?

    /// The wait after `failures` refusals in a row.
    static func delay(after failures: Int) -> Duration {
        min(first * (1 << min(max(failures - 1, 0), 16)), longest)
    }

    /// Whether the radio may be asked at `now`.
    func due(at now: Duration) -> Bool { next.map { now >= $0 } ?? true }

    /// The radio refused at `now`: returns how long until the next try.
    mutating func failed(at now: Duration) -> Duration {
        failures += 1
        let wait = Self.delay(after: failures)
        next = now + wait
        return wait
    }

    mutating func succeeded() {
        failures = 0
        next = nil
    }
}
