/// Seeded pseudo-random numbers, not cryptographic: the simulator's seeds, the voter's start
/// draws (`StaggeredStart`) and the tally's flood admission draws (`AdmissionRandom`).
///
/// SplitMix64 (Steele, Lea, Flood 2014): small and fast; also expands a 64-bit seed into another
/// generator's state.
public struct SplitMix64: RandomNumberGenerator, Sendable, Hashable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    @inlinable  // on the tally's ingest path (flood admission)
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
