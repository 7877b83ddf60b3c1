#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerWire

/// How many voters the tally has not yet counted, read from the rate at which it counts new ones
/// (docs/DESIGN.md, "The STATE interval this tally announces", "With extended acknowledgements"). Pure.
///
/// Between two payloads (a *window*) the tally counts `n` voters for the first time. With `U` voters
/// not yet counted and `c` counted but not yet quiet, all at the STATE period `P = I + δ`, and `k`
/// quiet at the keep-alive `K`, new voters are counted at
///
///     λ = U/P · e^(−G) · listening,   G = 2a·(U + c)/P + 2a·k/(K+δ)
///
/// (``BeaconAirModel``). One window cannot tell a small room from a large one: the rate rises with
/// `U` up to the channel's best and falls beyond it, so two values of `U` give every rate (ALOHA's
/// two roots). But `U = N − (voters counted)`, and the room `N` (the voters who cast) does not change
/// as the tally counts them: every window is evidence about the same `N`. The windows' Poisson
/// likelihood, older windows faded with ``halfLife``, is a function of `N` alone, and a run of windows
/// tells the roots apart: as the tally counts, a small room's rate falls and a large room's does not,
/// and the windows at another interval see the two rooms differently again.
///
/// Where the likelihood has more than one peak, the estimate is the largest `N` whose peak is within
/// ``margin`` of the best (a likelihood ratio of e³ ≈ 20): an estimate too large only slows a room,
/// one too small chokes it.
public struct RoomLikelihood: Sendable, Hashable {
    /// What the tally saw between two payloads.
    public struct Window: Sendable, Hashable {
        /// When it ended, on the radio's clock (ns), and how long it lasted.
        public var end: UInt64
        public var seconds: Double
        /// Voters counted for the first time in it.
        public var arrivals: Int
        /// The STATE period announced during it: interval + mean advDelay (s).
        public var period: Double
        /// Voters counted at its end (arrivals included), counted but not yet quiet, and quiet.
        public var counted: Int
        public var loudCounted: Int
        public var quiet: Int
        /// The share of the time the tally's scanner listened.
        public var listening: Double

        public init(end: UInt64, seconds: Double, arrivals: Int, period: Double, counted: Int, loudCounted: Int,
                    quiet: Int, listening: Double) {
            self.end = end
            self.seconds = seconds
            self.arrivals = arrivals
            self.period = period
            self.counted = counted
            self.loudCounted = loudCounted
            self.quiet = quiet
            self.listening = listening
        }
    }

    /// How fast old windows fade.
    public var halfLife: Duration = .seconds(1)
    /// How far below the best peak (in log-likelihood) a larger room's peak may be and still be chosen.
    public var margin = 3.0
    public private(set) var windows: [Window] = []
    /// The windows kept: 8 s of 100 ms payloads, the oldest faded to under 1 %.
    public static let maxWindows = 80
    /// Arrivals the windows must hold before they say anything.
    public static let minimumArrivals = 10
    /// The most voters not yet counted that the estimate considers.
    public static let limit = 20_000

    public init() {}

    public mutating func observe(_ window: Window) {
        windows.append(window)
        if windows.count > Self.maxWindows { windows.removeFirst(windows.count - Self.maxWindows) }
    }

    /// The log-likelihood of a room of `room` voters at `ns` (up to a constant).
    public func logLikelihood(room: Double, at ns: UInt64,
                              airTime: Duration = BeaconAirModel.ballotAirTime) -> Double {
        let a2 = 2 * BeaconAirModel.seconds(airTime)
        let keepAlive = BeaconAirModel.seconds(BeaconInterval.keepAlive + BeaconAirModel.meanDelay)
        let halfLife = BeaconAirModel.seconds(self.halfLife)
        var sum = 0.0
        for w in windows {
            let weight = exp2(-Double(ns &- min(ns, w.end)) / 1e9 / halfLife)
            // The voters not yet counted, on average over the window.
            let u = max(0, room - (Double(w.counted) - Double(w.arrivals) / 2))
            let g = a2 * (u + Double(w.loudCounted)) / w.period + a2 * Double(w.quiet) / keepAlive
            let expected = max(1e-9, u / w.period * exp(-g) * w.listening * w.seconds)
            sum += weight * (Double(w.arrivals) * log(expected) - expected)
        }
        return sum
    }

    /// The voters not yet counted, given `counted` counted now: the largest peak of the likelihood
    /// within ``margin`` of the best. Peaks above `atMost` voters not yet counted are left out when
    /// another peak remains (the repeats bound the load from above; ``TallyBeacon``). Nil while the
    /// windows hold fewer than ``minimumArrivals``.
    public func uncounted(counted: Int, at ns: UInt64, atMost: Int? = nil,
                          airTime: Duration = BeaconAirModel.ballotAirTime) -> Int? {
        guard windows.reduce(0, { $0 + $1.arrivals }) >= Self.minimumArrivals else { return nil }
        let grid = Self.grid
        let values = grid.map { logLikelihood(room: Double(counted + $0), at: ns, airTime: airTime) }
        var peaks: [Int] = []
        for i in grid.indices {
            let left = i > 0 ? values[i - 1] : -.infinity, right = i + 1 < grid.count ? values[i + 1] : -.infinity
            if values[i] >= left, values[i] >= right { peaks.append(i) }
        }
        let allowed = atMost.map { limit in peaks.filter { grid[$0] <= limit } } ?? peaks
        let candidates = allowed.isEmpty ? peaks : allowed
        guard let best = candidates.map({ values[$0] }).max() else { return nil }
        return candidates.filter { values[$0] > best - margin }.map { grid[$0] }.max()
    }

    /// The values of `U` tried: every one up to 20, then 4 % apart up to ``limit``.
    static let grid: [Int] = {
        var g = Array(0...20), x = 20.0
        while Int(x) < limit {
            x *= 1.04
            if Int(x) > g[g.count - 1] { g.append(Int(x)) }
        }
        return g
    }()
}
