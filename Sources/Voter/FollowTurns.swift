import ClickerTransport
import Synchronization

/// Where a ``BeaconFollowService`` stands, for itself and for a test that moves its clock (the virtual
/// air's): the frames it took from its radio and the lines it read, the events it has not handled yet,
/// and its timers (ticks, a ballot's start, a retry of the radio). ``isSettled(heard:read:)`` holds once
/// it has handled all that reached it and every timer it set is registered with the clock and due after
/// the clock's current instant, so that a test can let every voter act at an instant of the air before
/// moving the air on, without sleeping on the wall clock (as the tally's beacon does with `BeaconTurns`).
/// Not covered: the wait before listening again after the radio's stream ended.
public final class FollowTurns: Sendable {
    private struct Timer {
        let deadline: ElapsedClock.Instant
        /// The sleep is registered with the clock: moving the clock past `deadline` wakes it there.
        var armed = false
    }

    private struct State {
        /// The clock the follower runs on, once it runs.
        var clock: ElapsedClock?
        /// The radio's listen stream is open.
        var listening = false
        /// The event loop runs: it takes the events counted below.
        var looping = false
        /// The follower stopped: it will not act again.
        var ended = false
        var heard = 0
        var read = 0
        /// Events posted and not handled yet.
        var queued = 0
        var nextTimer = 0
        /// Timers set and not yet fired or cancelled.
        var timers: [Int: Timer] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Whether the follower has taken `heard` frames from its radio and `read` lines, handled every event
    /// it took, and has every timer registered with its clock and due later than now; or has stopped.
    public func isSettled(heard delivered: Int, read sent: Int) -> Bool {
        state.withLock { s in
            if s.ended { return true }
            guard let clock = s.clock, s.listening, s.looping, s.queued == 0, s.heard >= delivered, s.read >= sent else {
                return false
            }
            let now = clock.now
            return s.timers.values.allSatisfy { $0.armed && now < $0.deadline }
        }
    }

    func begin(on clock: ElapsedClock) { state.withLock { $0.clock = clock } }
    func listening() { state.withLock { $0.listening = true } }
    func looping() { state.withLock { $0.looping = true } }
    func end() { state.withLock { $0.ended = true } }

    /// An event is posted to the loop.
    func posted(_ event: BeaconFollowService.Event) {
        state.withLock { s in
            s.queued += 1
            switch event {
            case .heard: s.heard += 1
            case .line: s.read += 1
            case .tick: break
            }
        }
    }

    /// The loop has handled an event.
    func handled() { state.withLock { $0.queued -= 1 } }

    /// A timer, set now for `deadline`: it counts from now, before its task runs (``wait(_:on:)``).
    func set(_ deadline: ElapsedClock.Instant) -> Int {
        state.withLock { s in
            defer { s.nextTimer += 1 }
            s.timers[s.nextTimer] = Timer(deadline: deadline)
            return s.nextTimer
        }
    }

    /// Sleeps on `clock` until `timer`'s deadline; returns false when cancelled first (the timer is then
    /// forgotten). Once it returns true the timer still counts until ``clear(_:)``: its task posts first.
    func wait(_ timer: Int, on clock: ElapsedClock) async -> Bool {
        guard let deadline = state.withLock({ $0.timers[timer]?.deadline }) else { return false }
        do {
            try await clock.sleep(until: deadline, armed: { self.state.withLock { $0.timers[timer]?.armed = true } })
            if !Task.isCancelled { return true }
        } catch {}
        clear(timer)
        return false
    }

    func clear(_ timer: Int) { _ = state.withLock { $0.timers.removeValue(forKey: timer) } }
}
