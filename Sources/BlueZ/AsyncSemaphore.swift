import ClickerTransport
import Synchronization

/// A counting semaphore for tasks (the GATT reader's connection slots).
///
/// - Waiters are served first come, first served, and a free permit never jumps the queue.
/// - ``release()`` hands its permit to the first waiter synchronously, under the same lock that
///   queued it: no task hop in between, so a permit is never held by nobody.
/// - A waiter cancelled (or timed out) while queued leaves the queue and consumes no permit. If a
///   release reached it first, it owns the permit and returns normally; its caller releases it.
final class AsyncSemaphore: Sendable {
    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Bool, any Error>
    }

    private struct State {
        var permits: Int
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
    }

    private enum Entry {
        case acquired, cancelled, expired, queued
    }

    private let state: Mutex<State>

    init(permits: Int) {
        state = Mutex(State(permits: max(0, permits)))
    }

    /// Permits free now (for tests and statistics).
    var availablePermits: Int { state.withLock { $0.permits } }

    /// Tasks waiting now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Waits for a permit until `deadline` on `clock` (nil: no deadline): true when it got one, false
    /// when the deadline passed first. Throws `CancellationError` when the task is cancelled while
    /// waiting (then no permit is taken).
    func acquire(before deadline: RadioInstant?, on clock: RadioClock) async throws -> Bool {
        let id: UInt64? = state.withLock { s in
            if s.permits > 0 && s.waiters.isEmpty {
                s.permits -= 1
                return nil
            }
            s.nextID &+= 1
            return s.nextID
        }
        guard let id else { return true }
        // The deadline is the only clock: one timer per queued waiter, gone when the wait ends.
        let timer = deadline.map { deadline in Task { [weak self] in
            while clock.now < deadline {
                do { try await clock.sleep(until: deadline) } catch { return }
            }
            self?.remove(id, with: .success(false))
        } }
        defer { timer?.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
                let entry: Entry = state.withLock { s in
                    if Task.isCancelled { return .cancelled }
                    if let deadline, clock.now >= deadline { return .expired }
                    if s.permits > 0 && s.waiters.isEmpty {
                        s.permits -= 1
                        return .acquired
                    }
                    s.waiters.append(Waiter(id: id, continuation: continuation))
                    return .queued
                }
                switch entry {
                case .acquired: continuation.resume(returning: true)
                case .expired: continuation.resume(returning: false)
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .queued: break
                }
            }
        } onCancel: {
            remove(id, with: .failure(CancellationError()))
        }
    }

    /// Waits for a permit without a deadline.
    func acquire() async throws {
        _ = try await acquire(before: nil, on: RadioClock())
    }

    /// Returns a permit: to the first waiter if there is one (resumed before this returns), else to the pool.
    func release() {
        let next: Waiter? = state.withLock { s in
            if s.waiters.isEmpty {
                s.permits += 1
                return nil
            }
            return s.waiters.removeFirst()
        }
        next?.continuation.resume(returning: true)
    }

    /// Takes waiter `id` out of the queue, if still there, and resumes it with `result` (no permit).
    private func remove(_ id: UInt64, with result: Result<Bool, any Error>) {
        let waiter: Waiter? = state.withLock { s in
            guard let i = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
            return s.waiters.remove(at: i)
        }
        waiter?.continuation.resume(with: result)
    }
}
