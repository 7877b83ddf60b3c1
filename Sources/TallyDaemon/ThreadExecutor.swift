import Dispatch
import OSThreads
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A serial executor that runs its jobs, in order, on one thread of its own (swift-nio's
/// `EventLoop` + `SerialExecutor` pattern). An actor whose `unownedExecutor` returns it runs every
/// turn on that thread, so the blocking work it does inside a turn (a synchronous database commit
/// with its fsync) never holds one of the cooperative pool's few threads.
///
/// The thread ends after `shutdown()` once its queue is empty; the owner calls it from `deinit`.
final class ThreadExecutor: SerialExecutor {
    /// Jobs not yet run, and whether the owner is gone.
    private let queue = Mutex<(jobs: [UnownedJob], head: Int, stopping: Bool)>(([], 0, false))
    /// One signal per job enqueued (and one for `shutdown`): the thread sleeps while it is zero.
    private let wake = DispatchSemaphore(value: 0)
    /// The thread (the package's one thread starter, `OSThread`); set before any job is enqueued.
    private let thread = Mutex<ThreadHandle?>(nil)
    /// The thread's name, as `/proc/self/task/*/comm` and debuggers show it (at most 15 bytes).
    let name: String

    /// Starts the thread. Returns nil when the system refuses a thread.
    init?(name: String) {
        self.name = name
        guard let handle = OSThread.start(name: name, { [self] in self.loop() }) else { return nil }
        thread.withLock { $0 = handle }
    }

    /// Returns once the thread has ended (after `shutdown()` and the last job).
    func finished() async {
        await thread.withLock { $0 }?.finished()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.withLock { $0.jobs.append(job) }
        wake.signal()
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    /// Whether the caller runs on this executor's thread.
    var isCurrent: Bool { thread.withLock { $0 }?.isCurrent ?? false }

    func checkIsolated() {
        precondition(isCurrent, "not on the \(name) thread")
    }

    /// Lets the thread end once it has run every job enqueued so far.
    func shutdown() {
        queue.withLock { $0.stopping = true }
        wake.signal()
    }

    /// The thread's body: runs jobs until shut down and drained. It holds the executor (jobs need it
    /// alive while they run), so the executor lives until its thread ends.
    private func loop() {
        while true {
            wake.wait()
            let next: UnownedJob?? = queue.withLock { q in
                guard q.head < q.jobs.count else { return q.stopping ? .some(nil) : nil }
                let job = q.jobs[q.head]
                q.head += 1
                // Compact once the consumed prefix is large: amortised O(1) per job.
                if q.head >= 1024, q.head * 2 >= q.jobs.count {
                    q.jobs.removeFirst(q.head)
                    q.head = 0
                }
                return .some(job)
            }
            switch next {
            case .some(.some(let job)): job.runSynchronously(on: asUnownedSerialExecutor())
            case .some(.none): return  // shut down, nothing left
            case .none: continue       // the wake-up of a job already run, or of shutdown with jobs left
            }
        }
    }
}
