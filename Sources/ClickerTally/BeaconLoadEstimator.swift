#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerWire

/// How many voters advertise at the STATE interval now, estimated from what the tally hears
/// (docs/PROTOCOL.md §11.11). Pure.
///
/// The tally cannot count voters it has not heard, and a scanner reports no collisions. But it hears
/// how often a voter it has just counted is heard *again* before its acknowledgement can have reached
/// it: such a voter still advertises at the STATE interval `I`, one event every `I+δ`, and each of its
/// events reaches the tally with the probability `p = exp(−G)` of ``BeaconAirModel`` (times the share
/// of time the tally listens), where `G` is the load on the channel. The repeats and the events they
/// were counted over (whole intervals since the ballot was counted: a voter just heard cannot be heard
/// again before its next event) give `p`, `p` gives `G`, and `G` gives the voters at the STATE
/// interval: `n = (G/(2a) − k/(K+δ)) · (I+δ)` for `k` acknowledged voters at the keep-alive. Heard or
/// not, every voter at the STATE interval is in `G`. Older evidence fades with a half-life of ``halfLife``.
public struct BeaconLoadEstimator: Sendable, Hashable {
    /// How fast old evidence fades.
    public var halfLife: Duration = .seconds(1)
    /// Repeats heard and the advertising events they were counted over (faded).
    public private(set) var repeats = 0.0
    public private(set) var events = 0.0
    /// Voters counted for the first time (arrivals) and the seconds observed (both faded).
    public private(set) var arrivals = 0.0
    public private(set) var span = 0.0
    var last: UInt64?

    public init() {}

    /// Adds evidence at `nanoseconds` (the radio's clock): `repeats` reports of ballots heard again
    /// over `events` advertising events of their voters while they were taken to be loud.
    public mutating func observe(repeats r: Int, events e: Double, at nanoseconds: UInt64) {
        fade(to: nanoseconds)
        repeats += Double(r)
        events += max(0, e)
    }

    /// Adds `n` voters counted for the first time, at `nanoseconds`.
    public mutating func observe(arrivals n: Int, at nanoseconds: UInt64) {
        fade(to: nanoseconds)
        arrivals += Double(max(0, n))
    }

    mutating func fade(to ns: UInt64) {
        if let l = last, ns > l {
            let h = BeaconAirModel.seconds(halfLife)
            let factor = exp2(-Double(ns - l) / 1e9 / h)
            repeats *= factor
            events *= factor
            arrivals *= factor
            // The faded length of the new stretch: the integral of 2^(−age/h) over it.
            span = span * factor + h / M_LN2 * (1 - factor)
        }
        if last.map({ ns > $0 }) ?? true { last = ns }
    }

    /// The share of the time the tally's scanner hears, its broadcast taking the rest (at least 5 %,
    /// so that evidence never divides by nothing).
    static func listening(_ broadcast: BeaconAirModel.Broadcast?, airTime: Duration) -> Double {
        broadcast.map { max(0.05, $0.listeningShare(airTime: airTime)) } ?? 1
    }

    /// The load `G` on the channel from the repeats, or nil below 10 events.
    public func load(broadcast: BeaconAirModel.Broadcast?, airTime: Duration = BeaconAirModel.ballotAirTime) -> Double? {
        guard events >= 10 else { return nil }
        // Half a repeat more than heard: no evidence of repeats is not proof of an infinite load.
        let p = (repeats + 0.5) / events / Self.listening(broadcast, airTime: airTime)
        return max(0, -log(min(1, p)))
    }

    /// The load from the arrivals: the voters at the STATE interval `interval` are those not yet counted
    /// (`U`) and `loudCounted` counted but not yet quiet. New ones are counted at
    /// `r = U/P · e^(−G) · listening` with `G = 2a·(U + loudCounted)/P` (P = interval + δ), so
    /// `G = y·e^G + c` with `y = 2a·r/listening`, `c = 2a·loudCounted/P`. That has two roots when it has
    /// any: an underloaded channel (`G < 1`) and an overloaded one; arrivals alone cannot tell them apart.
    /// Nil with less than ``minimumSpan`` observed or no root (the channel at or past its best).
    public func arrivalLoads(interval: Duration, loudCounted: Int, broadcast: BeaconAirModel.Broadcast?,
                             airTime: Duration = BeaconAirModel.ballotAirTime) -> (low: Double, high: Double)? {
        guard span >= BeaconAirModel.seconds(Self.minimumSpan) else { return nil }
        let a = BeaconAirModel.seconds(airTime), period = BeaconAirModel.seconds(interval + BeaconAirModel.meanDelay)
        let y = 2 * a * (arrivals / span) / Self.listening(broadcast, airTime: airTime)
        let c = 2 * a * Double(max(0, loudCounted)) / period
        let f = { (g: Double) in y * exp(g) + c - g }
        // f is convex with its minimum at g = −ln y; two roots exist when that minimum is below 0.
        guard y > 0 else { return (c, .infinity) }
        let bottom = -log(y)
        guard bottom > 0, f(bottom) < 0 else { return nil }
        func root(_ lo: Double, _ hi: Double) -> Double {
            var (lo, hi) = (lo, hi)
            for _ in 0..<60 {
                let mid = (lo + hi) / 2
                if (f(mid) > 0) == (f(lo) > 0) { lo = mid } else { hi = mid }
            }
            return (lo + hi) / 2
        }
        var top = bottom + 1
        while f(top) < 0 { top += top }
        return (root(min(c, bottom), bottom), root(bottom, top))
    }

    /// The least time observed before arrivals say anything.
    public static let minimumSpan: Duration = .milliseconds(500)

    /// Voters advertising at `interval` now, or nil when the evidence is too thin: fewer than 10
    /// events (10 repeats on a quiet channel).
    public func voters(interval: Duration, acknowledged k: Int, broadcast: BeaconAirModel.Broadcast?,
                       airTime: Duration = BeaconAirModel.ballotAirTime) -> Int? {
        let period = BeaconAirModel.seconds(interval + BeaconAirModel.meanDelay)
        guard let load = load(broadcast: broadcast, airTime: airTime) else { return nil }
        let a = BeaconAirModel.seconds(airTime)
        let keepAlive = BeaconAirModel.seconds(BeaconInterval.keepAlive + BeaconAirModel.meanDelay)
        let perSecond = load / (2 * a) - Double(max(0, k)) / keepAlive
        return Int(min(1e6, max(0, perSecond * period)).rounded())
    }
}
