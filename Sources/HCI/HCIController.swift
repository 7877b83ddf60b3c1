import ClickerTransport
import Logging
import OSThreads
import Synchronization

/// Counters of what the HCI reader saw, for status displays and tests.
public struct HCIStatistics: Sendable, Hashable {
    /// HCI event packets read.
    public var events = 0
    /// Advertising reports delivered to a subscriber.
    public var reportsDelivered = 0
    /// Advertising reports without the wanted company's manufacturer data.
    public var reportsIgnored = 0
    /// Event packets or advertising reports that failed to decode (dropped, counted).
    public var malformed = 0
    /// Extended reports that were pieces of longer data ("incomplete": kept to be joined with the
    /// chain's complete last report, or ending a chain unfinished).
    public var fragmentsDropped = 0
    public init() {}
}

/// A FIFO async lock: one HCI command (or command sequence) at a time.
actor AsyncLock {
    private var locked = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func lock() async {
        if !locked { locked = true; return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func unlock() {
        if waiters.isEmpty { locked = false } else { waiters.removeFirst().resume() }
    }

    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await lock()
        do {
            let value = try await body()
            unlock()
            return value
        } catch {
            unlock()
            throw error
        }
    }
}

/// Drives one controller over an `HCIChannel`: sends commands one at a time and awaits their
/// Command Complete, and runs the reader on a dedicated thread (never on the Swift
/// cooperative pool), which decodes events and fans advertising reports out to subscribers.
final class HCIController: Sendable {
    typealias ReportContinuation = AsyncThrowingStream<AdvertisementReport, any Error>.Continuation

    private struct Pending {
        var id: UInt64
        var opcode: HCIOpcode
        /// When it times out, on `clock`.
        var deadline: RadioInstant
        var continuation: CheckedContinuation<[UInt8], any Error>
    }

    private struct Subscriber {
        var companyID: UInt16
        var continuation: ReportContinuation
    }

    private struct State {
        var nextID: UInt64 = 1
        var pending: Pending?
        var subscribers: [UInt64: Subscriber] = [:]
        /// Set when the controller failed for good or was stopped; every later command throws it.
        var failure: HCIError?
        var statistics = HCIStatistics()
    }

    let adapter: String
    private let channel: any HCIChannel
    private let state = Mutex(State())
    private let stopRequested = Atomic<Bool>(false)
    private let commandLock = AsyncLock()
    /// Called on the reader thread when the controller fails for good.
    private let onFailure: @Sendable (HCIError) -> Void
    /// Timestamps reports as they are read, and times out commands.
    private let clock: RadioClock

    init(channel: any HCIChannel, adapter: String, clock: RadioClock = RadioClock(),
         onFailure: @escaping @Sendable (HCIError) -> Void) {
        self.channel = channel
        self.adapter = adapter
        self.clock = clock
        self.onFailure = onFailure
        let name = "\(adapter)-reader"   // ≤ 15 characters: the kernel's thread-name limit
        let started = OSThread.start(name: name) { [self] in readLoop() }
        if started == nil {
            channel.close()
            fail(.closed("cannot start the reader thread of \(adapter)"), notify: true)
        }
    }

    var statistics: HCIStatistics { state.withLock { $0.statistics } }

    /// Whether the controller failed for good or was stopped.
    var hasFailed: Bool { state.withLock { $0.failure != nil } }

    /// Sends `command` and returns the return parameters after the status octet.
    /// Throws `HCIError.commandFailed` for a non-zero status, `.commandTimeout` once `timeout` has
    /// passed on the controller's clock (the reader looks at each event and at least every 100 ms).
    func execute(_ command: HCICommand, timeout: Duration) async throws -> [UInt8] {
        try await commandLock.run { try await self.executeNow(command, timeout: timeout) }
    }

    /// Runs several commands with no other command in between.
    func exclusively<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await commandLock.run(body)
    }

    /// Sends `command` without taking the command lock (callers inside `exclusively`).
    func executeNow(_ command: HCICommand, timeout: Duration) async throws -> [UInt8] {
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        let deadline = clock.now + timeout
        let parameters = try await withCheckedThrowingContinuation { (c: CheckedContinuation<[UInt8], any Error>) in
            let failure: HCIError? = state.withLock { s in
                if let failure = s.failure { return failure }
                s.pending = Pending(id: id, opcode: command.opcode, deadline: deadline, continuation: c)
                return nil
            }
            if let failure { c.resume(throwing: failure); return }
            do {
                try channel.write(command.packet)
            } catch {
                takePending(id)?.continuation.resume(throwing: error)
            }
        }
        guard let status = parameters.first else { throw HCIError.malformedReply(command.opcode) }
        guard status == 0 else { throw HCIError.commandFailed(opcode: command.opcode, status: status) }
        return Array(parameters.dropFirst())
    }

    private func takePending(_ id: UInt64) -> Pending? {
        state.withLock { s in
            guard let p = s.pending, p.id == id else { return nil }
            s.pending = nil
            return p
        }
    }

    /// Registers a receiver of reports for `companyID`; returns its id, or throws if the controller has failed.
    func addSubscriber(companyID: UInt16, continuation: ReportContinuation) throws(HCIError) -> UInt64 {
        let result: Result<UInt64, HCIError> = state.withLock { s in
            if let failure = s.failure { return .failure(failure) }
            let id = s.nextID
            s.nextID += 1
            s.subscribers[id] = Subscriber(companyID: companyID, continuation: continuation)
            return .success(id)
        }
        return try result.get()
    }

    /// How many subscribers are registered.
    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Removes a subscriber; returns how many remain.
    @discardableResult
    func removeSubscriber(_ id: UInt64) -> Int {
        state.withLock { s in
            s.subscribers[id] = nil
            return s.subscribers.count
        }
    }

    /// Stops the reader thread (which then closes the channel) and fails what is pending. Idempotent.
    func stop(reason: HCIError = .closed("shut down")) {
        stopRequested.store(true, ordering: .releasing)
        fail(reason, notify: false)
    }

    // MARK: Reader thread

    private func readLoop() {
        var batch: [AdvertisementReport] = []
        batch.reserveCapacity(32)
        var reassembler = ExtendedReportReassembler()
        while !stopRequested.load(ordering: .acquiring) {
            let packet: [UInt8]?
            do {
                packet = try channel.read(timeoutMilliseconds: 100)
            } catch {
                fail(error, notify: true)
                break
            }
            // Before the packet: a reply read after the deadline is late.
            expireOverdueCommand()
            guard let packet else { continue }
            handle(packet, batch: &batch, reassembler: &reassembler)
        }
        channel.close()
    }

    /// Fails the pending command with `commandTimeout` if its deadline has passed on `clock`.
    private func expireOverdueCommand() {
        let now = clock.now
        let overdue: Pending? = state.withLock { s in
            guard let p = s.pending, p.deadline <= now else { return nil }
            s.pending = nil
            return p
        }
        if let p = overdue { p.continuation.resume(throwing: HCIError.commandTimeout(p.opcode)) }
    }

    private func handle(_ packet: [UInt8], batch: inout [AdvertisementReport],
                        reassembler: inout ExtendedReportReassembler) {
        guard packet.first == 0x04 else { return }   // not an event (no ACL expected)
        if HCIEvent.isAdvertisingReportEvent(packet) {
            deliverReports(packet, batch: &batch, reassembler: &reassembler)
            return
        }
        let event: HCIEvent
        do {
            event = try HCIEvent.parse(packet: packet)
        } catch {
            state.withLock { $0.statistics.events += 1; $0.statistics.malformed += 1 }
            return
        }
        let resume: (Pending, Result<[UInt8], HCIError>)? = state.withLock { s in
            s.statistics.events += 1
            guard let p = s.pending else { return nil }
            switch event {
            case .commandComplete(let cc) where cc.opcode == p.opcode:
                s.pending = nil
                return (p, .success(cc.returnParameters))
            case .commandStatus(let cs) where cs.opcode == p.opcode && cs.status != 0:
                s.pending = nil
                return (p, .failure(.commandFailed(opcode: cs.opcode, status: cs.status)))
            default:
                return nil
            }
        }
        if let (p, result) = resume { p.continuation.resume(with: result) }
        if case .hardwareError(let code) = event { fail(.hardwareError(code: code), notify: true) }
    }

    private func deliverReports(_ packet: [UInt8], batch: inout [AdvertisementReport],
                                reassembler: inout ExtendedReportReassembler) {
        let subscribers = state.withLock { $0.subscribers }
        var companies: [UInt16] = []
        for s in subscribers.values where !companies.contains(s.companyID) { companies.append(s.companyID) }
        batch.removeAll(keepingCapacity: true)
        let counts: ExtractionCounts?
        do {
            counts = try AdvertisementExtractor.extract(packet: packet, companyIDs: companies, timestamp: clock.now,
                                                        reassembler: &reassembler, into: &batch)
        } catch {
            counts = nil
        }
        for report in batch {
            for s in subscribers.values where s.companyID == report.companyID { s.continuation.yield(report) }
        }
        state.withLock { s in
            s.statistics.events += 1
            guard let counts else { s.statistics.malformed += 1; return }
            s.statistics.reportsDelivered += counts.matched
            s.statistics.reportsIgnored += counts.ignored
            s.statistics.malformed += counts.malformed
            s.statistics.fragmentsDropped += counts.fragments
        }
    }

    /// Marks the controller failed, fails the pending command and finishes every subscriber.
    private func fail(_ error: HCIError, notify: Bool) {
        let (pending, subscribers, first): (Pending?, [Subscriber], Bool) = state.withLock { s in
            let first = s.failure == nil
            if first { s.failure = error }
            let p = s.pending
            s.pending = nil
            let subs = Array(s.subscribers.values)
            s.subscribers = [:]
            return (p, subs, first)
        }
        pending?.continuation.resume(throwing: error)
        for s in subscribers {
            if notify { s.continuation.finish(throwing: error) } else { s.continuation.finish() }
        }
        if first && notify { onFailure(error) }
    }
}

extension HCIController {
    /// A controller for a backend (central or peripheral), with the backend's status: the status starts
    /// as `starting`, and a controller failure is logged and shows there as `stopped` with its reason.
    static func withStatus(channel: any HCIChannel, adapter: String, clock: RadioClock = RadioClock(),
                           logger: Logger) -> (HCIController, RadioStatusBroadcaster) {
        let broadcaster = RadioStatusBroadcaster(RadioStatus(adapter: adapter, state: .starting))
        let controller = HCIController(channel: channel, adapter: adapter, clock: clock) { error in
            logger.error("HCI controller failed: \(error)")
            broadcaster.update { $0.state = .stopped; $0.lastError = error.description }
        }
        return (controller, broadcaster)
    }
}

