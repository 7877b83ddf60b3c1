import ClickerTransport
import Synchronization

/// The air's own time as a `Clock`, so that what runs beside the air (a tally's timers) keeps the
/// air's time. On virtual air a sleeper is woken when `run(until:)` or `advance(until:)` reaches its
/// deadline (the air stops there to wake it; the woken task then runs while the air goes on, so a test
/// that wants it to act first drives the air in steps, as `advance(until:quantum:)` does). On
/// real-time air it sleeps the wall time the air's speed gives.
public struct AirTimeClock: Clock {
    /// The air's time since its start.
    public typealias Instant = ElapsedClock.Instant

    let air: SimulatedAir

    public var now: Instant { Instant(offset: .nanoseconds(Int64(clamping: air.now.nanoseconds))) }
    public var minimumResolution: Duration { .nanoseconds(1) }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await sleep(until: deadline, armed: {})
    }
}

extension AirTimeClock: ArmingClock {
    /// ``ArmingClock``: on virtual air `armed` runs once the air knows the sleeper, so that the air
    /// stops at its deadline; on real-time air just before the sleep.
    public func sleep(until deadline: Instant, armed: @escaping @Sendable () -> Void) async throws {
        if air.isVirtual {
            try await air.sleepers.sleep(until: deadline.offset.clampedNanoseconds, now: { air.now.nanoseconds }, armed: armed)
        } else {
            let wait = now.duration(to: deadline)
            if wait > .zero { armed(); try await Task.sleep(for: wait / air.realTimeSpeed) }
        }
    }
}

extension SimulatedAir {
    /// The air's time as a `Clock` (``AirTimeClock``).
    public var clock: AirTimeClock { AirTimeClock(air: self) }

    /// The number of tasks asleep on ``clock`` now.
    public var clockSleepers: Int { sleepers.count }
}

/// Tasks asleep on a virtual air's clock, woken as the air's time passes their deadlines.
final class AirSleepers: Sendable {
    private struct Sleeper {
        let deadline: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }
    private let state = Mutex((nextID: 0, sleepers: [Int: Sleeper]()))

    var count: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline of a sleeper, if any.
    var nextDeadline: UInt64? { state.withLock { $0.sleepers.values.map(\.deadline).min() } }

    func sleep(until deadline: UInt64, now: @Sendable () -> UInt64, armed: @Sendable () -> Void) async throws {
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let resumeNow = state.withLock { s -> Bool in
                    if deadline <= now() || Task.isCancelled { return true }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: c)
                    return false
                }
                if resumeNow { Task.isCancelled ? c.resume(throwing: CancellationError()) : c.resume() } else { armed() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Wakes every sleeper whose deadline is `now` or earlier.
    func wake(upTo now: UInt64) {
        let due = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            let ids = s.sleepers.filter { $0.value.deadline <= now }.map(\.key)
            return ids.compactMap { s.sleepers.removeValue(forKey: $0)?.continuation }
        }
        for c in due { c.resume() }
    }
}
