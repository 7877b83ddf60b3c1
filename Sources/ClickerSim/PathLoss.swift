// The radio of the simulated hall: path loss with distance and with the bodies in the way, seeded
// log-normal shadowing per link. Pure functions of the hall, the two ends and the seed.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ClickerTransport

/// Indoor path loss at 2.4 GHz: the IEEE 802.11 TGn channel models' breakpoint model (Erceg et al.,
/// "TGn Channel Models", IEEE 802.11-03/940r4, 2004), model D by default, plus a loss per body in the
/// straight path and log-normal shadowing drawn once per link.
///
/// Below the breakpoint distance `d_BP` the loss is free space (slope 2): `20·log10(4π·d·f/c)`, 40.2 dB
/// at 1 m for 2.44 GHz (the middle of the band); beyond it, `L(d_BP) + 35·log10(d/d_BP)`.
/// Shadowing: σ = 3 dB within `d_BP`, 5 dB beyond (model D). Model D (d_BP = 10 m) is TGn's typical
/// office without line of sight; model E (d_BP = 20 m, σ 3/6 dB) its large open space and office. A
/// full hall is open but has no clear line of sight between most desks: D (docs/DESIGN.md says what
/// E would change).
public struct IndoorPathLoss: Sendable, Hashable {
    public var frequency: Double
    public var breakpoint: Double
    public var slopeBeyondBreakpoint: Double
    public var shadowingWithin: Double
    public var shadowingBeyond: Double
    /// Loss of one seated person in the straight path, dB.
    public var perBody: Double
    /// Most the bodies in the way take together, dB: past a few rows of people the wave that goes over
    /// their heads and off the ceiling carries more than the one through them, so the loss stops growing
    /// with their number.
    public var bodyLossLimit: Double
    /// Transmit power of every radio in the hall (voters' boards and receivers), dBm.
    public var transmitPower: Double

    public init(frequency: Double = 2.44e9, breakpoint: Double = 10, slopeBeyondBreakpoint: Double = 3.5,
                shadowingWithin: Double = 3, shadowingBeyond: Double = 5, perBody: Double = 4,
                bodyLossLimit: Double = 25, transmitPower: Double = 0) {
        self.frequency = frequency
        self.breakpoint = breakpoint
        self.slopeBeyondBreakpoint = slopeBeyondBreakpoint
        self.shadowingWithin = shadowingWithin
        self.shadowingBeyond = shadowingBeyond
        self.perBody = perBody
        self.bodyLossLimit = bodyLossLimit
        self.transmitPower = transmitPower
    }

    /// Free-space loss at `d` metres (at least 1 m: nearer is the antennas' near field).
    public func freeSpace(_ d: Double) -> Double {
        20 * log10(4 * Double.pi * Swift.max(1, d) * frequency / 299_792_458)
    }

    /// Median loss (dB) over `d` metres with `bodies` people in the straight path.
    public func medianLoss(distance d: Double, bodies: Int) -> Double {
        let distanceLoss = d <= breakpoint ? freeSpace(d)
            : freeSpace(breakpoint) + 10 * slopeBeyondBreakpoint * log10(d / breakpoint)
        return distanceLoss + Swift.min(bodyLossLimit, perBody * Double(Swift.max(0, bodies)))
    }

    /// Standard deviation (dB) of the shadowing over `d` metres.
    public func shadowing(distance d: Double) -> Double {
        d <= breakpoint ? shadowingWithin : shadowingBeyond
    }
}

/// A hall on the simulated air: its seats, its receivers and its radio.
///
/// Every device of the air takes a seat when it is added: the seats in a seeded order (so that a room
/// smaller than the hall is spread over it), the device after the last seat starting again from the
/// first. Every seat holds a person, whether or not they vote: the bodies in a path are counted on a
/// full hall. Receiver `k` is the air's `k`th central (`SimulatedAir.centrals()`).
public struct LectureHall: Sendable, Hashable {
    public var geometry: HallGeometry
    public var receivers: [ReceiverPlacement]
    public var radio: IndoorPathLoss

    /// `receivers`: none is taken as one at the front.
    public init(geometry: HallGeometry, receivers: [ReceiverPlacement] = [.front], radio: IndoorPathLoss = IndoorPathLoss()) {
        self.geometry = geometry
        self.receivers = receivers.isEmpty ? [.front] : receivers
        self.radio = radio
    }

    /// One end of a link: a device in its seat, or receiver `k`.
    public enum End: Sendable, Hashable {
        case device(Int)
        case receiver(Int)

        var key: UInt64 {
            switch self {
            case .device(let i): UInt64(i) << 1
            case .receiver(let k): UInt64(k) << 1 | 1
            }
        }
    }

    /// The seats in the order devices take them, for `seed`.
    public func seatOrder(seed: UInt64) -> [Int] {
        var rng = SplitMix64(seed: seed ^ 0x5EA7_0F_4A11)
        return Array(0..<geometry.seats).shuffled(using: &rng)
    }

    /// Where `end` is, given the seat order.
    public func point(of end: End, seats: [Int]) -> HallPoint {
        switch end {
        case .receiver(let k): return geometry.point(of: receivers[k % receivers.count])
        case .device(let i):
            let s = seats.isEmpty ? 0 : seats[i % seats.count]
            return geometry.seat(row: s / geometry.seatsPerRow, seat: s % geometry.seatsPerRow)
        }
    }

    /// Received power (dBm) of a transmission from `a` at `b` (the link is symmetric): transmit power,
    /// less the median loss, less the link's shadowing, a normal deviate seeded by `seed` and the pair.
    public func receivedPower(_ a: End, _ b: End, seats: [Int], seed: UInt64) -> Double {
        let pa = point(of: a, seats: seats), pb = point(of: b, seats: seats)
        let d = pa.distance(to: pb)
        let loss = radio.medianLoss(distance: d, bodies: geometry.bodies(between: pa, and: pb))
        let (lo, hi) = a.key < b.key ? (a.key, b.key) : (b.key, a.key)
        return radio.transmitPower - loss - radio.shadowing(distance: d) * Self.normal(seed: seed, lo, hi)
    }

    /// A standard normal deviate that depends only on its arguments (Box–Muller on two hashed uniforms).
    static func normal(seed: UInt64, _ a: UInt64, _ b: UInt64) -> Double {
        var h = SplitMix64(seed: seed ^ (a &* 0x9E37_79B9_7F4A_7C15) ^ (b &* 0xC2B2_AE3D_27D4_EB4F))
        let u1 = (Double(h.next() >> 11) + 1) * 0x1.0p-53  // (0, 1]
        let u2 = Double(h.next() >> 11) * 0x1.0p-53
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }

    /// The share of the seats receiver `k` can hear at `sensitivity` (dBm), expected over the
    /// shadowing: the mean over the seats of P(received power ≥ sensitivity). A property of the model
    /// alone; collisions only take from it.
    public func coverage(receiver k: Int, sensitivity: Double) -> Double {
        coverage(receivers: [k], sensitivity: sensitivity)
    }

    /// The share of the seats at least one of `receivers` can hear, expected over the shadowing.
    public func coverage(receivers ks: [Int], sensitivity: Double) -> Double {
        var total = 0.0
        for row in 0..<geometry.rows {
            for s in 0..<geometry.seatsPerRow {
                let p = geometry.seat(row: row, seat: s)
                var missedByAll = 1.0
                for k in ks {
                    let r = geometry.point(of: receivers[k % receivers.count])
                    let d = p.distance(to: r)
                    let margin = radio.transmitPower - radio.medianLoss(distance: d, bodies: geometry.bodies(between: p, and: r)) - sensitivity
                    missedByAll *= 1 - Self.standardNormalCDF(margin / radio.shadowing(distance: d))
                }
                total += 1 - missedByAll
            }
        }
        return total / Double(Swift.max(1, geometry.seats))
    }

    static func standardNormalCDF(_ z: Double) -> Double { 0.5 * erfc(-z / 2.0.squareRoot()) }
}

extension AirConfiguration {
    /// An air for `hall`: receivers of −93 dBm sensitivity (BLE radios at 1 Mb/s are specified at −90 to
    /// −97 dBm), capture when a PDU is 6 dB above the sum of what overlaps it, no random loss.
    public static func hall(_ hall: LectureHall, seed: UInt64, clock: AirClock = .virtual,
                            firstEventPhase: FirstEventPhase = .randomWithinInterval,
                            broadcast: BroadcastConfiguration = BroadcastConfiguration()) -> AirConfiguration {
        AirConfiguration(seed: seed, clock: clock, captureThreshold: LectureHall.captureThreshold,
                         sensitivity: LectureHall.sensitivity, firstEventPhase: firstEventPhase, broadcast: broadcast,
                         hall: hall)
    }
}

extension LectureHall {
    /// The receivers' sensitivity in a hall's air (`AirConfiguration.hall`), dBm.
    public static let sensitivity = -93.0
    /// The capture threshold in a hall's air, dB.
    public static let captureThreshold = 6.0
}
