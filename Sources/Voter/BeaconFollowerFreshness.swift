import ClickerWire

/// Whether the STATE frames a follower took are contradicted by authentic STATE frames it refuses
/// (docs/PROTOCOL.md §11.10, "Listening again"; the counts and waits: docs/DESIGN.md, "Following the
/// beacon: this voter", "Listening again").
///
/// The replay guard (``BeaconReplayGuard``) takes the first authentic STATE frame a follower hears and
/// then only frames newer than it, at most its lead ahead of the follower's clock. An outsider who
/// recorded the tally's frames earlier in the lecture can replay them to a follower that starts late or
/// restarts: if a replayed frame is the first it takes, every later replayed frame is newer and on time,
/// and the tally's current frames, minutes ahead of them, are refused for as long as the replay runs.
///
/// A follower caught so keeps hearing authentic STATE frames that it refuses and that are not the one it
/// took (the tally's). So: when such frames go on for ``contradictedFor`` (at least
/// ``contradictionsBeforeRelistening`` of them, none more than ``contradictedFor`` apart) while no
/// acknowledgement confirms the question it follows, the follower says so (``relistens``), forgets the
/// frames it took, listens for ``relistenFor`` without following anything, and takes the STATE frame
/// with the highest counter it heard meanwhile: the tally's newest, which no replay of older frames
/// exceeds. Frames older than a poll's close do not count once the poll is closed (a replay of the
/// lecture after the end reopens nothing). It goes on while the contradiction does: a follower that
/// listened again and is still not acknowledged listens again ``contradictedFor`` later.
///
/// A holder of the join code who sends legacy frames far ahead is taken this way while it sends, as any
/// legacy frame it forges within the lead is; once it stops, the tally's frames contradict it and the
/// follower is back on the tally's question within ``contradictedFor`` + ``relistenFor``. An
/// acknowledgement of the follower's ballot (the tally heard it on the question followed) stops the
/// watch until its next ballot.
struct FreshnessWatch: Sendable {
    /// When refused, contradicting STATE frames began, the latest, and how many.
    var since: Duration?
    var last: Duration = .zero
    var count = 0
    /// While listening again: until when, and the STATE frame with the highest counter heard since.
    var relistenUntil: Duration?
    var newest: BeaconState?

    /// An acknowledgement confirmed the question followed: nothing contradicts it.
    mutating func confirmed() {
        since = nil
        count = 0
    }
}

extension BeaconFollower {
    /// How long refused STATE frames must go on contradicting the ones taken before the follower listens again.
    public static let contradictedFor: Duration = .seconds(3)
    /// How many of them, at least.
    public static let contradictionsBeforeRelistening = 5
    /// How long it then listens before it takes the newest STATE frame heard: longer than the longest a
    /// tally goes without sealing STATE (one a second).
    public static let relistenFor: Duration = .milliseconds(1500)

    /// An authentic STATE frame the replay guard refused, heard at `now`.
    mutating func refused(_ s: BeaconState, at now: Duration) {
        // Signed frames need none of this: the tally's current frame is newer than any replay (§11.7).
        guard admission.publicKey == nil, let taken = admission.replayGuard.newest, s.counter != taken, !acknowledged,
              !(phase == .closed && s.counter < taken) else { return }
        if let since = freshness.since, now - freshness.last <= Self.contradictedFor {
            freshness.last = now
            freshness.count += 1
            guard now - since >= Self.contradictedFor, freshness.count >= Self.contradictionsBeforeRelistening else { return }
            relistens += 1
            freshness = FreshnessWatch(relistenUntil: now + Self.relistenFor, newest: s)
        } else {
            freshness.since = now
            freshness.last = now
            freshness.count = 1
        }
    }

    /// While listening again: `s` is a candidate, not followed (true). Otherwise false.
    mutating func relistening(_ s: BeaconState, at now: Duration) -> Bool {
        guard freshness.relistenUntil != nil else { return false }
        if freshness.newest.map({ s.counter > $0.counter }) ?? true { freshness.newest = s }
        endRelistening(at: now)
        return true
    }

    /// Once ``relistenFor`` is over: the replay guard starts again from the newest STATE frame heard.
    mutating func endRelistening(at now: Duration) {
        guard let until = freshness.relistenUntil, now >= until, let s = freshness.newest else { return }
        freshness = FreshnessWatch()
        admission.restartReplayGuard(from: s, at: now)
        follow(s)
    }
}
