import ClickerTransport

// The ingest pipeline's defences against a flood of forgeries (IngestPipeline, Ingest.swift): its limits,
// what it tells the view, and the rate, draws and buckets behind the limits.

/// Limits that keep a flood of forged ballots from costing unbounded verification work.
public struct FloodPolicy: Sendable, Hashable {
    /// Tag verifications one address may trigger in a burst, and per second after that.
    public var perAddressBurst: Double = 16
    public var perAddressPerSecond: Double = 8
    /// Tag verifications per second, shared by all addresses that never sent a ballot that was
    /// counted. Addresses that did (honest voters) are not held to it. When more are offered, each request is
    /// admitted at random with probability `untrustedPerSecond / offered rate`, so a voter who starts
    /// late into a flood gets through as often as one who started before it; the bucket
    /// (`untrustedBurst`) stays as a hard cap.
    public var untrustedPerSecond: Double = 50_000
    public var untrustedBurst: Double = 50_000
    /// The window, on the report clock, over which the offered rate of untrusted requests is counted.
    public var admissionWindow: Duration = .milliseconds(100)
    /// Seed of the admission draws; nil: seeded from the system's random source. Set only in tests.
    public var admissionSeed: UInt64?
    /// Suspicious rejections (bad tag, unknown voter, malformed answer, rate-limited) within one
    /// second that raise the flood alert, and how long the alert stays up after the last such second.
    public var alertThreshold: Int = 50
    public var alertHold: Duration = .seconds(10)
    /// Entries in the caches of known-good and known-bad payloads; a full cache is emptied (its
    /// capacity stays allocated). The bad cache only spares the verification of a replayed
    /// forgery, which the per-address limit bounds anyway, so it is kept small: a flood leaves
    /// about 50 kB behind, not a megabyte.
    public var goodCacheLimit: Int = 1 << 16
    public var badCacheLimit: Int = 1 << 10
    /// Addresses with a rate-limit state; when exceeded, the state is forgotten.
    public var addressLimit: Int = 1 << 16

    public init() {}
}

/// Whether the tally is being flooded with forgeries, for the view to show.
public struct FloodStatus: Sendable, Hashable {
    /// True while suspicious rejections exceed the threshold (and for `alertHold` after).
    public var alert: Bool
    /// Suspicious rejections in the current one-second window.
    public var suspiciousThisSecond: Int
    /// Suspicious rejections since the poll started.
    public var suspiciousTotal: Int
    /// When the alert was last raised.
    public var lastAlert: RadioInstant?
}

/// Untrusted verification requests per window on the report clock: the larger of the previous
/// window's count and the current one's so far, so a sudden flood lowers the admission probability
/// within its first window.
struct OfferedRate: Sendable, Hashable {
    var windowStart: UInt64 = 0
    var current = 0
    var previous = 0

    /// Counts one request at `ns`; returns the offered count per window to admit against.
    @inline(__always)
    mutating func count(at ns: UInt64, window: UInt64) -> Int {
        if ns >= windowStart &+ window {
            let elapsed = (ns - windowStart) / window
            previous = elapsed == 1 ? current : 0
            current = 0
            windowStart += elapsed * window
        }
        current += 1
        return max(previous, current)
    }
}

/// The admission draws: SplitMix64, seeded once per pipeline. Not cryptographic; a flooder cannot
/// see which of its forgeries were verified, so it cannot learn the stream.
struct AdmissionRandom: Sendable, Hashable {
    var generator: SplitMix64

    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    /// True with probability `p` (0...1).
    @inline(__always)
    mutating func chance(_ p: Double) -> Bool {
        Double(generator.next() >> 11) * 0x1p-53 < p
    }
}

/// A token bucket on the report clock.
struct TokenBucket: Sendable, Hashable {
    var tokens: Double
    var last: UInt64

    @inline(__always)
    mutating func refill(at ns: UInt64, rate: Double, burst: Double) {
        if ns > last {
            tokens = min(burst, tokens + Double(ns - last) * rate / 1e9)
            last = ns
        }
    }
}
