import Foundation

/// Events per second over a sliding window, in constant memory.
///
/// The window is cut into fixed slots; each slot holds the count of events in its time span and is
/// reused once the window has moved past it. Recording trims as it goes, so the memory is the same
/// after a million events as after one, whether or not anybody ever reads the rate.
public struct RateWindow: Sendable, Hashable {
    /// Window length in seconds.
    public let window: Double
    private let slotWidth: Double
    private var counts: [Int]
    /// The absolute slot number (time / slotWidth) each entry currently counts for.
    private var stamps: [Int64]

    /// A window of `window` cut into `slots` slots (the rate's time resolution is window / slots).
    public init(window: Duration = .seconds(5), slots: Int = 50) {
        let n = max(1, slots)
        let seconds = Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18
        self.window = max(seconds, 1e-3)
        slotWidth = self.window / Double(n)
        counts = Array(repeating: 0, count: n)
        stamps = Array(repeating: .min, count: n)
    }

    private func slot(_ t: Date) -> Int64 {
        let x = (t.timeIntervalSinceReferenceDate / slotWidth).rounded(.down)
        return x.isFinite ? Int64(max(min(x, 9e18), -9e18)) : 0
    }

    /// Counts one event at `t`.
    public mutating func record(at t: Date) {
        let s = slot(t)
        let i = Int(((s % Int64(counts.count)) + Int64(counts.count)) % Int64(counts.count))
        if stamps[i] != s {
            // The slot held an older span (or a later one, if the clock stepped back): start it afresh.
            stamps[i] = s
            counts[i] = 0
        }
        counts[i] += 1
    }

    /// Events per second over the window that ends at `now`.
    public func perSecond(at now: Date) -> Double {
        let s = slot(now), n = Int64(counts.count)
        var total = 0
        for i in 0..<counts.count where stamps[i] <= s && stamps[i] > s - n { total += counts[i] }
        return Double(total) / window
    }

    /// Forgets every event.
    public mutating func reset() {
        for i in counts.indices { counts[i] = 0; stamps[i] = .min }
    }

    /// Entries held: constant, whatever the number of events.
    public var storage: Int { counts.count }
}
