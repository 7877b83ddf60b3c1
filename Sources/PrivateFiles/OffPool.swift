import Dispatch

/// A serial queue of its own for blocking file work (fsync, rename, flock), so that none of it
/// runs on Swift's cooperative thread pool, whose few threads every actor and task shares.
public final class BlockingWorker: Sendable {
    private let queue: DispatchQueue

    public init(label: String) { queue = DispatchQueue(label: label) }

    /// Runs `body` on the worker's queue and resumes the caller with its result.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
