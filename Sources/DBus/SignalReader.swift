#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import OSThreads
import Synchronization

/// A receive-only connection to a bus for signals at high rates, read and unmarshalled by our own
/// code rather than libdbus (whose reading, checking and iterating of each message, with its locks and
/// allocations, cost more than the rest of a signal's handling): its own socket to the bus, its own
/// thread (blocking reads, never on the cooperative pool), large reads into one reusable buffer split
/// by the headers' lengths, each signal handed in place to a decoder. Method calls stay on a
/// ``DBusConnection``.
///
/// Messages whose header or body does not parse are dropped and counted (`stats.rejected`) while the
/// stream's framing holds; bytes that cannot begin a message end the reader with an error.
public final class DBusSignalReader: Sendable {
    private struct State {
        var fd: Int32 = -1
        var closeRequested = false
    }

    private let state = Mutex(State())
    /// Signals decoded (`delivered`), dropped as malformed (`rejected`) or not wanted (`skipped`).
    public let stats: DBusSubscriptionStats

    private init(stats: DBusSubscriptionStats) { self.stats = stats }

    /// Connects to the bus, says `Hello` and adds `rules`; returns once the bus has accepted them, so no
    /// signal sent after this returns is missed. `decode` runs on the reader's thread for every signal
    /// (the message is valid only during the call); non-nil results are handed to `deliver` there in
    /// arrays (one per burst, at most `maxBatch` each), in order. `finished` is called once after the
    /// last: with nil after ``close()``, else with why the reader stopped (the bus closed the
    /// connection, a read failed, the stream could not be split into messages).
    public static func open<Element>(
        _ target: DBusBusTarget, matching rules: [DBusMatchRule], maxBatch: Int = 1024,
        stats: DBusSubscriptionStats = DBusSubscriptionStats(),
        decode: @escaping @Sendable (DBusWireMessage) throws -> Element?,
        deliver: @escaping @Sendable ([Element]) -> Void, finished: @escaping @Sendable (DBusError?) -> Void
    ) async throws -> DBusSignalReader {
        for rule in rules { try rule.validate() }
        let (address, isBus) = ConnectionCore.resolveAddress(target)
        guard let address, isBus else {
            throw DBusError(name: DBusError.invalidArgs, message: "a signal reader needs a bus address")
        }
        let reader = DBusSignalReader(stats: stats)
        let batch = WireBatch(maxBatch: maxBatch, stats: stats, decode: decode, deliver: deliver)
        let setup = try ReaderSetup(address: address, rules: rules)
        return try await withCheckedThrowingContinuation { (cont: CheckedContinuation<DBusSignalReader, Error>) in
            let started = OSThread.start(name: "clicker-dbus-rx") {
                reader.run(setup, batch, started: cont, finished: finished)
            }
            if started == nil {
                cont.resume(throwing: DBusError(name: DBusError.failed, message: "cannot start the reader thread"))
            }
        }
    }

    /// Stops reading: no batch is delivered after the thread sees it. Idempotent.
    public func close() {
        state.withLock { s in
            s.closeRequested = true
            // Wakes the blocking read; the thread alone closes the descriptor.
            if s.fd >= 0 { _ = shutdown(s.fd, Int32(SHUT_RDWR)) }
        }
    }

    deinit { close() }

    // MARK: The reader's thread

    private func run(_ setup: ReaderSetup, _ batch: WireBatch, started: CheckedContinuation<DBusSignalReader, Error>,
                     finished: @Sendable (DBusError?) -> Void) {
        let fd: Int32
        do {
            fd = try WireSocket.connect(path: setup.path, abstract: setup.abstract)
            let closing = state.withLock { s -> Bool in
                if !s.closeRequested { s.fd = fd }
                return s.closeRequested
            }
            if closing { throw DBusError(name: DBusError.disconnected, message: "closed while connecting") }
            try WireSocket.authenticate(fd)
            try WireSocket.writeAll(fd, setup.greeting)
        } catch {
            endConnection()
            started.resume(throwing: error)
            return
        }
        var handshake = Handshake(awaiting: setup.serials, continuation: started, reader: self)
        let error = loop(fd, batch, &handshake)
        // What was read before the bus went (or the stream broke) is delivered; nothing after close().
        if error != nil { batch.flush() }
        endConnection()
        if let pending = handshake.continuation {
            pending.resume(throwing: error ?? DBusError(name: DBusError.disconnected, message: "closed while connecting"))
        } else if handshake.failure == nil {
            finished(error)
        }
    }

    private func endConnection() {
        state.withLock { s in
            if s.fd >= 0 { _ = Glibc.close(s.fd) }
            s.fd = -1
            s.closeRequested = true
        }
    }

    /// Reads until the end; returns why it ended (nil: closed on request).
    private func loop(_ fd: Int32, _ batch: WireBatch, _ handshake: inout Handshake) -> DBusError? {
        let buffer = WireReadBuffer(capacity: 64 << 10)
        while true {
            var dontWait = false
            if let since = batch.pendingSince {
                // Signals wait for their batch as long as ``DBusConnection``'s do: leave the socket alone
                // until the batch is due, then take everything that arrived meanwhile in one read.
                let due = since &+ ConnectionCore.batchDelayNanos, now = monotonicNanos()
                if due > now { waitForClose(fd, nanos: due - now) }
                dontWait = true
            }
            let n = buffer.read(from: fd, dontWait: dontWait)
            let readError = errno
            // After `close()` the socket may still hold bytes: they are not handled.
            if state.withLock({ $0.closeRequested }) { return nil }
            if n == 0 { return DBusError(name: DBusError.disconnected, message: "the bus closed the connection") }
            if n < 0 {
                if readError == EINTR { continue }
                if readError == EAGAIN || readError == EWOULDBLOCK { batch.flush(); continue }
                errno = readError
                return WireSocket.failure("read")
            }
            do {
                while let bytes = try buffer.next() { handle(bytes, batch, &handshake) }
            } catch {
                return DBusError(name: DBusError.failed, message: "unreadable stream from the bus (\(error))")
            }
            if let failure = handshake.failure { return failure }
            if dontWait { batch.flush() }
        }
    }

    private func handle(_ bytes: UnsafeRawBufferPointer, _ batch: WireBatch, _ handshake: inout Handshake) {
        let message: DBusWireMessage
        do {
            message = try DBusWireMessage(parsing: bytes)
        } catch {
            stats.rejected.add(1, ordering: .relaxed)
            return
        }
        switch message.type {
        case .signal?: batch.add(message)
        case .methodReturn?, .error?: handshake.reply(message)
        default: stats.skipped.add(1, ordering: .relaxed)
        }
    }

    /// Sleeps up to `nanos`, woken early when ``close()`` shuts the socket down (a hang-up is always
    /// reported; nothing else is asked for).
    private func waitForClose(_ fd: Int32, nanos: UInt64) {
        var p = pollfd(fd: fd, events: 0, revents: 0)
        _ = poll(&p, 1, Int32(clamping: nanos / 1_000_000 + 1))
    }
}

/// What the reader sends once connected, prepared before its thread starts.
private struct ReaderSetup: Sendable {
    let path: String
    let abstract: Bool
    /// `Hello`, then `AddMatch` for each rule, marshalled.
    let greeting: [UInt8]
    /// Their serials.
    let serials: [UInt32]

    init(address: String, rules: [DBusMatchRule]) throws {
        (path, abstract) = try WireSocket.unixAddress(address)
        var bytes: [UInt8] = []
        var serials: [UInt32] = []
        let calls = [("Hello", [DBusValue]())] + rules.map { ("AddMatch", [DBusValue.string($0.description)]) }
        for (i, (method, args)) in calls.enumerated() {
            let serial = UInt32(i + 1)
            let msg = try DBusMessage.methodCall(destination: DBusConnection.busName, path: DBusConnection.busPath,
                                                 interface: DBusConnection.busName, member: method, arguments: args)
            guard let wire = msg.marshalled(serial: serial) else {
                throw DBusError(name: DBusError.noMemory, message: "cannot marshal \(method)")
            }
            bytes += wire
            serials.append(serial)
        }
        greeting = bytes
        self.serials = serials
    }
}

/// The replies to the greeting: the reader is handed out once all came back.
private struct Handshake {
    var awaiting: Set<UInt32>
    var continuation: CheckedContinuation<DBusSignalReader, Error>?
    let reader: DBusSignalReader
    /// The bus refused a call of the greeting (`open` has thrown it; `finished` is not called).
    var failure: DBusError?

    init(awaiting: [UInt32], continuation: CheckedContinuation<DBusSignalReader, Error>, reader: DBusSignalReader) {
        self.awaiting = Set(awaiting)
        self.continuation = continuation
        self.reader = reader
    }

    mutating func reply(_ m: DBusWireMessage) {
        guard awaiting.remove(m.replySerial) != nil, let cont = continuation else {
            reader.stats.skipped.add(1, ordering: .relaxed)
            return
        }
        if m.type == .error {
            var body = m.body()
            let text = m.signatureIs("s") ? (try? body.readString()) ?? "" : ""
            let e = DBusError(name: m.errorName ?? DBusError.failed, message: text)
            continuation = nil
            failure = e
            cont.resume(throwing: e)
        } else if awaiting.isEmpty {
            continuation = nil
            cont.resume(returning: reader)
        }
    }
}

/// Decoded signals collected on the reader's thread and handed over in batches.
final class WireBatch: @unchecked Sendable {
    // @unchecked Sendable: the buffer and `pendingSince` are touched only on the reader's thread (add,
    // flush); the closures and the counters are thread-safe; the rest is immutable.
    /// Decodes one signal and keeps it: the number kept, or 0 when it was not.
    private let addOne: (DBusWireMessage) -> Int
    private let limit: Int
    private let flushAll: () -> Void
    /// When the first signal of the batch being collected was decoded (monotonic nanoseconds).
    private(set) var pendingSince: UInt64?

    init<Element>(maxBatch: Int, stats: DBusSubscriptionStats, decode: @escaping @Sendable (DBusWireMessage) throws -> Element?,
                  deliver: @escaping @Sendable ([Element]) -> Void) {
        let limit = max(1, maxBatch)
        let box = Box<[Element]>([])
        addOne = { m in
            do {
                guard let item = try decode(m) else {
                    stats.skipped.add(1, ordering: .relaxed)
                    return 0
                }
                box.value.append(item)
                return box.value.count
            } catch {
                stats.rejected.add(1, ordering: .relaxed)
                return 0
            }
        }
        flushAll = {
            let batch = box.value
            guard !batch.isEmpty else { return }
            box.value = []
            box.value.reserveCapacity(min(limit, max(16, batch.count)))
            // Counted before the hand-over: whoever sees the batch sees it counted.
            stats.delivered.add(batch.count, ordering: .relaxed)
            stats.batches.add(1, ordering: .relaxed)
            deliver(batch)
        }
        self.limit = limit
    }

    func add(_ m: DBusWireMessage) {
        let kept = addOne(m)
        if kept == 1 { pendingSince = monotonicNanos() }
        if kept >= limit { flush() }
    }

    func flush() {
        guard pendingSince != nil else { return }
        pendingSince = nil
        flushAll()
    }

    private final class Box<T> {
        var value: T
        init(_ v: T) { value = v }
    }
}
