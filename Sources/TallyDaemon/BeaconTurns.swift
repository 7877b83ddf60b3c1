import ClickerTransport
import Synchronization

/// Where the beacon loop (``PollController/runBeacon(_:gap:refresh:)``) stands, for itself and for a test:
/// it is woken by news (a change of phase, ballots counted) or by its clock, takes a turn (seals and hands
/// the radio a payload, or finds nothing due) and waits again. ``settled()`` returns once it waits with
/// nothing left to do at the poll clock's current instant, so that a test that moves the clock (a
/// `TestClock`, the virtual air) can let the beacon act at each instant before moving it on, without
/// sleeping on the wall clock (as a testing event loop runs what is due before its clock moves).
final class BeaconTurns: Sendable {
    private struct State {
        /// News came that the loop has not taken yet (several count as one, as one payload carries them all).
        var news = false
        /// The loop waiting for news, if it is.
        var listener: CheckedContinuation<Void, Never>?
        /// The loop waits on the clock (registered with it) until `until`; news wakes it when `wakeable`.
        var waiting: (until: PollClock.Instant, wakeable: Bool)?
        /// The loop ended (cancelled, or the beacon stays off): it will not act again.
        var ended = false
        var watchers: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    let clock: PollClock

    init(clock: PollClock) { self.clock = clock }

    /// News for the voters: the loop takes a turn now, or after the wait it is in (the gap between payloads).
    func wake() {
        let listener = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.news = true
            defer { s.listener = nil }
            return s.listener
        }
        listener?.resume()
    }

    /// Waits until `deadline` on the poll's clock, or (when `wakeable`) until news comes, whichever is
    /// first; news that came before counts. Returns whether news woke it. Cancellation ends the wait.
    func wait(until deadline: PollClock.Instant, wakeable: Bool) async -> Bool {
        if wakeable, state.withLock({ s in defer { s.news = false }; return s.news }) { return true }
        let clock = clock
        let woken = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                try? await clock.sleep(until: deadline, armed: { self.waiting(until: deadline, wakeable: wakeable) })
                return false
            }
            if wakeable { group.addTask { await self.news(); return true } }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        state.withLock { s in
            s.waiting = nil
            if woken { s.news = false }
        }
        return woken
    }

    /// A run starts the loop (again): ``settled()`` waits for it.
    func begin() {
        state.withLock { $0.ended = false }
    }

    /// The loop ended, or never starts in this run (no radio that broadcasts): it takes no more turns.
    func end() {
        let watchers = state.withLock { s in
            s.ended = true
            s.waiting = nil
            defer { s.watchers = [] }
            return s.watchers
        }
        for w in watchers { w.resume() }
    }

    /// Returns once the loop waits on the clock with nothing due at the clock's current instant (no news
    /// it would take now, its deadline ahead), or has ended. Moving the clock then wakes it at its deadline.
    func settled() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = clock.now
            let done = state.withLock { s in
                if Self.isSettled(s, now: now) { return true }
                s.watchers.append(c)
                return false
            }
            if done { c.resume() }
        }
    }

    private static func isSettled(_ s: State, now: PollClock.Instant) -> Bool {
        guard !s.ended else { return true }
        guard let w = s.waiting else { return false }
        return now < w.until && !(w.wakeable && s.news)
    }

    /// The sleep is registered with the clock: the loop waits. Wakes the watchers it settles.
    private func waiting(until deadline: PollClock.Instant, wakeable: Bool) {
        let now = clock.now
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.waiting = (deadline, wakeable)
            guard Self.isSettled(s, now: now) else { return [] }
            defer { s.watchers = [] }
            return s.watchers
        }
        for w in ready { w.resume() }
    }

    /// Suspends until news comes (at once if it came already), or the task is cancelled.
    private func news() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.news || Task.isCancelled { return true }
                    s.listener = c
                    return false
                }
                if now { c.resume() }
            }
        } onCancel: {
            state.withLock { s in defer { s.listener = nil }; return s.listener }?.resume()
        }
    }
}
