/// A voter's defence against replayed and run-ahead STATE frames (docs/PROTOCOL.md §11.7).
///
/// Only STATE frames need one: an ACKS or TEXT frame states a fact that stays true for the whole
/// poll (this ballot was counted; this is the text whose digest the current STATE announces), so
/// hearing an older one again changes nothing, and a tally may rotate them freely.
///
/// **Signed** STATE frames (only the tally makes them): a frame is taken iff its counter is above the
/// last signed one taken. No time rule: the tally's counter never goes back, so a replay of its old
/// frames holds a voter only until it hears one current frame.
///
/// **Tagged** STATE frames (any holder of the join code can make them):
/// - **Newer**: a frame whose counter is not above the newest taken is ignored.
/// - **Not ahead of the anchor**: the first frame taken is the *anchor* (counter c0, heard at t0). A
///   frame with counter c heard at t′ is taken only if c − c0 ≤ ⌊(t′ − t0) / 10 ms⌋ + ``lead``. The
///   bound is measured from the anchor, never from the last frame taken, so it does not grow with
///   the number of frames (no ratchet): however many frames a forger sends, the newest it can make a
///   voter take is ``lead`` ahead of the anchor's clock.
/// - **Contradicted, re-anchored**: when for ``contradictedAfter`` the voter takes nothing while it
///   hears authentic STATE frames whose counter is below the newest taken (the tally's own, after a
///   forger pushed the newest ahead or an old frame was the anchor), it takes the next such frame as
///   its new anchor.
/// - **A stale anchor gives way**: when nothing was taken for ``staleAfter``, a newer frame is taken
///   and becomes the anchor whatever its counter (an old frame heard first would otherwise make the
///   tally's frames look ahead of time for ever).
///
/// Pure value: keep one per poll (join code), and give it the voter's monotonic clock.
public struct BeaconReplayGuard: Sendable, Hashable {
    /// The counter's unit.
    public static let tick: Duration = .milliseconds(10)
    /// How far (in ticks) a tagged frame's counter may run ahead of the anchor's plus the time elapsed
    /// since: 5 s, for clock drift and for frames sealed faster than one per tick.
    public static let lead: UInt32 = 500
    /// How long without taking a STATE frame before the time rule gives way: twice the lead.
    public static let staleAfter: Duration = .seconds(10)
    /// How long the voter hears only older authentic frames, taking none, before it re-anchors.
    public static let contradictedAfter: Duration = .seconds(2)

    /// The newest STATE counter taken.
    public private(set) var newest: UInt32?
    /// The newest signed STATE counter taken.
    public private(set) var newestSigned: UInt32?
    private var anchor: (counter: UInt32, at: Duration)?
    private var acceptedAt: Duration = .zero
    /// When the voter began hearing only older frames (nil: it took one since).
    private var contradictedSince: Duration?

    public init() {}

    public static func == (a: Self, b: Self) -> Bool {
        a.newest == b.newest && a.newestSigned == b.newestSigned && a.anchor?.counter == b.anchor?.counter
            && a.anchor?.at == b.anchor?.at && a.acceptedAt == b.acceptedAt && a.contradictedSince == b.contradictedSince
    }

    public func hash(into h: inout Hasher) {
        h.combine(newest)
        h.combine(newestSigned)
        h.combine(anchor?.counter)
    }

    /// Whether a signed STATE `state` is newer than every signed one taken; if so it is the newest.
    public mutating func admitSigned(_ state: BeaconState, at now: Duration) -> Bool {
        if let n = newestSigned, state.counter <= n { return false }
        newestSigned = state.counter
        newest = state.counter
        acceptedAt = now
        return true
    }

    /// Whether a tagged STATE `state`, heard at `now` (the voter's monotonic clock), is newer than every
    /// STATE taken so far and not ahead of the anchor; if so it becomes the newest.
    public mutating func admit(_ state: BeaconState, at now: Duration) -> Bool {
        let c = state.counter
        guard let n = newest, let a = anchor else { return take(c, at: now, anchor: true) }
        if c <= n {
            // Older than the newest taken: the tally contradicting a forged or stale newest?
            guard c < n else { return false }
            let since = contradictedSince ?? now
            contradictedSince = since
            guard now - since >= Self.contradictedAfter else { return false }
            return take(c, at: now, anchor: true)
        }
        if now - acceptedAt >= Self.staleAfter { return take(c, at: now, anchor: true) }
        let elapsed = max(.zero, now - a.at)
        let ticks = elapsed / Self.tick   // Double; huge gaps saturate below
        let allowance = UInt64(min(ticks, Double(UInt32.max))) + UInt64(Self.lead)
        // c > newest ≥ the anchor's counter, so the difference does not wrap.
        guard UInt64(c - a.counter) <= allowance else { return false }
        return take(c, at: now, anchor: false)
    }

    private mutating func take(_ c: UInt32, at now: Duration, anchor reset: Bool) -> Bool {
        if reset { anchor = (c, now) }
        newest = c
        acceptedAt = now
        contradictedSince = nil
        return true
    }
}
