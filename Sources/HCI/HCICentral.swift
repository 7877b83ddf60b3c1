import ClickerTransport
import Logging
import Synchronization

/// The central (scanning) side over raw HCI (`clicker-tally --radio hci --adapter hci0`).
///
/// Takes the adapter's HCI user channel (see `HCISocket`: the adapter must be down, and the
/// process needs CAP_NET_ADMIN), resets the controller and scans with LE Set Scan Parameters /
/// LE Set Scan Enable at the configured duty cycle (100 % by default) with duplicate filtering
/// off, so every advertisement reaches the tally. LE Advertising Reports (and LE Extended
/// Advertising Reports, should the controller send them) are decoded on a dedicated reader thread.
///
/// On a controller that announces LE Extended Advertising (LE features bit 12), the scan uses LE Set
/// Extended Scan Parameters / Enable instead, because the beacon (CentralBroadcast.swift) then goes
/// out as an extended advertising set and a controller takes one command family only.
///
/// Scanning starts with the first `advertisements(companyID:)` stream and stops when the last
/// one is cancelled. `readCharacteristic` is not implemented (no LE connections or ATT client
/// over raw HCI): it throws `TransportError.unsupported`, so ballots are counted from
/// advertisements alone.
public final class HCICentral: CentralTransport {
    /// Scanning options.
    public struct Options: Sendable {
        /// LE scan interval (2.5 ms – 10.24 s, rounded to 0.625 ms).
        public var scanInterval: Duration
        /// LE scan window (≤ interval). Equal to the interval: listen 100 % of the time.
        public var scanWindow: Duration
        /// Active scanning (send SCAN_REQ, also receive SCAN_RSP). Passive by default: the vote is in the advertisement.
        public var activeScanning: Bool
        /// Ask the controller to drop duplicate reports. Off by default: the tally wants every report.
        public var filterDuplicates: Bool
        /// Send HCI Reset before configuring.
        public var resetController: Bool
        /// How long to wait for each command's Command Complete.
        public var commandTimeout: Duration
        /// Executable name used in the `setcap` advice of permission errors.
        public var programName: String
        /// When set, scanning is disabled and re-enabled this often. Real controllers report every
        /// advertisement without it; emulated ones (BlueZ's btvirt) report an advertiser only when
        /// scanning or advertising is (re)enabled, so the tally needs this to see changed votes there.
        public var scanRestartInterval: Duration?
        /// The backend's one clock: it stamps reports and status changes, the scan restart and the
        /// beacon's frame rotation wait on it, and a command times out once `commandTimeout` has passed
        /// on it (the continuous clock by default; tests step a clock of their own).
        public var clock: RadioClock

        public init(scanInterval: Duration = .milliseconds(100), scanWindow: Duration? = nil,
                    activeScanning: Bool = false, filterDuplicates: Bool = false, resetController: Bool = true,
                    commandTimeout: Duration = .seconds(2), programName: String = "clicker-tally",
                    scanRestartInterval: Duration? = nil, clock: RadioClock = RadioClock()) {
            self.clock = clock
            self.scanRestartInterval = scanRestartInterval
            self.scanInterval = scanInterval
            self.scanWindow = scanWindow ?? scanInterval
            self.activeScanning = activeScanning
            self.filterDuplicates = filterDuplicates
            self.resetController = resetController
            self.commandTimeout = commandTimeout
            self.programName = programName
        }
    }

    struct State {
        var initialized = false
        /// Legacy or extended commands, decided once when the controller is set up.
        var mode = HCIAdvertisingMode.legacy
        var scanning = false
        /// The beacon being broadcast, if any (CentralBroadcast.swift).
        var broadcast: BroadcastRun?
        /// Bumped by every broadcast change, so that a rotation step of a replaced payload does nothing.
        var broadcastGeneration: UInt64 = 0
        var shutDown = false
        var controllerAddress: DeviceAddress?
        var restartTask: Task<Void, Never>?
        /// The controller refused LE Set Random Address while scanning (CentralBroadcast.swift).
        var addressChangePausesScan = false
    }

    public let adapter: String
    public let options: Options
    let controller: HCIController
    let broadcaster: RadioStatusBroadcaster
    let state = Mutex(State())
    let opLock = AsyncLock()
    let logger: Logger

    /// Opens the HCI user channel of `adapter` (`hci0`, …). Throws `HCIError` when the kernel has
    /// no Bluetooth, the adapter is missing or up (managed by bluetoothd), or a capability is missing.
    public convenience init(adapter: String, options: Options = Options(),
                            logger: Logger = Logger(label: "clicker.hci.central")) throws(HCIError) {
        let socket = try HCISocket.open(adapter: adapter, program: options.programName)
        self.init(channel: socket, adapter: adapter, options: options, logger: logger)
    }

    /// Runs over any packet channel (a test controller, a serial H4 link, …).
    public init(channel: any HCIChannel, adapter: String, options: Options = Options(),
                logger: Logger = Logger(label: "clicker.hci.central")) {
        self.adapter = adapter
        self.options = options
        self.logger = logger
        (controller, broadcaster) = HCIController.withStatus(channel: channel, adapter: adapter, clock: options.clock, logger: logger)
    }

    deinit { controller.stop() }

    /// What the reader has seen so far.
    public func statistics() -> HCIStatistics { controller.statistics }

    /// Streams registered with the controller (tests use it as an acknowledgement: a stream counts
    /// once its registration, which runs one at a time with every other start and stop, is done).
    var subscriberCount: Int { controller.subscriberCount }

    public func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        let (stream, continuation) = AsyncThrowingStream<AdvertisementReport, any Error>.makeStream(
            bufferingPolicy: .bufferingNewest(8192))
        let terminated = Subscription()
        continuation.onTermination = { [weak self] _ in
            terminated.state.withLock { $0.done = true }
            guard let self else { return }
            Task { await self.unsubscribe(terminated) }
        }
        Task { await subscribe(companyID: companyID, continuation: continuation, terminated: terminated) }
        return stream
    }

    private func subscribe(companyID: UInt16, continuation: HCIController.ReportContinuation,
                           terminated: Subscription) async {
        _ = try? await opLock.run { [self] in
            guard !terminated.state.withLock({ $0.done }) else { return }
            do {
                guard !state.withLock({ $0.shutDown }) else { throw HCIError.closed("central was shut down") }
                try await ensureInitialized()
                let id = try controller.addSubscriber(companyID: companyID, continuation: continuation)
                terminated.state.withLock { $0.id = id }
                if !state.withLock({ $0.scanning }) { try await startScanning() }
            } catch {
                logger.error("cannot scan on \(adapter): \(error)")
                broadcaster.update { $0.lastError = "\(error)" }
                continuation.finish(throwing: error)
            }
        }
    }

    private func unsubscribe(_ terminated: Subscription) async {
        _ = try? await opLock.run { [self] in
            guard let id = terminated.state.withLock({ $0.id }) else { return }
            let remaining = controller.removeSubscriber(id)
            guard remaining == 0, state.withLock({ $0.scanning }), !controller.hasFailed else { return }
            do {
                try await stopScanning()
            } catch {
                logger.warning("could not stop scanning on \(adapter): \(error)")
                broadcaster.update { $0.lastError = "\(error)" }
            }
        }
    }

    /// Sets the controller up once, and decides its advertising mode (legacy or extended) for good.
    func ensureInitialized() async throws {
        guard !state.withLock({ $0.initialized }) else { return }
        let (address, mode) = try await controller.exclusively { [controller, options] in
            let address = try await initializeController(controller, reset: options.resetController, timeout: options.commandTimeout)
            return (address, await decideAdvertisingMode(controller, timeout: options.commandTimeout))
        }
        state.withLock { $0.initialized = true; $0.controllerAddress = address; $0.mode = mode }
        let described = modeDescription(mode)
        broadcaster.update { $0.adapter = "\(adapter) (\(address)\(described))" }
        logger.info("raw HCI central on \(adapter), controller \(address)\(described)")
    }

    /// The advertising mode this controller was given (legacy until it is set up).
    public var advertisingMode: HCIAdvertisingMode { state.withLock { $0.mode } }

    private func startScanning() async throws {
        let range = HCITimeSlots.scanIntervalRange
        let interval = HCITimeSlots.slots(options.scanInterval, clampedTo: range)
        let window = min(HCITimeSlots.slots(options.scanWindow, clampedTo: range), interval)
        let mode = state.withLock { $0.mode }
        let parameters = try HCICommand.scanParameters(
            ScanParameters(active: options.activeScanning, interval: interval, window: window), mode: mode)
        try await controller.exclusively { [controller, options] in
            _ = try await controller.executeNow(parameters, timeout: options.commandTimeout)
            _ = try await controller.executeNow(.scanEnable(true, filterDuplicates: options.filterDuplicates, mode: mode),
                                                timeout: options.commandTimeout)
        }
        state.withLock { $0.scanning = true }
        broadcaster.update { $0.state = .scanning; $0.lastDiscoveryRestart = options.clock.now; $0.lastError = nil }
        if let every = options.scanRestartInterval {
            let task = Task { [weak self, clock = options.clock] in
                while !Task.isCancelled {
                    try? await clock.sleep(for: every)
                    guard !Task.isCancelled, let self else { return }
                    await self.restartScanning()
                }
            }
            state.withLock { $0.restartTask = task }
        }
    }

    /// Scan Enable off and on again, so that emulated controllers report every advertiser anew.
    private func restartScanning() async {
        _ = try? await opLock.run { [self] in
            guard state.withLock({ $0.scanning && !$0.shutDown }), !controller.hasFailed else { return }
            let mode = state.withLock { $0.mode }
            do {
                try await withScanPaused(mode: mode) {}
                broadcaster.update { $0.lastDiscoveryRestart = options.clock.now }
            } catch {
                logger.warning("could not restart scanning on \(adapter): \(error)")
                broadcaster.update { $0.state = .recovering; $0.lastError = "\(error)" }
            }
        }
    }

    /// Scan Enable off, `commands` (sent with `executeNow`), Scan Enable on again, with no other
    /// command in between; the scan is enabled again even when one of `commands` fails, whose error
    /// is then thrown.
    func withScanPaused(mode: HCIAdvertisingMode, _ commands: @Sendable () async throws -> Void) async throws {
        try await controller.exclusively { [controller, options] in
            _ = try await controller.executeNow(.scanEnable(false, filterDuplicates: false, mode: mode),
                                                timeout: options.commandTimeout)
            var failure: (any Error)?
            do { try await commands() } catch { failure = error }
            _ = try await controller.executeNow(.scanEnable(true, filterDuplicates: options.filterDuplicates, mode: mode),
                                                timeout: options.commandTimeout)
            if let failure { throw failure }
        }
    }

    private func stopScanning() async throws {
        let task = state.withLock { s in
            defer { s.scanning = false; s.restartTask = nil }
            return s.restartTask
        }
        task?.cancel()
        let mode = state.withLock { $0.mode }
        _ = try await controller.execute(.scanEnable(false, filterDuplicates: false, mode: mode), timeout: options.commandTimeout)
        broadcaster.update { $0.state = .stopped }
    }

    /// Not available over raw HCI: this backend has no LE connection or ATT client.
    public func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                                   timeout: Duration) async throws -> [UInt8] {
        throw TransportError.unsupported(
            "GATT read over raw HCI (no LE connection/ATT client in the hci backend); "
                + "votes are counted from advertisements only — use --radio bluez to read ballots")
    }

    public func status() -> AsyncStream<RadioStatus> { broadcaster.stream() }

    /// Stops scanning, ends every advertisement stream and releases the adapter (the kernel
    /// powers it down and gives it back). Idempotent.
    public func shutdown() async {
        await opLock.lock()
        let (wasScanning, already, restart, run, mode) = state.withLock { s in
            defer {
                s.shutDown = true; s.scanning = false; s.restartTask = nil; s.broadcast = nil; s.broadcastGeneration += 1
            }
            return (s.scanning, s.shutDown, s.restartTask, s.broadcast, s.mode)
        }
        restart?.cancel()
        run?.rotation?.cancel()
        if run != nil && !already {
            _ = try? await controller.execute(Self.advertisingEnable(false, mode: mode), timeout: options.commandTimeout)
        }
        if wasScanning && !already {
            _ = try? await controller.execute(.scanEnable(false, filterDuplicates: false, mode: mode), timeout: options.commandTimeout)
        }
        controller.stop()
        await opLock.unlock()
        broadcaster.update { $0.state = .stopped }
        broadcaster.close()
    }
}

/// One `advertisements` stream's registration, shared by its start and its termination handler.
private final class Subscription: Sendable {
    /// `done`: the stream ended (do not register); `id`: the controller's subscriber id once registered.
    let state = Mutex<(done: Bool, id: UInt64?)>((false, nil))
}
