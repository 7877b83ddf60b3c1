#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerWire

/// How many voters advertise at the STATE interval now, estimated from what the tally hears
/// (docs/DESIGN.md, "The STATE interval this tally announces"). Pure.
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
    var last: UInt64?

    public init() {}

    /// Adds evidence at `nanoseconds` (the radio's clock): `repeats` reports of ballots heard again
    /// over `events` advertising events of their voters while they were taken to be loud.
    public mutating func observe(repeats r: Int, events e: Double, at nanoseconds: UInt64) {
        fade(to: nanoseconds)
        repeats += Double(r)
        events += max(0, e)
    }

    mutating func fade(to ns: UInt64) {
        if let l = last, ns > l {
            let h = BeaconAirModel.seconds(halfLife)
            let factor = exp2(-Double(ns - l) / 1e9 / h)
            repeats *= factor
            events *= factor
        }
        if last.map({ ns > $0 }) ?? true { last = ns }
    }

    /// The share of the time the tally's scanner hears, its broadcast taking the rest (at least 5 %,
    /// so that evidence never divides by nothing).
    static func listening(_ broadcast: BeaconAirModel.Broadcast?, airTime: Duration) -> Double {
        broadcast.map { max(0.05, $0.listeningShare(airTime: airTime)) } ?? 1
    }

    /// The load `G` on the channel from the repeats, or nil below 10 events. `upper`: the load read
    /// with one standard deviation fewer repeats (√repeats), at least half a repeat: a load the true
    /// one is unlikely to exceed, when the repeats overstate it.
    public func load(broadcast: BeaconAirModel.Broadcast?, airTime: Duration = BeaconAirModel.ballotAirTime,
                     upper: Bool = false) -> Double? {
        guard events >= 10 else { return nil }
        // Half a repeat more than heard: no evidence of repeats is not proof of an infinite load.
        let heard = upper ? max(0.5, repeats - repeats.squareRoot()) : repeats + 0.5
        let p = heard / events / Self.listening(broadcast, airTime: airTime)
        return max(0, -log(min(1, p)))
    }

    /// Voters advertising at `interval` now, or nil when the evidence is too thin: fewer than 10
    /// events (10 repeats on a quiet channel).
    public func voters(interval: Duration, acknowledged k: Int, broadcast: BeaconAirModel.Broadcast?,
                       airTime: Duration = BeaconAirModel.ballotAirTime, upper: Bool = false) -> Int? {
        let period = BeaconAirModel.seconds(interval + BeaconAirModel.meanDelay)
        guard let load = load(broadcast: broadcast, airTime: airTime, upper: upper) else { return nil }
        let a = BeaconAirModel.seconds(airTime)
        let keepAlive = BeaconAirModel.seconds(BeaconInterval.keepAlive + BeaconAirModel.meanDelay)
        let perSecond = load / (2 * a) - Double(max(0, k)) / keepAlive
        return Int(min(1e6, max(0, perSecond * period)).rounded())
    }
}
