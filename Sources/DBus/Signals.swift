import CDBus
import Synchronization

/// A received signal with its arguments decoded.
public struct DBusSignal: Sendable {
    /// The underlying message (for header fields or re-reading with a ``DBusMessageReader``).
    public let message: DBusMessage
    /// The body arguments.
    public let arguments: [DBusValue]

    public var path: DBusObjectPath { message.path ?? .root }
    public var interface: String { message.interface ?? "" }
    public var name: String { message.member ?? "" }
    /// The unique name of the sender.
    public var sender: String? { message.sender }
}

/// A decoded `org.freedesktop.DBus.Properties.PropertiesChanged` signal.
public struct DBusPropertiesChanged: Sendable {
    public let path: DBusObjectPath
    public let sender: String?
    public let interface: String
    public let changed: [String: DBusValue]
    public let invalidated: [String]
}

/// A decoded `NameOwnerChanged` signal. Empty strings mean "no owner".
public struct DBusNameOwnerChange: Sendable, Hashable {
    public let name: String
    public let oldOwner: String
    public let newOwner: String
    public init(name: String, oldOwner: String, newOwner: String) {
        self.name = name
        self.oldOwner = oldOwner
        self.newOwner = newOwner
    }
}

/// Base class of everything that receives signals on the dispatch thread.
class SignalSubscriber: @unchecked Sendable {
    // @unchecked Sendable: `rule` and `match` are immutable; `ownerTracker` is assigned once, before the
    // subscriber is published to the dispatch thread (publication goes through a Mutex).
    let rule: DBusMatchRule
    let match: CompiledMatch
    var ownerTracker: OwnerTracker?

    init(rule: DBusMatchRule) {
        self.rule = rule
        self.match = CompiledMatch(rule)
    }

    /// Handles one matching signal; returns true if the subscriber now has buffered items to flush.
    func deliver(_ message: DBusMessage) -> Bool { false }
    /// Delivers buffered items (dispatch thread).
    func flush() {}
    /// Ends delivery (connection closed).
    func finish() {}
}

/// Keeps `target.owner` equal to the current owner of a well-known name.
final class OwnerTracker: SignalSubscriber, @unchecked Sendable {
    // @unchecked Sendable: only immutable state beyond the base class.
    let target: CompiledMatch

    init(name: String, target: CompiledMatch) {
        self.target = target
        super.init(rule: .nameOwnerChanged(name))
    }

    override func deliver(_ message: DBusMessage) -> Bool {
        var r = message.reader()
        guard (try? r.skip()) != nil, (try? r.skip()) != nil, let new = try? r.readString() else { return false }
        target.owner.set(new)
        return false
    }
}

final class StreamSubscriber: SignalSubscriber, @unchecked Sendable {
    // @unchecked Sendable: the continuation is thread-safe; everything else is immutable.
    let continuation: AsyncStream<DBusSignal>.Continuation

    init(rule: DBusMatchRule, continuation: AsyncStream<DBusSignal>.Continuation) {
        self.continuation = continuation
        super.init(rule: rule)
    }

    override func deliver(_ message: DBusMessage) -> Bool {
        if let args = try? message.arguments() {
            continuation.yield(DBusSignal(message: message, arguments: args))
        }
        return false
    }

    override func finish() { continuation.finish() }
}

/// A subscriber whose per-signal work is given as closures. `signalBatches` builds them where the
/// element type is known (it is inlined into its caller), so decoding and buffering run code
/// specialised for the element, without generic metadata lookups per signal.
final class ClosureSubscriber: SignalSubscriber, @unchecked Sendable {
    // @unchecked Sendable: immutable; the closures are called on the dispatch thread only.
    let onDeliver: @Sendable (DBusMessage) -> Bool
    let onFlush: @Sendable () -> Void
    let onFinish: @Sendable () -> Void

    init(rule: DBusMatchRule, deliver: @escaping @Sendable (DBusMessage) -> Bool, flush: @escaping @Sendable () -> Void,
         finish: @escaping @Sendable () -> Void) {
        onDeliver = deliver
        onFlush = flush
        onFinish = finish
        super.init(rule: rule)
    }

    override func deliver(_ message: DBusMessage) -> Bool { onDeliver(message) }
    override func flush() { onFlush() }
    override func finish() { onFinish() }
}

/// Decodes on the dispatch thread and collects the results into arrays, each handed to `sink` (on the
/// dispatch thread); `end` after the last.
@usableFromInline
final class BatchBuffer<Element: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `buffer` is touched only on the dispatch thread (deliver/flush/finish all run
    // there); the sink, the end and the counters are thread-safe; the rest is immutable.
    @usableFromInline let decode: @Sendable (DBusMessage, inout DBusMessageReader) throws -> Element?
    @usableFromInline let sink: @Sendable ([Element]) -> Void
    @usableFromInline let end: @Sendable () -> Void
    @usableFromInline let maxBatch: Int
    @usableFromInline var buffer: [Element] = []
    @usableFromInline let stats: DBusSubscriptionStats

    @inlinable
    init(maxBatch: Int, stats: DBusSubscriptionStats, sink: @escaping @Sendable ([Element]) -> Void,
         end: @escaping @Sendable () -> Void,
         decode: @escaping @Sendable (DBusMessage, inout DBusMessageReader) throws -> Element?) {
        self.decode = decode
        self.sink = sink
        self.end = end
        self.maxBatch = max(1, maxBatch)
        self.stats = stats
    }

    /// Decodes one signal; returns true if the buffer just became non-empty (needs a flush).
    @inlinable
    func deliver(_ message: DBusMessage) -> Bool {
        var r = message.reader()
        let item: Element?
        do {
            item = try decode(message, &r)
        } catch {
            stats.rejected.add(1, ordering: .relaxed)
            return false
        }
        guard let item else {
            stats.skipped.add(1, ordering: .relaxed)
            return false
        }
        buffer.append(item)
        if buffer.count >= maxBatch {
            flush()
            return false
        }
        return buffer.count == 1
    }

    @inlinable
    func flush() {
        guard !buffer.isEmpty else { return }
        let batch = buffer
        // The batch keeps the storage; the next one starts at about this one's size.
        buffer = []
        buffer.reserveCapacity(min(maxBatch, max(16, batch.count)))
        stats.delivered.add(batch.count, ordering: .relaxed)
        stats.batches.add(1, ordering: .relaxed)
        sink(batch)
    }

    @inlinable
    func finish() {
        flush()
        end()
    }
}

/// Counters of a batched subscription.
public final class DBusSubscriptionStats: Sendable {
    /// Items delivered to the stream.
    public let delivered = Atomic<Int>(0)
    /// Batches yielded.
    public let batches = Atomic<Int>(0)
    /// Signals whose decoder threw (malformed or unexpected types).
    public let rejected = Atomic<Int>(0)
    /// Signals whose decoder returned nil (not of interest).
    public let skipped = Atomic<Int>(0)
    public init() {}
}

extension DBusConnection {
    /// Subscribes to signals matching `rule` (the rule is added on the bus before this returns, so no
    /// later signal is missed). Ending the iteration, cancelling its task or dropping the stream removes
    /// the subscription and its match rule. Signals are yielded from the dispatch thread, no task per
    /// signal. Slow consumers buffer up to `bufferLimit` signals, after which the oldest are dropped.
    public func signals(matching rule: DBusMatchRule, bufferLimit: Int = 65536) async throws -> AsyncStream<DBusSignal> {
        let (stream, cont) = AsyncStream<DBusSignal>.makeStream(bufferingPolicy: .bufferingNewest(bufferLimit))
        let sub = StreamSubscriber(rule: rule, continuation: cont)
        try await core.addSubscriber(sub, connection: self)
        let core = self.core
        cont.onTermination = { _ in core.removeSubscriber(sub) }
        return stream
    }

    /// The low-level fast path. `decode` runs on the dispatch thread for every matching signal with a
    /// reader positioned at the first argument; it must be quick and must not block. Non-nil results are
    /// collected and yielded as arrays: one array per burst of signals read from the socket (at most
    /// `maxBatch` items each), so the consumer pays one wake-up per batch instead of per signal.
    /// A throwing decoder counts the signal as rejected in `stats` and drops it.
    @inlinable
    public func signalBatches<Element: Sendable>(
        matching rule: DBusMatchRule, maxBatch: Int = 1024, bufferLimit: Int = 4096,
        stats: DBusSubscriptionStats = DBusSubscriptionStats(),
        decode: @escaping @Sendable (DBusMessage, inout DBusMessageReader) throws -> Element?
    ) async throws -> AsyncStream<[Element]> {
        let (stream, cont) = AsyncStream<[Element]>.makeStream(bufferingPolicy: .bufferingNewest(bufferLimit))
        let unsubscribe = try await signalBatches(matching: rule, maxBatch: maxBatch, stats: stats, decode: decode,
                                                  deliver: { cont.yield($0) }, finished: { cont.finish() })
        cont.onTermination = { _ in unsubscribe() }
        return stream
    }

    /// The same batches without a stream: each is handed to `deliver` on the dispatch thread itself, in
    /// order, and `finished` is called once after the last (the connection closed). For a consumer whose
    /// work on a batch is short and never blocks or waits for this connection (it takes the batch into
    /// its state under a lock): it saves waking a task and the stream's hand-over for every batch.
    /// Returns what removes the subscription; a batch already being delivered may still arrive after it.
    @inlinable
    public func signalBatches<Element: Sendable>(
        matching rule: DBusMatchRule, maxBatch: Int = 1024, stats: DBusSubscriptionStats = DBusSubscriptionStats(),
        decode: @escaping @Sendable (DBusMessage, inout DBusMessageReader) throws -> Element?,
        deliver: @escaping @Sendable ([Element]) -> Void, finished: @escaping @Sendable () -> Void
    ) async throws -> @Sendable () -> Void {
        let buffer = BatchBuffer(maxBatch: maxBatch, stats: stats, sink: deliver, end: finished, decode: decode)
        return try await subscribe(rule, deliver: { buffer.deliver($0) }, flush: { buffer.flush() },
                                   finish: { buffer.finish() })
    }

    /// Adds a subscriber made of the given closures (called on the dispatch thread); returns what
    /// removes it.
    @usableFromInline
    func subscribe(_ rule: DBusMatchRule, deliver: @escaping @Sendable (DBusMessage) -> Bool,
                   flush: @escaping @Sendable () -> Void,
                   finish: @escaping @Sendable () -> Void) async throws -> @Sendable () -> Void {
        let sub = ClosureSubscriber(rule: rule, deliver: deliver, flush: flush, finish: finish)
        try await core.addSubscriber(sub, connection: self)
        let core = self.core
        return { core.removeSubscriber(sub) }
    }

    /// `PropertiesChanged` signals, decoded.
    public func propertiesChanged(_ rule: DBusMatchRule = .propertiesChanged()) async throws -> AsyncStream<[DBusPropertiesChanged]> {
        try await signalBatches(matching: rule) { msg, r in
            let iface = try r.readString()
            let changed = try [String: DBusValue](from: &r)
            let invalidated = try [String](from: &r)
            return DBusPropertiesChanged(path: msg.path ?? .root, sender: msg.sender, interface: iface,
                                         changed: changed, invalidated: invalidated)
        }
    }

    /// `NameOwnerChanged` signals from the bus, optionally for one name.
    public func nameOwnerChanges(for name: String? = nil) async throws -> AsyncStream<DBusNameOwnerChange> {
        let batches = try await signalBatches(matching: .nameOwnerChanged(name), maxBatch: 1) { _, r in
            DBusNameOwnerChange(name: try r.readString(), oldOwner: try r.readString(), newOwner: try r.readString())
        }
        let (stream, cont) = AsyncStream<DBusNameOwnerChange>.makeStream()
        let pump = Task {
            for await batch in batches { for c in batch { cont.yield(c) } }
            cont.finish()
        }
        cont.onTermination = { _ in pump.cancel() }
        return stream
    }
}
