#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerWire

/// The interval a tally announces to voters not yet acknowledged (docs/DESIGN.md, "The STATE interval
/// this tally announces"; PROTOCOL.md §11.11 leaves it to the tally): the one
/// that lets its scanner hear them fastest, from the physics the simulator uses
/// (`ClickerSim.Physics`, `AirModel`). Pure.
///
/// The model. Every voter's advertising event puts one PDU of airtime `a` on each of the three
/// advertising channels; the tally's scanner listens on one channel at a time, so it sees exactly
/// one PDU per event of every voter, whichever channel it is on. Events of a voter advertising at
/// interval `I` come every `I + δ` on average (δ = 5 ms, the mean of the 0–10 ms advDelay). A PDU is
/// heard when no other PDU on its channel starts within `a` of its start (the ALOHA vulnerable window
/// `2a`), and when the tally is not transmitting its own beacon then: each broadcast event sends a PDU
/// of airtime `b` on each channel, during which the tally hears nothing, and a voter PDU that overlaps
/// any of them is lost (a window of `a + b` per broadcast PDU). With `u` voters at interval `I`
/// (not acknowledged) and `k` at the keep-alive `K` (acknowledged), the rate at which the tally hears
/// not-acknowledged voters is
///
///     S(I) = u/(I+δ) · exp(−2a · (u/(I+δ) + k/(K+δ))) · (1 − 3(a+b)/(B+δ))
///
/// with `B` the beacon's own interval. Neither the acknowledged voters' factor `exp(−2a·k/(K+δ))` nor
/// the beacon's depends on `I`: they lower the rate, not the best interval. S is largest where
/// `u/(I+δ) = 1/(2a)` (the not-acknowledged voters' own load at 1, the ALOHA optimum), and every
/// voter is heard soonest where S is largest (each not-acknowledged voter is heard at rate S/u). The
/// interval is the STATE code (a multiple of 10 ms, 20 ms…2.55 s) of the largest S; ties go to the
/// shorter interval.
public enum BeaconAirModel {
    /// Airtime of a voter's ballot PDU: a connectable ADV_IND with Flags (3) and the manufacturer
    /// data (4 + 22), plus 16 bytes of preamble, access address, header, AdvA and CRC, at 8 µs a byte.
    public static let ballotAirTime: Duration = .microseconds((16 + 3 + 4 + BallotFormat.advertisementLength) * 8)
    /// Airtime of a full legacy beacon PDU (non-connectable, no Flags, 27 bytes of data).
    public static let beaconAirTime: Duration = .microseconds((16 + 4 + BeaconFormat.legacyBudget) * 8)
    /// Mean advDelay.
    public static let meanDelay: Duration = .milliseconds(5)

    /// The tally's broadcast as the model sees it.
    public struct Broadcast: Sendable, Hashable {
        public var interval: Duration
        public var airTime: Duration
        public init(interval: Duration = .milliseconds(20), airTime: Duration = BeaconAirModel.beaconAirTime) {
            self.interval = interval
            self.airTime = airTime
        }

        /// The share of the time the tally hears voters' PDUs of airtime `a`: `1 − 3(a+b)/(B+δ)`
        /// (below 0 for a broadcast that leaves no gap).
        public func listeningShare(airTime a: Duration) -> Double {
            1 - 3 * BeaconAirModel.seconds(a + airTime) / BeaconAirModel.seconds(interval + BeaconAirModel.meanDelay)
        }
    }

    /// S(I): not-acknowledged voters heard per second (see the type's documentation).
    public static func heardPerSecond(unacknowledged u: Int, acknowledged k: Int, interval: Duration,
                                      broadcast: Broadcast? = Broadcast(), airTime: Duration = ballotAirTime) -> Double {
        guard u > 0 else { return 0 }
        let a = seconds(airTime), period = seconds(interval + meanDelay)
        let keepAlive = seconds(BeaconInterval.keepAlive + meanDelay)
        let load = Double(u) / period + Double(max(0, k)) / keepAlive
        let listening = broadcast.map { max(0, $0.listeningShare(airTime: airTime)) } ?? 1
        return Double(u) / period * exp(-2 * a * load) * listening
    }

    /// The channel's best throughput: voters heard per second at load 1 (`1 / (2a·e)`, about 511 a
    /// second for a ballot PDU), less what the tally's own broadcast takes when there is one.
    public static func bestThroughput(broadcast: Broadcast? = nil, airTime: Duration = ballotAirTime) -> Double {
        let a = seconds(airTime)
        let listening = broadcast.map { max(0, $0.listeningShare(airTime: airTime)) } ?? 1
        return listening / (2 * a * exp(1))
    }

    /// The STATE interval for `u` voters not yet acknowledged and `k` acknowledged (keep-alive): the
    /// code of the largest ``heardPerSecond(unacknowledged:acknowledged:interval:broadcast:airTime:)``.
    /// With nobody left to hear, the shortest (a voter that appears is heard at once).
    public static func stateInterval(unacknowledged u: Int, acknowledged k: Int,
                                     broadcast: Broadcast? = Broadcast(), airTime: Duration = ballotAirTime) -> BeaconInterval {
        var best = BeaconInterval(milliseconds: 20) ?? .stop
        guard u > 1 else { return best }
        var bestRate = -1.0
        for code in 2...255 {
            guard let i = BeaconInterval(code: UInt8(code)), let ms = i.milliseconds else { continue }
            let s = heardPerSecond(unacknowledged: u, acknowledged: k, interval: .milliseconds(ms), broadcast: broadcast,
                                   airTime: airTime)
            if s > bestRate * (1 + 1e-12) {
                bestRate = s
                best = i
            }
        }
        return best
    }

    static func seconds(_ d: Duration) -> Double {
        let (s, atto) = d.components
        return Double(s) + Double(atto) * 1e-18
    }
}
