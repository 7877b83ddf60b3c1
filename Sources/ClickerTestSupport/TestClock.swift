import ClickerTransport
import Synchronization

/// A clock that moves only when a test says so: sleepers wait until ``advance(to:)`` passes their
/// deadline, and a test can wait (without time) until a given number of them are asleep.
public final class TestClock: Clock, ArmingClock, Sendable {
    /// Time since the clock was made, as every clock of the project reads it.
    public typealias Instant = ElapsedClock.Instant

    private struct Sleeper {
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID = 0
        var sleepers: [Int: Sleeper] = [:]
        var watchers: [(isReady: @Sendable ([Int: Sleeper]) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
        var woken = 0
    }

    private let state = Mutex(State())

    public init() {}

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await sleep(until: deadline, armed: {})
    }

    /// ``ArmingClock``: `armed` runs once the sleeper is registered; moving the clock past its deadline
    /// from then on wakes it.
    public func sleep(until deadline: Instant, armed: @escaping @Sendable () -> Void) async throws {
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let (resumeNow, watchers) = state.withLock { s -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if deadline <= s.now || Task.isCancelled { return (true, []) }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: c)
                    return (false, Self.satisfied(&s))
                }
                if resumeNow {
                    Task.isCancelled ? c.resume(throwing: CancellationError()) : c.resume()
                } else {
                    armed()
                }
                for w in watchers { w.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The number of tasks asleep on this clock now.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// The number of sleepers that moving the clock has woken so far (timer wake-ups).
    public var woken: Int { state.withLock { $0.woken } }

    /// The earliest deadline of a sleeper, if any.
    public var nextDeadline: Instant? { state.withLock { $0.sleepers.values.map(\.deadline).min() } }

    /// Suspends until at least `count` tasks are asleep on this clock.
    public func waitForSleepers(_ count: Int) async {
        await waitUntil { $0.count >= count }
    }

    /// Suspends until a task is asleep on this clock until exactly `deadline` (one timer among others,
    /// told apart by when it is due).
    public func waitForSleeper(until deadline: Instant) async {
        await waitUntil { $0.values.contains { $0.deadline == deadline } }
    }

    private func waitUntil(_ isReady: @escaping @Sendable ([Int: Sleeper]) -> Bool) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s in
                if isReady(s.sleepers) { return true }
                s.watchers.append((isReady, c))
                return false
            }
            if ready { c.resume() }
        }
    }

    /// Moves the clock to `instant` (never back) and wakes every sleeper whose deadline has come.
    public func advance(to instant: Instant) {
        let due = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            if s.now < instant { s.now = instant }
            let ids = s.sleepers.filter { $0.value.deadline <= s.now }.map(\.key)
            s.woken += ids.count
            return ids.compactMap { s.sleepers.removeValue(forKey: $0)?.continuation }
        }
        for c in due { c.resume() }
    }

    /// Moves the clock forward by `duration` and wakes every sleeper whose deadline has come.
    public func advance(by duration: Duration) {
        advance(to: now.advanced(by: duration))
    }

    private static func satisfied(_ s: inout State) -> [CheckedContinuation<Void, Never>] {
        let sleepers = s.sleepers
        let ready = s.watchers.filter { $0.isReady(sleepers) }.map(\.continuation)
        s.watchers.removeAll { $0.isReady(sleepers) }
        return ready
    }
}
