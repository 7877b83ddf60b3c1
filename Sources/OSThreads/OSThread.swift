#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization

/// OS threads for blocking work that must not occupy Swift's cooperative pool (a socket reader,
/// a poll loop, stdin): the package's one thread starter.
public enum OSThread {
    /// Starts a detached thread named `name` (at most 15 bytes show in `top -H`) running `body`.
    /// Nil when the system refuses a new thread.
    @discardableResult
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) -> ThreadHandle? {
        let handle = ThreadHandle()
        let box = Unmanaged.passRetained(Start(name: name, body: body, handle: handle))
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { arg in
            guard let arg else { return nil }
            let start = Unmanaged<Start>.fromOpaque(arg).takeRetainedValue()
            _ = setThreadName(pthread_self(), String(start.name.utf8.prefix(15)) ?? "clicker")
            start.body()
            start.handle.markFinished()
            return nil
        }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            return nil
        }
        pthread_detach(tid)
        handle.setThread(tid)
        return handle
    }

    private final class Start: Sendable {
        let name: String
        let body: @Sendable () -> Void
        let handle: ThreadHandle
        init(name: String, body: @escaping @Sendable () -> Void, handle: ThreadHandle) {
            self.name = name
            self.body = body
            self.handle = handle
        }
    }
}

/// glibc's `pthread_setname_np`, which the Glibc module does not export (it is a GNU extension).
@_silgen_name("pthread_setname_np")
private func setThreadName(_ thread: pthread_t, _ name: UnsafePointer<CChar>) -> Int32

/// A started thread: whether it is the caller, and waiting for it to end, blocking or not.
public final class ThreadHandle: Sendable {
    private struct State {
        var thread: pthread_t?
        var finished = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    /// Signalled once when the body returns; `wait` re-signals it so any number of callers pass.
    private let exited = DispatchSemaphore(value: 0)

    init() {}

    fileprivate func setThread(_ t: pthread_t) { state.withLock { $0.thread = t } }

    fileprivate func markFinished() {
        let waiters = state.withLock { s in
            s.finished = true
            defer { s.waiters = [] }
            return s.waiters
        }
        exited.signal()
        for w in waiters { w.resume() }
    }

    /// Whether the calling code runs on this thread (waiting for itself would never end).
    public var isCurrent: Bool {
        state.withLock { s in s.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Suspends until the thread's body has returned, without blocking a thread.
    public func finished() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s in
                if !s.finished { s.waiters.append(c) }
                return s.finished
            }
            if done { c.resume() }
        }
    }

    /// Blocks until the thread's body has returned. Not for the cooperative pool: use ``finished()``.
    /// Returns at once when called from the thread itself.
    public func waitUntilFinished() {
        if isCurrent { return }
        exited.wait()
        exited.signal()
    }
}
