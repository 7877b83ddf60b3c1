import ClickerLedger
import ClickerTransport
import Dispatch
import OSThreads
import Synchronization

/// Writes the tally's beacon to the ledger for the poll's receivers (``BallotLedger/publishBeacon(poll:payload:)``),
/// on a thread of its own with a connection of its own (libpq blocks), so that a ledger that does not
/// answer never holds up the tally's beacon or its ballots. Only the newest payload matters: one
/// handed over while another is written replaces any that waits. When the ledger fails, the
/// connection is dropped and a new one tried with a later payload, at most once per `retryInterval`.
final class BeaconPublisher: Sendable {
    struct State {
        /// The payload to write next: `.some(nil)` says the tally stopped broadcasting.
        var next: BroadcastPayload??
        var stopping = false
        /// Payloads the ledger took, and why the last write failed (nil once one succeeds).
        var published = 0
        var lastError: String?
    }

    /// What the caller and the thread share.
    final class Shared: Sendable {
        let state = Mutex(State())
        let wake = DispatchSemaphore(value: 0)
    }

    private let shared = Shared()
    private let thread: ThreadHandle

    /// Starts the writer of `poll`'s beacon; `connect` opens the ledger (the instructor's role). Nil
    /// when the system refuses a thread.
    init?(poll: Int64, retryInterval: Duration = .seconds(1), connect: @escaping @Sendable () throws -> BallotLedger) {
        let shared = self.shared, wake = shared.wake
        let (seconds, atto) = retryInterval.components
        let retry = DispatchTimeInterval.nanoseconds(Int(clamping: max(0, seconds) * 1_000_000_000 + max(0, atto / 1_000_000_000)))
        guard let thread = OSThread.start(name: "clicker-beacon-out", {
            var ledger: BallotLedger?
            var retryAt: DispatchTime?
            while true {
                // Until a payload comes, or until a failed write may be tried again.
                if let due = retryAt, due > .now() { _ = wake.wait(timeout: due) } else { wake.wait() }
                let (next, stopping) = shared.state.withLock { ($0.next, $0.stopping) }
                let backingOff = retryAt.map { $0 > .now() } ?? false
                if let payload = next, !backingOff || stopping {
                    // Taken unless a newer one replaced it meanwhile.
                    shared.state.withLock { if $0.next == next { $0.next = nil } }
                    do {
                        let open = try ledger ?? connect()
                        ledger = open
                        try open.publishBeacon(poll: poll, payload: payload)
                        retryAt = nil
                        shared.state.withLock { $0.published += 1; $0.lastError = nil }
                    } catch {
                        ledger = nil
                        retryAt = .now() + retry
                        shared.state.withLock { $0.lastError = "\(error)" }
                    }
                }
                if stopping { break }
            }
        }) else { return nil }
        self.thread = thread
    }

    /// Hands `payload` (nil: the tally stopped broadcasting) to the writer; returns at once.
    func submit(_ payload: BroadcastPayload?) {
        shared.state.withLock { $0.next = .some(payload) }
        shared.wake.signal()
    }

    /// Payloads the ledger took, and why the last write failed.
    var status: (published: Int, lastError: String?) { shared.state.withLock { ($0.published, $0.lastError) } }

    /// Writes what waits (one try), then ends the thread; returns once it has ended.
    func finish() async {
        shared.state.withLock { $0.stopping = true }
        shared.wake.signal()
        await thread.finished()
    }

    deinit {
        shared.state.withLock { $0.stopping = true }
        shared.wake.signal()
    }
}
