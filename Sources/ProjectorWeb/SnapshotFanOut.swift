import NIOCore
import Synchronization

/// The latest snapshot, encoded once, handed to every browser connected to `/events`.
///
/// `publish` encodes nothing: it takes the snapshot's JSON, made once per change, and shares one
/// `ByteBuffer` holding the whole server-sent event among all subscribers (each gets the same storage,
/// written to its socket without a copy). A subscriber holds at most the latest event: a slow browser
/// skips the snapshots it missed instead of queueing them.
public final class SnapshotFanOut: Sendable {
    /// One server-sent event and the snapshot's JSON in it.
    public struct Frame: Sendable {
        /// Counts the distinct snapshots published (the event's `id:`).
        public let sequence: Int
        public let json: ByteBuffer
        /// `id: N`, `event: snapshot`, `data: JSON`, blank line.
        public let event: ByteBuffer
        /// The snapshot's results as an SVG chart (`/chart.svg`); nil while the counts are hidden.
        public let svg: ByteBuffer?
    }

    private struct State {
        var latest: Frame?
        var nextID = 0
        var subscribers: [Int: AsyncStream<Frame>.Continuation] = [:]
        var finished = false
    }

    private let state = Mutex(State())
    /// Subscribers beyond this are refused (the server answers 503): each costs a task and a socket.
    public let maxSubscribers: Int

    public init(maxSubscribers: Int = 1000) {
        self.maxSubscribers = maxSubscribers
    }

    /// Shares `json` (and keeps `svg`, its chart) with every subscriber unless it is the snapshot
    /// they already have. Returns whether it was new.
    @discardableResult
    public func publish(json: [UInt8], svg: [UInt8]? = nil) -> Bool {
        state.withLock { s in
            if let l = s.latest, l.json.readableBytesView.elementsEqual(json) { return false }
            let sequence = (s.latest?.sequence ?? 0) + 1
            var event = ByteBuffer()
            event.reserveCapacity(json.count + 40)
            event.writeString("id: \(sequence)\nevent: snapshot\ndata: ")
            event.writeBytes(json)
            event.writeString("\n\n")
            let frame = Frame(sequence: sequence, json: ByteBuffer(bytes: json), event: event,
                              svg: svg.map { ByteBuffer(bytes: $0) })
            s.latest = frame
            for c in s.subscribers.values { c.yield(frame) }
            return true
        }
    }

    /// The latest snapshot, if one was published.
    public var latest: Frame? { state.withLock { $0.latest } }

    /// The latest frame at once, then each new one, until `finish()` or until the consumer stops.
    /// Nil when `maxSubscribers` are already connected or the fan-out has finished.
    public func subscribe() -> AsyncStream<Frame>? {
        let (stream, continuation) = AsyncStream<Frame>.makeStream(bufferingPolicy: .bufferingNewest(1))
        // The slot is forgotten when the stream ends: set before the continuation is registered, so a
        // stream that ends at any moment after registration gives its slot back.
        let id = state.withLock { s in
            s.nextID += 1
            return s.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        let admitted = state.withLock { s in
            guard !s.finished, s.subscribers.count < maxSubscribers else { return false }
            s.subscribers[id] = continuation
            if let l = s.latest { continuation.yield(l) }
            return true
        }
        guard admitted else {
            continuation.finish()
            return nil
        }
        return stream
    }

    /// Ends every subscriber's stream (the server is stopping); later subscriptions are refused.
    public func finish() {
        let all = state.withLock { s in
            s.finished = true
            defer { s.subscribers.removeAll() }
            return Array(s.subscribers.values)
        }
        for c in all { c.finish() }
    }

    /// Browsers connected to `/events` now.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }
}
