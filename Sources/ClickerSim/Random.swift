/// Seeded pseudo-random generators for the simulator.
///
/// Everything random in the simulated air comes from one of these, seeded from
/// `AirConfiguration.seed`, so that a run is identical for the same seed (SplitMix64 is in
/// ClickerTransport, which the voter's start draws share).

import ClickerTransport

/// xoshiro256** (Blackman, Vigna 2018): the simulator's generator.
public struct Xoshiro256StarStar: RandomNumberGenerator, Sendable {
    private var s0: UInt64, s1: UInt64, s2: UInt64, s3: UInt64

    /// Seeds the four state words from SplitMix64, as the authors recommend.
    public init(seed: UInt64) {
        var sm = SplitMix64(seed: seed)
        s0 = sm.next(); s1 = sm.next(); s2 = sm.next(); s3 = sm.next()
        if s0 | s1 | s2 | s3 == 0 { s0 = 1 }  // the all-zero state is the one fixed point
    }

    public mutating func next() -> UInt64 {
        let result = rotl(s1 &* 5, 7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotl(s3, 45)
        return result
    }

    private func rotl(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }
}

extension RandomNumberGenerator {
    /// A uniform double in [0, 1) with 53 random bits.
    mutating func unitInterval() -> Double { Double(next() >> 11) * 0x1.0p-53 }

    /// A uniform integer in [0, bound] (inclusive); 0 when `bound` is 0.
    mutating func upTo(_ bound: UInt64) -> UInt64 {
        bound == 0 ? 0 : (bound == .max ? next() : next(upperBound: bound + 1))
    }
}
