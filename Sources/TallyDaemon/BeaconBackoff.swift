/// How long the beacon waits before it hands the radio a payload again while the radio keeps refusing
/// (bluetoothd gone, no LE advertising, no free instance): ``first`` after the first failure, doubled per
/// failure in a row, at most ``longest``. A payload that goes out resets it. Pure.
struct BeaconBackoff: Sendable, Equatable {
    static let first: Duration = .milliseconds(250)
    static let longest: Duration = .seconds(10)

    /// Failed broadcasts in a row.
    private(set) var failures = 0

    /// The wait before the next try (nil: none, the last one went out).
    var delay: Duration? {
        guard failures > 0 else { return nil }
        return min(Self.first * (1 << min(failures - 1, 16)), Self.longest)
    }

    mutating func failed() { failures += 1 }
    mutating func succeeded() { failures = 0 }
}
