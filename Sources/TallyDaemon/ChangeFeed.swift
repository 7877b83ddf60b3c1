import AsyncAlgorithms
import Synchronization

/// Tells subscribers that something they show has changed (no payload: they read the new state).
/// Each subscriber holds at most one pending notice, so a burst of changes wakes it once.
public final class ChangeFeed: Sendable {
    private struct Subscribers {
        var next = 0
        var all: [Int: AsyncStream<Void>.Continuation] = [:]
    }

    private let subscribers = Mutex(Subscribers())

    public init() {}

    /// A stream that yields after each change (coalesced), until the consumer stops iterating.
    public func subscribe() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = subscribers.withLock { s in
            s.next += 1
            s.all[s.next] = continuation
            return s.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.all.removeValue(forKey: id) }
        }
        return stream
    }

    /// Notifies every subscriber. Yields outside the lock: a yield takes the consuming task's status
    /// lock, and cancelling that task runs `onTermination` under its status lock, which takes this
    /// lock; yielding under it deadlocked a run whose view was cancelled while the poll signalled.
    public func signal() {
        let all = subscribers.withLock { Array($0.all.values) }
        for c in all { c.yield() }
    }

    public var subscriberCount: Int { subscribers.withLock { $0.all.count } }
}

extension ChangeFeed {
    /// `coalescedUpdates` of this feed.
    public func updates<C: Clock>(every interval: Duration, settle: Duration?, clock: C) -> AsyncStream<Void>
    where C.Duration == Duration {
        coalescedUpdates(of: { self.subscribe() }, every: interval, settle: settle, clock: clock)
    }
}

/// Wake-ups for a consumer of change notices (each call of `subscribe` is a fresh subscription): at
/// most one per `interval` while changes arrive (`_throttle` passes the first of each interval), one
/// `interval` after the last change of a burst (`debounce`: throttling alone would hold the last
/// change until another came), and, with `settle`, one more that long after the last change, when
/// the count publisher's next epoch is due at the latest (an epoch needs its interval since the last
/// one, which came before the last change).
public func coalescedUpdates<C: Clock>(of subscribe: () -> AsyncStream<Void>, every interval: Duration,
                                       settle: Duration?, clock: C) -> AsyncStream<Void>
where C.Duration == Duration {
    let throttled = subscribe()._throttle(for: interval, clock: clock, latest: true)
    let trailing = subscribe().debounce(for: interval, clock: clock)
    let settled = settle.map { subscribe().debounce(for: $0, clock: clock) }
    let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    let task = Task {
        if let settled {
            for await _ in merge(throttled, trailing, settled) { continuation.yield() }
        } else {
            for await _ in merge(throttled, trailing) { continuation.yield() }
        }
        continuation.finish()
    }
    continuation.onTermination = { _ in task.cancel() }
    return stream
}
