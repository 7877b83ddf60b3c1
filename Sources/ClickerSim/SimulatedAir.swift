import ClickerTransport
import Synchronization

/// A simulated BLE radio environment: advertisers, scanners, collisions, GATT connections.
///
/// A discrete-event simulator (one priority queue of timed events, no task per device).
/// With `AirClock.virtual` nothing happens until you call `run(until:)` (or `advance`),
/// and a run depends only on the seed and on what was scheduled, in which order.
/// With `AirClock.realTime` a driver task paces events to the wall clock.
///
/// ```swift
/// let air = SimulatedAir(AirConfiguration(seed: 7))
/// let central = air.central()
/// let reports = central.advertisements(companyID: 0xFFFF)   // scanning starts now
/// for i in 0..<300 {
///     try await air.addPeripheral().advertise(AdvertisingPayload(companyID: 0xFFFF, data: [UInt8(i % 256)]))
/// }
/// air.run(until: RadioInstant(nanoseconds: 5_000_000_000))
/// air.finishAdvertisementStreams()
/// for try await r in reports { ... }                     // drains what was heard, then ends
/// ```
public final class SimulatedAir: Sendable {
    public let configuration: AirConfiguration
    let core: Mutex<AirCore>
    private let driver = Mutex<Task<Void, Never>?>(nil)
    /// Wall-clock start (ns on `RadioInstant.now()`), for the real-time clock.
    private let wallStart: UInt64
    private let speed: Double
    /// Tasks asleep on ``clock`` (virtual air).
    let sleepers = AirSleepers()

    public init(_ configuration: AirConfiguration = AirConfiguration()) {
        self.configuration = configuration
        switch configuration.clock {
        case .virtual:
            wallStart = 0
            speed = 0
            core = Mutex(AirCore(config: configuration, start: 0))
        case .realTime(let s):
            let start = RadioInstant.now().nanoseconds
            wallStart = start
            speed = s > 0 && s.isFinite ? s : 1
            core = Mutex(AirCore(config: configuration, start: start))
            startDriver()
        }
    }

    deinit {
        driver.withLock { $0?.cancel() }
    }

    public var isVirtual: Bool { configuration.clock == .virtual }

    /// Simulated seconds per wall second on real-time air.
    var realTimeSpeed: Double { speed }

    /// The simulator's current instant.
    public var now: RadioInstant { RadioInstant(nanoseconds: core.withLock { $0.now }) }

    /// Counters of what happened so far.
    public var statistics: AirStatistics { core.withLock { $0.stats } }

    /// Addresses of the devices present in the air, ascending.
    public var devices: [DeviceAddress] {
        core.withLock { c in c.devices.filter(\.present).map(\.address).sorted() }
    }

    /// Runs the simulator on `body`, then delivers what it produced outside the lock.
    /// In real-time mode the simulator first catches up with the wall clock.
    @discardableResult
    func withCore<T: Sendable, E: Error>(_ body: (AirCore) throws(E) -> T) throws(E) -> T {
        let target = isVirtual ? nil : wallNow()
        let (result, outputs): (Result<T, E>, [Output]) = core.withLock { c in
            if let target { _ = c.run(until: target) }
            let r: Result<T, E>
            do throws(E) { r = .success(try body(c)) } catch { r = .failure(error) }
            return (r, c.takeOutputs())
        }
        for o in outputs { o.deliver() }
        return try result.get()
    }

    // MARK: Devices and transports

    /// Adds a peripheral to the air (present but silent until it advertises).
    /// `address` defaults to a fresh random-static-style address; `rssi` (dBm) to a random
    /// value in `configuration.defaultRSSIRange`. An address already known returns that device.
    public func addPeripheral(address: DeviceAddress? = nil, rssi: Double? = nil) -> SimulatedPeripheral {
        let a = withCore { $0.addDevice(address: address, rssi: rssi).address }
        return SimulatedPeripheral(air: self, address: a)
    }

    /// The central side of the air (the laptop; in a hall, its first receiver). Several centrals of one
    /// receiver share its scanners.
    public func central() -> SimulatedCentral { SimulatedCentral(air: self, receiver: 0) }

    /// One central per receiver of the hall (`LectureHall.receivers`, in order), or the one central.
    public func centrals() -> [SimulatedCentral] {
        (0..<(configuration.hall?.receivers.count ?? 1)).map { SimulatedCentral(air: self, receiver: $0) }
    }

    /// Every receiver as the tally's one central: ``centrals()`` merged (`MergedCentral.combining`),
    /// each named after its place in the hall. Without a hall, the one central itself.
    public func receivingCentral() -> any CentralTransport {
        let names = configuration.hall?.receivers.map(\.description) ?? ["simulated air"]
        return MergedCentral.combining(zip(names, centrals()).map { MergedCentral.Member(name: $0, central: $1) })
    }

    // MARK: Scripting

    /// Schedules `action` to run inside the simulator at `time` (or now, if that has passed).
    /// Actions at the same instant run in the order they were scheduled.
    public func schedule(at time: RadioInstant, _ action: @escaping ScriptAction) {
        withCore { $0.schedule(.script(action), at: time.nanoseconds) }
    }

    /// Schedules `action` `delay` after the simulator's current instant.
    public func schedule(after delay: Duration, _ action: @escaping ScriptAction) {
        withCore { $0.schedule(.script(action), at: $0.now.adding(delay.clampedNanoseconds)) }
    }

    /// Runs `action` inside the simulator right now and returns its result.
    public func perform<T: Sendable, E: Error>(_ action: (SimulationContext) throws(E) -> T) throws(E) -> T {
        try withCore { (c: AirCore) throws(E) -> T in try action(SimulationContext(core: c)) }
    }

    // MARK: Virtual time

    /// Virtual clock: runs every event up to and including `time`, delivering reports and
    /// read results as it goes. Does nothing with the real-time clock (the driver runs it).
    public func run(until time: RadioInstant) {
        guard isVirtual else { return }
        while !runStep(until: time.nanoseconds, stopAtOutput: false) {}
    }

    /// Runs events towards `time` and delivers what they gave; stops at the first sleeper's deadline
    /// and wakes it (``clock``), after 4096 events, and with `stopAtOutput` after the first event that
    /// delivered something. Returns whether the clock stands at `time`.
    private func runStep(until time: UInt64, stopAtOutput: Bool) -> Bool {
        let stop = Swift.min(time, sleepers.nextDeadline ?? .max)
        let (done, outputs) = core.withLock { c in
            (c.run(until: stop, maxEvents: 4096, stopAtOutput: stopAtOutput), c.takeOutputs())
        }
        for o in outputs { o.deliver() }
        if done { sleepers.wake(upTo: stop) }
        return done && stop >= time
    }

    /// Virtual clock: runs for `duration` from now.
    public func run(for duration: Duration) {
        run(until: RadioInstant(nanoseconds: now.nanoseconds.adding(duration.clampedNanoseconds)))
    }

    /// Virtual clock: runs up to `time` in steps of `quantum`, yielding to other tasks between
    /// steps so that consumers (a tally pipeline, a pending GATT read) can react in between.
    public func advance(until time: RadioInstant, quantum: Duration = .milliseconds(10)) async {
        guard isVirtual else { return }
        let q = Swift.max(1, quantum.clampedNanoseconds)
        while now < time {
            run(until: RadioInstant(nanoseconds: Swift.min(time.nanoseconds, now.nanoseconds.adding(q))))
            await Task.yield()
        }
    }

    /// Virtual clock: runs up to `time` one delivery at a time, and awaits `settled` after each event
    /// that delivered something (reports, a read's result, a sleeper woken) and after each `quantum`.
    /// The clock stands still while `settled` runs, so what a delivery set going elsewhere (a tally
    /// taking a report in, the GATT read it asks for, the read's result taken in) happens at the
    /// delivery's instant on the air's clock, however late its task gets a thread; `settled` returns
    /// once it has. With a `settled` that returns only then, a run depends on the seed and the script
    /// alone, not on the machine's load (as a testing event loop runs what it woke before its clock moves).
    public func advance(until time: RadioInstant, quantum: Duration = .milliseconds(10),
                        settling settled: () async -> Void) async {
        guard isVirtual else { return }
        let q = Swift.max(1, quantum.clampedNanoseconds)
        await settled()
        while now < time {
            let step = Swift.min(time.nanoseconds, now.nanoseconds.adding(q))
            var reached = false
            while !reached {
                reached = runStep(until: step, stopAtOutput: true)
                await settled()
            }
        }
    }

    /// Number of GATT reads not yet finished (queued, connecting or connected).
    public var pendingReads: Int { core.withLock { $0.requests.count } }

    /// Finishes every advertisement stream (as if the radio went away cleanly): consumers
    /// then drain what was buffered and their loops end. Scanning stops.
    public func finishAdvertisementStreams() {
        withCore { $0.finishReportStreams() }
    }

    // MARK: Real time

    func wallNow() -> UInt64 {
        let elapsed = Double(RadioInstant.now().nanoseconds &- wallStart)
        return wallStart.adding(UInt64(Swift.min(9.0e18, elapsed * speed)))
    }

    private func startDriver() {
        let task = Task.detached(priority: .userInitiated) { [weak self] in
            while !Task.isCancelled {
                guard let wait = self?.pump() else { return }
                try? await Task.sleep(for: wait)
            }
        }
        driver.withLock { $0 = task }
    }

    /// Runs everything due by the wall clock; returns how long to sleep.
    private func pump() -> Duration {
        let target = wallNow()
        let (outputs, next) = core.withLock { c in
            _ = c.run(until: target)
            return (c.takeOutputs(), c.queue.nextTime)
        }
        for o in outputs { o.deliver() }
        let maxSleep: UInt64 = 2_000_000
        let simWait = next.map { $0 > target ? $0 - target : 0 } ?? maxSleep
        let wallWait = Swift.min(maxSleep, UInt64(Double(simWait) / speed))
        return .nanoseconds(Int64(Swift.max(100_000, wallWait)))
    }

    /// Stops the real-time driver (virtual air needs no stopping). Streams stay open.
    public func stop() {
        driver.withLock { $0?.cancel(); $0 = nil }
    }
}

/// The central (laptop) side of a `SimulatedAir`: the controllers of one receiver.
public struct SimulatedCentral: CentralTransport, BroadcasterTransport {
    public let air: SimulatedAir
    /// Its index in `LectureHall.receivers` (0 without a hall).
    public let receiver: Int

    /// The address listeners hear its broadcast under: `BroadcastConfiguration.centralAddress` for the
    /// first receiver, with the receiver's index in the fourth byte from the right for the others.
    public var address: DeviceAddress { AirCore.address(ofReceiver: receiver, air.configuration) }

    /// Reports every PDU the scanners hear with manufacturer data under `companyID`.
    /// Scanning starts when the stream is created (synchronously) and stops when every
    /// consumer is gone (task cancelled or stream dropped). Buffers without bound.
    public func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        let (stream, continuation) = AsyncThrowingStream<AdvertisementReport, any Error>.makeStream()
        let air = self.air, k = receiver
        let id = air.withCore { c in
            let id = c.makeID()
            c.stations[k].reportSubscribers[id] = (companyID, continuation)
            c.updateScanning(c.stations[k])
            return id
        }
        continuation.onTermination = { _ in
            air.withCore { c in
                c.stations[k].reportSubscribers[id] = nil
                c.updateScanning(c.stations[k])
            }
        }
        return stream
    }

    /// Connects (when the device's next connectable PDU is heard), reads, disconnects.
    /// Fails with `TransportError.notConnected` when the device is not in the air or leaves,
    /// `.characteristicNotFound` when it serves no such value, `.timeout` after `timeout`
    /// (on the simulator's clock), and `CancellationError` when the task is cancelled.
    public func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                                   timeout: Duration) async throws -> [UInt8] {
        let air = self.air, k = receiver
        let id = air.core.withLock { $0.makeID() }
        let key = GATTKey(service: service, characteristic: characteristic)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (cont: CheckedContinuation<[UInt8], any Error>) in
                air.withCore { c in
                    c.beginRead(id: id, at: c.stations[k], address: device, key: key, timeout: timeout.clampedNanoseconds, continuation: cont)
                }
            }
        } onCancel: {
            air.withCore { $0.cancelRead(id: id) }
        }
    }

    // MARK: Broadcasting (BroadcasterTransport)

    /// Legacy non-connectable advertising (27 bytes of manufacturer data per frame), or extended
    /// advertising (247) when `BroadcastConfiguration.extended`. A frame holds the air for one event
    /// (interval + 5 ms mean advDelay), or with `BroadcastConfiguration.frameDwell` for the dwell and
    /// the event after it (dwell + 25 ms, an event at 20 ms).
    public func broadcastCapabilities() async throws -> BroadcastCapabilities {
        let b = air.configuration.broadcast
        let caps: BroadcastCapabilities = b.extended ? .extended : .legacy
        guard let dwell = b.frameDwell else { return caps }
        return caps.withFrameTime(slack: .milliseconds(5), minimum: dwell + .milliseconds(25))
    }

    /// Starts or replaces the central's broadcast (see `BroadcastConfiguration` for its physics).
    /// Throws `TransportError.unsupported` for no frame or a frame over the capabilities' length; an interval outside
    /// 20 ms...10.24 s is clamped and noted in `status()`.
    public func broadcast(_ payload: BroadcastPayload) async throws {
        let k = receiver
        try air.withCore { c in try c.startBroadcast(payload, at: c.stations[k]) }
    }

    public func stopBroadcasting() async throws {
        let k = receiver
        air.withCore { c in c.stopBroadcast(at: c.stations[k]) }
    }

    public func status() -> AsyncStream<RadioStatus> {
        let (stream, continuation) = AsyncStream<RadioStatus>.makeStream()
        let air = self.air, k = receiver
        let id = air.withCore { c in
            let id = c.makeID()
            c.stations[k].statusSubscribers[id] = continuation
            c.outputs.append(.status(continuation, c.centralStatus(c.stations[k])))
            return id
        }
        continuation.onTermination = { _ in
            air.withCore { c in c.stations[k].statusSubscribers[id] = nil }
        }
        return stream
    }
}

/// One peripheral (a student's board) in a `SimulatedAir`.
public struct SimulatedPeripheral: PeripheralTransport, ListenerTransport {
    public let air: SimulatedAir
    public let address: DeviceAddress

    /// Starts advertising or replaces the payload (taking effect at the next advertising event).
    /// Throws `TransportError.unsupported` when the data does not fit a legacy advertising PDU.
    /// An interval outside 20 ms...10.24 s is clamped and noted in `status()`.
    public func advertise(_ payload: AdvertisingPayload) async throws {
        let address = self.address
        try air.withCore { c in try c.advertise(c.addDevice(address: address, rssi: nil), payload) }
    }

    public func stopAdvertising() async throws {
        let address = self.address
        air.withCore { c in if let d = c.device(address) { c.stopAdvertising(d) } }
    }

    public func publish(service: UUID128, characteristic: UUID128, value: [UInt8]) async throws {
        let address = self.address
        air.withCore { c in
            c.addDevice(address: address, rssi: nil).gatt[GATTKey(service: service, characteristic: characteristic)] = value
        }
    }

    /// The reports the air has handed to this device's listening streams (one per stream), each in
    /// the stream once the air's step that delivered it returns: a test that moves the virtual clock
    /// compares it with what a listener took from its stream.
    public var reportsHeard: Int {
        let address = self.address
        return air.withCore { c in c.device(address)?.reportsListened ?? 0 }
    }

    /// Listens for the central's broadcast under `companyID`, one channel at a time at `dutyCycle`,
    /// starting now on the first of `BroadcastConfiguration.listenChannels`. Listening stops when every
    /// stream is gone; the stream finishes when the device leaves. Buffers up to
    /// `BroadcastConfiguration.listenBuffer` frames (by default without bound).
    public func listen(companyID: UInt16, dutyCycle: ScanDutyCycle) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        let air = self.air, address = self.address
        let (stream, continuation) = AsyncThrowingStream<AdvertisementReport, any Error>.makeStream(
            bufferingPolicy: air.configuration.broadcast.listenBuffer.map { .bufferingNewest(max(1, $0)) } ?? .unbounded)
        let id = air.withCore { c in
            let id = c.makeID()
            c.listen(c.addDevice(address: address, rssi: nil), id: id, companyID: companyID, dutyCycle: dutyCycle,
                     sink: .stream(continuation))
            return id
        }
        continuation.onTermination = { _ in
            air.withCore { c in if let d = c.device(address) { c.stopListening(d, id: id) } }
        }
        return stream
    }

    /// The device leaves the air (advertising, listening, GATT and open connections end). Advertising again brings it back.
    public func shutdown() async {
        let address = self.address
        air.withCore { c in if let d = c.device(address) { c.remove(d) } }
    }

    public func status() -> AsyncStream<RadioStatus> {
        let (stream, continuation) = AsyncStream<RadioStatus>.makeStream()
        let air = self.air, address = self.address
        let id = air.withCore { c in
            let id = c.makeID()
            if let d = c.device(address) {
                d.statusSubscribers[id] = continuation
                c.outputs.append(.status(continuation, d.status))
            }
            return id
        }
        continuation.onTermination = { _ in
            air.withCore { c in c.device(address)?.statusSubscribers[id] = nil }
        }
        return stream
    }
}
