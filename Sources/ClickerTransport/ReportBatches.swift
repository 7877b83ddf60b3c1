import Synchronization

/// Advertisement reports in the batches a radio delivers them, oldest first: each element holds every
/// report queued since the consumer last took some (a backend with a ``ReportQueue``), or one report
/// (a backend that does not batch). The consumer pays one wake-up per batch instead of one per report.
public struct AdvertisementBatches: AsyncSequence, Sendable {
    public typealias Element = [AdvertisementReport]

    enum Source: Sendable {
        case single(AsyncThrowingStream<AdvertisementReport, any Error>)
        case queue(ReportQueue, AsyncThrowingStream<Void, any Error>)
    }

    let source: Source

    /// Batches of one report each, from a backend's report stream.
    public init(_ reports: AsyncThrowingStream<AdvertisementReport, any Error>) { source = .single(reports) }

    init(queue: ReportQueue, wakeUps: AsyncThrowingStream<Void, any Error>) { source = .queue(queue, wakeUps) }

    public func makeAsyncIterator() -> AsyncIterator {
        switch source {
        case .single(let s): AsyncIterator(state: .single(s.makeAsyncIterator()))
        case .queue(let q, let w): AsyncIterator(state: .queue(q, w.makeAsyncIterator()))
        }
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        enum State {
            case single(AsyncThrowingStream<AdvertisementReport, any Error>.Iterator)
            case queue(ReportQueue, AsyncThrowingStream<Void, any Error>.Iterator)
        }

        var state: State
        /// The backend's failure, held back until the reports queued before it were handed over.
        var failure: (any Error)? = nil

        public mutating func next() async throws -> [AdvertisementReport]? { try await next(isolation: nil) }

        /// Runs on the caller's actor: no executor hop per batch.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> [AdvertisementReport]? {
            switch state {
            case .single(var it):
                defer { state = .single(it) }
                return try await it.next(isolation: actor).map { [$0] }
            case .queue(let queue, var wakeUps):
                defer { state = .queue(queue, wakeUps) }
                if let e = failure {
                    failure = nil
                    throw e
                }
                while true {
                    let batch = queue.take()
                    if !batch.isEmpty { return batch }
                    do {
                        // nil: the backend finished or the consumer was cancelled; hand over what is left.
                        guard try await wakeUps.next(isolation: actor) != nil else {
                            let rest = queue.take()
                            return rest.isEmpty ? nil : rest
                        }
                    } catch {
                        let rest = queue.take()
                        if rest.isEmpty { throw error }
                        failure = error
                        return rest
                    }
                }
            }
        }
    }
}

/// A bounded queue of advertisement reports between a backend (any thread) and one consumer, who takes
/// everything queued at once (``batches``). Beyond `limit` queued reports the oldest are dropped;
/// ``append(contentsOf:)`` returns how many, for the caller to count. Ending the consumer's iteration (cancelling its task, dropping the sequence)
/// calls `onTermination` once.
public final class ReportQueue: Sendable {
    private struct State {
        var reports: [AdvertisementReport] = []
    }

    private let state = Mutex(State())
    private let wake: AsyncThrowingStream<Void, any Error>.Continuation
    private let wakeUps: AsyncThrowingStream<Void, any Error>
    /// The most reports kept for a consumer that falls behind.
    public let limit: Int

    public init(limit: Int) {
        self.limit = max(1, limit)
        // One pending wake-up is enough: the consumer takes everything queued when it wakes.
        (wakeUps, wake) = AsyncThrowingStream<Void, any Error>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// The consumer's side. Iterate it once.
    public var batches: AdvertisementBatches { AdvertisementBatches(queue: self, wakeUps: wakeUps) }

    /// Called once when the consumer stops iterating or the queue is finished.
    public func onTermination(_ body: @escaping @Sendable () -> Void) {
        wake.onTermination = { _ in body() }
    }

    /// Queues `reports` after those already queued; returns how many old reports were dropped to stay
    /// within `limit`.
    @discardableResult
    public func append(contentsOf reports: [AdvertisementReport]) -> Int {
        guard !reports.isEmpty else { return 0 }
        let dropped = state.withLock { s -> Int in
            // Taking over the array when the queue is empty (the usual case) copies nothing.
            if s.reports.isEmpty { s.reports = reports } else { s.reports.append(contentsOf: reports) }
            let over = s.reports.count - limit
            guard over > 0 else { return 0 }
            s.reports.removeFirst(over)
            return over
        }
        wake.yield()
        return dropped
    }

    /// Ends the batches once the consumer has taken what is queued; with `error`, the iteration then
    /// throws it.
    public func finish(throwing error: (any Error)? = nil) { wake.finish(throwing: error) }

    /// Takes everything queued (the consumer's side).
    func take() -> [AdvertisementReport] {
        state.withLock { s in
            guard !s.reports.isEmpty else { return [] }
            defer { s.reports = [] }
            return s.reports
        }
    }
}
