/// Bluetooth LE numbers the simulator uses, and the analytic model it is checked against.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerTransport

/// Legacy advertising on the LE 1M PHY.
public enum LegacyAdvertising {
    /// Most advertising data (AD) bytes a legacy advertising PDU carries.
    public static let maxAdvertisingDataLength = 31
    /// Preamble (1) + access address (4) + PDU header (2) + AdvA (6) + CRC (3).
    public static let overheadBytes = 16
    /// One byte takes 8 µs on the 1 Mb/s PHY.
    public static let nanosecondsPerByte: UInt64 = 8_000

    /// AD bytes needed for manufacturer data of `dataLength` bytes after the company ID:
    /// a Flags structure (3 bytes, present when connectable, as BlueZ and most stacks send it)
    /// plus the Manufacturer Specific Data structure (length, type, 2-byte company ID, data).
    public static func advertisingDataLength(manufacturerDataLength dataLength: Int, connectable: Bool) -> Int {
        (connectable ? 3 : 0) + 4 + dataLength
    }

    /// Air time of one legacy advertising PDU carrying `adLength` AD bytes (376 µs for 31 bytes).
    public static func airTime(advertisingDataLength adLength: Int) -> Duration {
        .nanoseconds(Int64(overheadBytes + adLength) * Int64(nanosecondsPerByte))
    }

    /// Air time of the PDU that carries `payload`.
    public static func airTime(of payload: AdvertisingPayload) -> Duration {
        airTime(advertisingDataLength: advertisingDataLength(
            manufacturerDataLength: payload.data.count, connectable: payload.connectable))
    }

    /// Shortest and longest advertising interval the specification allows.
    public static let intervalRange: ClosedRange<Duration> = .milliseconds(20) ... .milliseconds(10_240)
}

/// Extended advertising (BLE 5) as the central's broadcast uses it, on the LE 1M PHY: each event sends
/// a short ADV_EXT_IND on the primary channels, each pointing (AuxPtr) to one AUX_ADV_IND on a
/// secondary channel (0–36) that carries the data. Peripherals' legacy advertising never uses a
/// secondary channel, so only the short primary PDUs compete with the voters.
public enum ExtendedAdvertising {
    /// ADV_EXT_IND: preamble (1) + access address (4) + PDU header (2) + extended header length and
    /// AdvMode (1) + flags (1) + ADI (2) + AuxPtr (3) + CRC (3): 17 bytes, 136 µs.
    public static let indicationAirTime: Duration = .microseconds(136)
    /// AUX_ADV_IND before its AD: preamble, access address, PDU header, extended header length and
    /// flags, AdvA (6), ADI (2), CRC: 20 bytes.
    public static let auxiliaryOverheadBytes = 20
    /// T_MAFS: the AUX_ADV_IND starts at least 300 µs after the end of the last ADV_EXT_IND.
    public static let auxiliaryOffset: Duration = .microseconds(300)

    /// Air time of the AUX_ADV_IND carrying manufacturer data of `dataLength` bytes (2168 µs for 247).
    public static func auxiliaryAirTime(manufacturerDataLength dataLength: Int) -> Duration {
        .nanoseconds(Int64(auxiliaryOverheadBytes + LegacyAdvertising.advertisingDataLength(
            manufacturerDataLength: dataLength, connectable: false)) * Int64(LegacyAdvertising.nanosecondsPerByte))
    }
}

/// The slotted-ALOHA-like model of many advertisers and one scanner.
///
/// On the scanner's channel every advertiser sends one PDU of air time `a` per advertising
/// event; events come every `I` on average (interval + mean advDelay of 5 ms). A PDU is
/// heard clean when no other advertiser's PDU on that channel starts within `a` of it,
/// which for each other advertiser happens with probability `1 − 2a/I`.
public enum AnalyticModel {
    /// Probability that one PDU is heard without collision among `advertisers` advertisers:
    /// `(1 − 2a/I)^(N−1)`.
    public static func cleanProbability(advertisers n: Int, airTime a: Duration, meanEventInterval i: Duration) -> Double {
        let ratio = 2 * a.seconds / i.seconds
        guard n > 1 else { return 1 }
        return Swift.max(0, 1 - ratio).power(Double(n - 1))
    }

    /// The exponential approximation `e^(−2a(N−1)/I)`.
    public static func cleanProbabilityExponential(advertisers n: Int, airTime a: Duration, meanEventInterval i: Duration) -> Double {
        exp(-2 * a.seconds * Double(Swift.max(0, n - 1)) / i.seconds)
    }

    /// Fraction of advertisers heard at least once by `t`, for a scanner always listening:
    /// `1 − (1 − p)^(t/I)`.
    public static func fractionHeard(after t: Duration, cleanProbability p: Double, meanEventInterval i: Duration) -> Double {
        1 - (1 - p).power(t.seconds / i.seconds)
    }

    /// Fraction heard by `t` when each advertiser's first event comes at a uniformly random phase
    /// within its first interval (as `FirstEventPhase.randomWithinInterval`): with `x = t/I`,
    /// `K` events have happened where `K = ⌊x⌋ + 1` with probability `x − ⌊x⌋`, else `⌊x⌋`, and
    /// the fraction heard is `1 − E[(1−p)^K]`.
    public static func fractionHeardRandomPhase(after t: Duration, cleanProbability p: Double,
                                                meanEventInterval i: Duration) -> Double {
        let x = t.seconds / i.seconds
        guard x > 0, x.isFinite else { return x.isFinite ? 0 : 1 }
        let n = x.rounded(.down), frac = x - n, q = 1 - p
        return 1 - (frac * q.power(n + 1) + (1 - frac) * q.power(n))
    }

    /// Time until a fraction `f` of the advertisers has been heard, first events at random phases
    /// (nil when never or astronomically long). For the median time until all `N` are heard, ask
    /// for `f = 0.5^(1/N)`: all are heard by `t` with probability `fractionHeard(t)^N`.
    public static func timeToHearRandomPhase(fraction f: Double, cleanProbability p: Double,
                                             meanEventInterval i: Duration) -> Duration? {
        guard p > 0, f < 1, f >= 0, let simple = timeToHear(fraction: f, cleanProbability: p, meanEventInterval: i)
        else { return nil }
        var lo = 0.0, hi = simple.seconds + 2 * i.seconds
        guard hi < 9.0e9 else { return nil }
        for _ in 0..<100 {
            let mid = (lo + hi) / 2
            if fractionHeardRandomPhase(after: .nanoseconds(Int64(mid * 1e9)), cleanProbability: p, meanEventInterval: i) < f {
                lo = mid
            } else {
                hi = mid
            }
        }
        return .nanoseconds(Int64(hi * 1e9))
    }

    /// Time until a fraction `f` of the advertisers has been heard (nil when `p` is 0, `f` ≥ 1, or it is astronomically long).
    public static func timeToHear(fraction f: Double, cleanProbability p: Double, meanEventInterval i: Duration) -> Duration? {
        guard p > 0, f < 1, f >= 0 else { return nil }
        if p >= 1 { return .zero }
        let ns = log(1 - f) / log(1 - p) * Double(i.nanoseconds)
        guard ns.isFinite, ns < 9.0e18 else { return nil }  // beyond ~285 years: never, for our purposes
        return .nanoseconds(Int64(ns))
    }
}

extension Double {
    func power(_ e: Double) -> Double { pow(self, e) }
}

extension Duration {
    /// This duration in (fractional) seconds.
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }

    /// This duration in whole nanoseconds (negative durations give negative values), saturating.
    var nanoseconds: Int64 {
        let (s, atto) = components
        let (m, o1) = s.multipliedReportingOverflow(by: 1_000_000_000)
        let (r, o2) = m.addingReportingOverflow(atto / 1_000_000_000)
        return o1 || o2 ? (s < 0 ? .min : .max) : r
    }

    /// Non-negative nanoseconds, clamping negative durations to zero.
    var clampedNanoseconds: UInt64 { UInt64(Swift.max(0, nanoseconds)) }
}

extension UInt64 {
    /// Saturating addition, for instants computed from caller-supplied durations.
    func adding(_ d: UInt64) -> UInt64 {
        let (r, o) = addingReportingOverflow(d)
        return o ? .max : r
    }
}

/// A usable RSSI: finite and within what a report can carry.
func sanitizedRSSI(_ x: Double) -> Double {
    x.isFinite ? Swift.min(20, Swift.max(-127, x)) : -127
}
