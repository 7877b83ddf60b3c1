import Synchronization

/// Several radios of one machine as one central: a laptop's own adapter and a USB one, or two
/// adapters at the front and the back of a hall. Every radio scans; the reports of all of them reach
/// the one consumer; a GATT read goes to the radio that heard the device last. A radio that fails
/// stops only itself: the others keep delivering, and ``status()`` says which one failed.
///
/// The radios must share one clock (`RadioInstant`): the reports keep their own timestamps and
/// RSSI, and the consumer takes them as one sequence on one time line. The backends of one process
/// do: BlueZ stamps a report with its `RadioClock` when its signal arrives (by default on the timeline
/// of `RadioInstant.now()`), raw HCI with the clock it is given (the executables give it
/// `RadioInstant.now`), and the simulated air has one clock for everything on it.
///
/// A ballot heard by two radios arrives twice; that is the tally's business and it already handles
/// it (a repeat of a counted ballot counts nothing), as it does a ballot one radio hears twice.
///
/// ``combining(_:)`` makes one: a single radio is returned as it is (nothing changes for one
/// adapter), several radios of which any can broadcast give a ``MergedBroadcastingCentral``.
public final class MergedCentral: CentralTransport {
    /// One radio and the name it goes by on screen until its own status names it.
    public struct Member: Sendable {
        public var name: String
        public var central: any CentralTransport

        public init(name: String, central: any CentralTransport) {
            self.name = name
            self.central = central
        }
    }

    public let members: [Member]
    let core: MergedCore

    /// Reports kept for a consumer that falls behind, across all radios (as many as one BlueZ central keeps).
    public static let reportBufferLimit = 1 << 18

    public init(_ members: [Member]) {
        self.members = members
        core = MergedCore(names: members.map(\.name))
    }

    /// The central of `members`: the one radio itself when there is one, else the radios merged, with
    /// broadcasting when any of them broadcasts.
    public static func combining(_ members: [Member]) -> any CentralTransport {
        if members.count == 1 { return members[0].central }
        let merged = MergedCentral(members)
        return members.contains { $0.central is any BroadcasterTransport } ? MergedBroadcastingCentral(merged) : merged
    }

    /// The merged central behind `central` (itself, or the one a ``MergedBroadcastingCentral`` wraps);
    /// nil for a single radio.
    public static func of(_ central: any CentralTransport) -> MergedCentral? {
        (central as? MergedCentral) ?? (central as? MergedBroadcastingCentral)?.merged
    }

    /// Reports dropped because the consumer fell more than ``reportBufferLimit`` behind all radios together.
    public var droppedReports: Int { core.state.withLock { $0.dropped } }

    /// Devices remembered for routing reads (bounded: those not heard for two minutes are forgotten
    /// once the table has grown).
    public var devicesRemembered: Int { core.devicesRemembered }

    /// Stops following the radios' status; the status streams finish. Shut the radios down yourself.
    public func shutdown() { core.shutdown() }

    // MARK: CentralTransport

    public func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        let batches = advertisementBatches(companyID: companyID)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await batch in batches { for r in batch { continuation.yield(r) } }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Every radio's reports, in the batches each delivers, in the order they arrive. The batches end
    /// when the consumer stops, or when every radio's reports ended; they throw only when every radio
    /// failed (the first failure). A radio that fails before the others shows in ``status()``.
    public func advertisementBatches(companyID: UInt16) -> AdvertisementBatches {
        core.watch(members)
        let queue = ReportQueue(limit: Self.reportBufferLimit)
        guard !members.isEmpty else {
            queue.finish(throwing: TransportError.radioUnavailable("no adapter given"))
            return queue.batches
        }
        let ending = Ending(members.count)
        let count = members.count
        let tasks = members.enumerated().map { i, member in
            Task { [core] in
                var failure: (any Error)?
                do {
                    for try await batch in member.central.advertisementBatches(companyID: companyID) {
                        core.heard(batch, by: i, of: count)
                        let dropped = queue.append(contentsOf: batch)
                        if dropped > 0 { core.state.withLock { $0.dropped += dropped } }
                    }
                } catch {
                    failure = error
                    if !Task.isCancelled { core.failed(i, error) }
                }
                let (last, error) = ending.state.withLock { e -> (Bool, (any Error)?) in
                    e.left -= 1
                    if let failure { e.failures.append(failure) }
                    return (e.left == 0, e.failures.count == count ? e.failures.first : nil)
                }
                if last { queue.finish(throwing: error) }
            }
        }
        queue.onTermination { for t in tasks { t.cancel() } }
        return queue.batches
    }

    /// Reads from the radio that heard `device` most recently, then from the others that heard it, most
    /// recent first, while they fail; from every radio in order when none heard it. Each try has `timeout`.
    ///
    /// Most recent rather than strongest: a radio's stack knows a device (BlueZ keeps its Device1
    /// object, a controller its address) while it keeps hearing it, so the radio that heard it last is
    /// the one most likely to connect now; and one report's RSSI varies by 10 dB and more with fading
    /// and bodies in the way, so the strongest report says little about which radio is nearer. A radio
    /// that never heard the device is not asked while another did: BlueZ cannot connect to a device it
    /// has no object for, and a try costs the radio's air time.
    ///
    /// Throws the first radio's error when all fail, or `TransportError.unsupported` when every radio
    /// tried said it has no GATT client (a radio without one does not turn reads off for the others).
    public func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                                   timeout: Duration) async throws -> [UInt8] {
        let order = core.readOrder(of: device, count: members.count)
        var failure: (any Error)?
        var unsupported: (any Error)?
        for i in order {
            try Task.checkCancellation()
            do {
                return try await members[i].central.readCharacteristic(device: device, service: service,
                                                                       characteristic: characteristic, timeout: timeout)
            } catch let e as CancellationError {
                throw e
            } catch TransportError.unsupported(let why) {
                if unsupported == nil { unsupported = TransportError.unsupported(why) }
            } catch {
                if failure == nil { failure = error }
            }
        }
        throw failure ?? unsupported ?? TransportError.radioUnavailable("no adapter given")
    }

    /// One status for all the radios (``MergedRadioStatus/combined``), now and on every change.
    public func status() -> AsyncStream<RadioStatus> {
        core.watch(members)
        return core.broadcaster.stream()
    }
}

/// How many radios' reports still run, and the failures of those that ended.
private final class Ending: Sendable {
    let state: Mutex<(left: Int, failures: [any Error])>
    init(_ count: Int) { state = Mutex((count, [])) }
}

/// What the merged central remembers: each radio's status and failure, which radio heard which
/// device when, and the reports dropped.
final class MergedCore: Sendable {
    struct State {
        var status: MergedRadioStatus
        /// Per device, per radio: the timestamp (ns) + 1 of the last report that radio delivered (0: never).
        var heard: [DeviceAddress: [UInt64]] = [:]
        var newest: UInt64 = 0
        var pruneAt = MergedCore.pruneFloor
        var dropped = 0
        var watchers: [Task<Void, Never>]? = nil
        var closed = false
    }

    let state: Mutex<State>
    let broadcaster: RadioStatusBroadcaster

    /// Devices not heard for this long are forgotten once the table has grown (a device's random
    /// address changes; the table must not grow with the hours).
    static let forgetAfter: UInt64 = 120_000_000_000
    static let pruneFloor = 4096

    init(names: [String]) {
        let status = MergedRadioStatus(names: names)
        state = Mutex(State(status: status))
        broadcaster = RadioStatusBroadcaster(status.combined)
    }

    /// Starts following every radio's status, once.
    func watch(_ members: [MergedCentral.Member]) {
        state.withLock { s in
            guard s.watchers == nil, !s.closed else { return }
            s.watchers = members.enumerated().map { i, member in
                Task { [weak self] in
                    for await status in member.central.status() {
                        guard let self else { return }
                        self.change { $0.radios[i] = status }
                    }
                }
            }
        }
    }

    func shutdown() {
        let watchers = state.withLock { s in
            s.closed = true
            defer { s.watchers = [] }
            return s.watchers ?? []
        }
        for w in watchers { w.cancel() }
        broadcaster.close()
    }

    /// Applies `body` and publishes the merged status (under the lock, so changes go out in order).
    func change(_ body: (inout MergedRadioStatus) -> Void) {
        state.withLock { s in
            body(&s.status)
            let combined = s.status.combined
            broadcaster.update { $0 = combined }
        }
    }

    func failed(_ i: Int, _ error: any Error) {
        change { $0.failures[i] = "\(error)" }
    }

    func broadcastFailed(_ i: Int, _ error: (any Error)?) {
        state.withLock { s in
            let text = error.map { "\($0)" }
            guard s.status.broadcastFailures[i] != text else { return }
            s.status.broadcastFailures[i] = text
            let combined = s.status.combined
            broadcaster.update { $0 = combined }
        }
    }

    func heard(_ batch: [AdvertisementReport], by radio: Int, of count: Int) {
        guard !batch.isEmpty else { return }
        state.withLock { s in
            for r in batch {
                let t = r.timestamp.nanoseconds &+ 1
                if t > s.newest { s.newest = t }
                if s.heard[r.address] == nil { s.heard[r.address] = [UInt64](repeating: 0, count: count) }
                if let old = s.heard[r.address]?[radio], t > old { s.heard[r.address]?[radio] = t }
            }
            guard s.heard.count >= s.pruneAt else { return }
            let horizon = s.newest > Self.forgetAfter ? s.newest - Self.forgetAfter : 0
            s.heard = s.heard.filter { ($0.value.max() ?? 0) > horizon }
            s.pruneAt = max(Self.pruneFloor, s.heard.count * 2)
        }
    }

    /// The radios to read `device` from, in order (``MergedCentral/readCharacteristic(device:service:characteristic:timeout:)``).
    func readOrder(of device: DeviceAddress, count: Int) -> [Int] {
        let times = state.withLock { $0.heard[device] } ?? []
        let heard = times.indices.filter { times[$0] > 0 }.sorted { (times[$0], -$0) > (times[$1], -$1) }
        return heard.isEmpty ? Array(0..<count) : heard
    }

    var devicesRemembered: Int { state.withLock { $0.heard.count } }
}
