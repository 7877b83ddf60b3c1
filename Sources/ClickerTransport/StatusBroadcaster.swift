import Synchronization

/// Keeps a radio's current `RadioStatus` and hands it to every `status()` stream: the current value
/// at once, then each change. A helper for backends implementing the transport protocols.
public final class RadioStatusBroadcaster: Sendable {
    private struct State {
        var current: RadioStatus
        var watchers: [Int: AsyncStream<RadioStatus>.Continuation] = [:]
        var nextID = 0
        var closed = false
    }

    private let state: Mutex<State>

    public init(_ initial: RadioStatus) { state = Mutex(State(current: initial)) }

    /// The status now.
    public var current: RadioStatus { state.withLock { $0.current } }

    /// A stream that starts with the current status and then yields every change; it finishes at
    /// `close()` (at once when already closed). Slow readers see the newest 16 changes.
    public func stream() -> AsyncStream<RadioStatus> {
        let (stream, continuation) = AsyncStream<RadioStatus>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id: Int? = state.withLock { s in
            continuation.yield(s.current)
            if s.closed { return nil }
            let id = s.nextID
            s.nextID += 1
            s.watchers[id] = continuation
            return id
        }
        if let id {
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.watchers.removeValue(forKey: id) }
            }
        } else {
            continuation.finish()
        }
        return stream
    }

    /// Applies `change`; publishes the result when it differs.
    public func update(_ change: (inout RadioStatus) -> Void) {
        state.withLock { s in
            var next = s.current
            change(&next)
            guard next != s.current else { return }
            s.current = next
            for w in s.watchers.values { w.yield(next) }
        }
    }

    /// Finishes every stream; later streams finish at once. Idempotent.
    public func close() {
        let all = state.withLock { s -> [AsyncStream<RadioStatus>.Continuation] in
            s.closed = true
            defer { s.watchers = [:] }
            return Array(s.watchers.values)
        }
        for w in all { w.finish() }
    }
}
