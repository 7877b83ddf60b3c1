/// A voter's defence against replayed and run-ahead STATE frames (docs/PROTOCOL.md §11.7).
///
/// Only STATE frames need one: an ACKS or TEXT frame states a fact that stays true for the whole
/// poll (this ballot was counted; this is the text whose digest the current STATE announces), so
/// hearing an older one again changes nothing, and a tally may rotate them freely.
///
/// Three rules, for authentic frames only (after ``BeaconCodec/open(_:key:)``):
/// - **Newer**: a STATE frame whose counter is not above the newest accepted is ignored (an earlier
///   question's STATE replayed, or the same advertisement heard again).
/// - **Not ahead of time**: the tally's counter runs in 10 ms ticks, so it cannot rise faster than
///   the voter's own clock. A frame more than ``lead`` ticks ahead of the newest accepted one plus
///   the ticks elapsed since it was accepted is ignored. Without this a holder of the join code
///   could send a STATE frame with counter `FFFFFFFF` once and make voters ignore the tally for the
///   rest of the poll; with it, a forger who stops sending is out-counted by the tally within `lead`.
/// - **A stale anchor gives way**: once no STATE frame has been accepted for ``staleAfter``, the time
///   rule is suspended until one is. The newest accepted frame may have been sealed long before the
///   voter heard it (an old frame replayed by anyone, as the first a voter hears): the tally's own
///   frames would then look ahead by that age for ever. A tally seals STATE at least once a second, so
///   a voter in its range that accepts nothing for that long holds a stale anchor or is out of range.
///
/// The first frame a voter hears has nothing to be compared with and is accepted. Pure value: keep
/// one per poll (join code), and give it the voter's monotonic clock.
public struct BeaconReplayGuard: Sendable, Hashable {
    /// The counter's unit.
    public static let tick: Duration = .milliseconds(10)
    /// How far (in ticks) a frame's counter may run ahead of the newest accepted one beyond the time
    /// elapsed since: 5 s, for clock drift and for frames sealed faster than one per tick.
    public static let lead: UInt32 = 500
    /// How long without an accepted STATE frame before the time rule gives way: twice the lead.
    public static let staleAfter: Duration = .seconds(10)

    /// The newest accepted STATE counter and when (on the voter's clock) it was accepted.
    public private(set) var newest: UInt32?
    private var acceptedAt: Duration = .zero

    public init() {}

    /// Whether `state`, heard at `now` (the voter's monotonic clock), is newer than every STATE frame
    /// accepted so far and not ahead of time; if so it becomes the newest.
    public mutating func admit(_ state: BeaconState, at now: Duration) -> Bool {
        if let n = newest {
            guard state.counter > n else { return false }
            let elapsed = max(.zero, now - acceptedAt)
            let ticks = elapsed / Self.tick   // Double; huge gaps saturate below
            let allowance = UInt64(min(ticks, Double(UInt32.max))) + UInt64(Self.lead)
            guard UInt64(state.counter - n) <= allowance || elapsed >= Self.staleAfter else { return false }
        }
        newest = state.counter
        acceptedAt = now
        return true
    }
}
