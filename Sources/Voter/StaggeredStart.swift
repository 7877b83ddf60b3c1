import ClickerTransport

/// When what a ``BeaconFollower`` asks to advertise reaches the radio (docs/PROTOCOL.md §11.10,
/// "When it starts"). Pure: the caller passes each wish and its monotonic clock, puts ``onAir`` on the
/// radio, and comes back at ``startAt``.
///
/// Every voter hears the STATE frame that opens a question, or announces a new interval, within a
/// few milliseconds of the others, and a controller sends the first event of an advertisement as soon
/// as it is enabled. Voters that started on the same frame would send their first events together and
/// keep colliding for many intervals, since advDelay moves two of them apart by at most 10 ms an
/// event (TimeToCollect `--beacon --synchronized`, voters that start at once: 300 voters 41.7 % counted
/// after 30 s with extended frames).
/// So a ballot goes on the air, or changes interval, at a uniformly random moment within its
/// interval, and the radio is silent until then. Silence, and a new ballot at the interval already
/// on the air (the student changed the answer: nobody else did at that moment), take effect at once.
public struct StaggeredStart: Sendable {
    /// What the radio should carry now.
    public private(set) var onAir: BeaconFollower.Advertising = .silent
    /// When the ballot waiting to start goes on the air (nil: none waits).
    public private(set) var startAt: Duration?
    private var waitingInterval: Duration?
    private var random: SplitMix64?

    /// Draws each delay from a generator seeded with `seed`.
    public init(seed: UInt64) {
        random = SplitMix64(seed: seed)
    }

    private init() {}

    /// Draws the delays from a generator seeded by the system's: what a voter runs.
    public static func random() -> StaggeredStart { StaggeredStart(seed: UInt64.random(in: .min ... .max)) }

    /// Never waits: for a caller whose radio already starts at a random moment, or a test that is not
    /// about the start.
    public static let immediate = StaggeredStart()

    /// What the radio should carry at `now` when the follower asks for `wish`.
    @discardableResult
    public mutating func update(_ wish: BeaconFollower.Advertising, at now: Duration) -> BeaconFollower.Advertising {
        guard case .ballot(_, _, _, let interval) = wish else {
            onAir = .silent
            startAt = nil
            waitingInterval = nil
            return onAir
        }
        if case .ballot(_, _, _, let current) = onAir, current == interval {
            onAir = wish
            return onAir
        }
        if startAt == nil || waitingInterval != interval {
            startAt = now + delay(below: interval)
            waitingInterval = interval
        }
        if let at = startAt, now >= at {
            onAir = wish
            startAt = nil
            waitingInterval = nil
        } else {
            onAir = .silent
        }
        return onAir
    }

    /// A uniformly random delay in [0, `interval`).
    private mutating func delay(below interval: Duration) -> Duration {
        let (s, atto) = interval.components
        let ns = Int64(clamping: s) &* 1_000_000_000 &+ atto / 1_000_000_000
        guard var r = random, ns > 0 else { return .zero }
        defer { random = r }
        return .nanoseconds(Int64.random(in: 0..<ns, using: &r))
    }
}
