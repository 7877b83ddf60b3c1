import ClickerTransport
import Logging
import Synchronization

/// The peripheral (advertising) side over raw HCI (`clicker-vote --radio hci --adapter hci1`).
///
/// Takes the adapter's HCI user channel (see `HCISocket`: the adapter must be down, and the
/// process needs CAP_NET_ADMIN), resets the controller, then advertises with legacy commands:
/// LE Set Advertising Parameters with exactly the requested interval (min = max, 100 ms by
/// default: no bluetoothd "experimental" mode needed), LE Set Advertising Data (Flags +
/// Manufacturer Specific Data, ≤ 31 bytes), LE Set Advertising Enable. A new payload with the
/// same interval only replaces the data, while advertising continues; a new interval restarts
/// advertising with the new parameters.
///
/// No GATT server: serving the ballot would need an ATT server over L2CAP, which this backend
/// does not have. `publish` throws `TransportError.unsupported`, and advertising is always
/// non-connectable (ADV_NONCONN_IND by default), also when `connectable` is requested: a
/// connection we cannot serve would only stop the advertising. The status says so. The tally
/// then counts from advertisements alone.
///
/// Address: by default a fresh non-resolvable private address (NRPA) for each `HCIPeripheral`,
/// set with LE Set Random Address before the advertising parameters name own-address-type
/// random. `clicker-vote` opens one peripheral per run, and a run votes in one poll, so a device
/// cannot be linked across polls by its address. (The public address would link it for life.)
public final class HCIPeripheral: PeripheralTransport {
    /// Which address the advertisements come from.
    public enum AddressPolicy: Sendable, Equatable {
        /// A fresh non-resolvable private address, drawn when the controller is set up (default).
        case freshNonResolvablePrivate
        /// The controller's public address (a random static one when it has none): linkable across polls.
        case controllerPublic
        /// This random address, as given (tests, or a deliberate fixed identity).
        case random(DeviceAddress)
    }

    /// Advertising options.
    public struct Options: Sendable {
        /// PDU type used for the (always non-connectable) advertising; `.connectableUndirected`
        /// is replaced by `.nonConnectableUndirected` (no GATT server to connect to).
        public var advertisingType: LegacyAdvertisingType
        /// Advertising channels (bit 0 = 37, bit 1 = 38, bit 2 = 39).
        public var channelMap: UInt8
        /// Flags AD value (default: LE General Discoverable, BR/EDR not supported).
        public var flags: UInt8
        /// The advertising address (default: a fresh NRPA per peripheral, see ``AddressPolicy``).
        public var address: AddressPolicy
        /// Send HCI Reset before configuring.
        public var resetController: Bool
        /// How long to wait for each command's Command Complete.
        public var commandTimeout: Duration
        /// Executable name used in the `setcap` advice of permission errors.
        public var programName: String
        /// Disable and re-enable advertising around a data change instead of updating in place.
        /// Real controllers send new data from the next event on; emulated ones (BlueZ's btvirt)
        /// tell scanners only when advertising is (re)enabled.
        public var reenableOnUpdate: Bool

        public init(advertisingType: LegacyAdvertisingType = .nonConnectableUndirected, channelMap: UInt8 = 0x07,
                    flags: UInt8 = AdvertisingData.flagsGeneralDiscoverableLEOnly,
                    address: AddressPolicy = .freshNonResolvablePrivate,
                    resetController: Bool = true, commandTimeout: Duration = .seconds(2),
                    programName: String = "clicker-vote", reenableOnUpdate: Bool = false) {
            self.reenableOnUpdate = reenableOnUpdate
            self.advertisingType = advertisingType == .connectableUndirected ? .nonConnectableUndirected : advertisingType
            self.channelMap = channelMap
            self.flags = flags
            self.address = address
            self.resetController = resetController
            self.commandTimeout = commandTimeout
            self.programName = programName
        }
    }

    struct State {
        var initialized = false
        /// Legacy or extended commands, decided once when the controller is set up.
        var mode = HCIAdvertisingMode.legacy
        /// The scan of `listen` (PeripheralListening.swift): the duty cycle in slots while scanning.
        var scan: ScanParameters?
        var ownAddressType = OwnAddressType.publicAddress
        var address: DeviceAddress?
        /// Parameters asked for (before any fallback) and the data last set, while advertising.
        var requested: AdvertisingParameters?
        var data: [UInt8]?
        var advertising = false
        var shutDown = false
        var warnedConnectable = false
    }

    public let adapter: String
    public let options: Options
    let controller: HCIController
    let broadcaster: RadioStatusBroadcaster
    let state = Mutex(State())
    let opLock = AsyncLock()
    let logger: Logger

    /// Opens the HCI user channel of `adapter` (`hci1`, …). Throws `HCIError` when the kernel has
    /// no Bluetooth, the adapter is missing or up (managed by bluetoothd), or a capability is missing.
    public convenience init(adapter: String, options: Options = Options(),
                            logger: Logger = Logger(label: "clicker.hci.peripheral")) throws(HCIError) {
        let socket = try HCISocket.open(adapter: adapter, program: options.programName)
        self.init(channel: socket, adapter: adapter, options: options, logger: logger)
    }

    /// Runs over any packet channel (a test controller, a serial H4 link, …).
    public init(channel: any HCIChannel, adapter: String, options: Options = Options(),
                logger: Logger = Logger(label: "clicker.hci.peripheral")) {
        self.adapter = adapter
        self.options = options
        self.logger = logger
        (controller, broadcaster) = HCIController.withStatus(channel: channel, adapter: adapter, logger: logger)
    }

    deinit { controller.stop() }

    /// The address the advertisements come from, once advertising has started.
    public var advertisingAddress: DeviceAddress? { state.withLock { $0.address } }

    public func advertise(_ payload: AdvertisingPayload) async throws {
        try await opLock.run { [self] in
            guard !state.withLock({ $0.shutDown }) else { throw HCIError.closed("peripheral was shut down") }
            do {
                try await advertiseNow(payload)
            } catch {
                broadcaster.update { $0.lastError = "\(error)" }
                throw error
            }
        }
    }

    private func advertiseNow(_ payload: AdvertisingPayload) async throws {
        let data = try AdvertisingData.build(flags: options.flags, companyID: payload.companyID, payload: payload.data)
        try await ensureInitialized()
        var notes: [String] = []
        if payload.connectable {
            notes.append("connectable advertising requested, but the hci backend serves no GATT: advertising non-connectable")
            if !state.withLock({ s in defer { s.warnedConnectable = true }; return s.warnedConnectable }) {
                logger.warning("\(adapter): no GATT server over raw HCI; advertising non-connectable")
            }
        }
        let slots = HCITimeSlots.slots(payload.interval, clampedTo: HCITimeSlots.advertisingIntervalRange)
        if HCITimeSlots.duration(slots: slots) != payload.interval {
            notes.append("interval \(payload.interval) rounded to \(HCITimeSlots.duration(slots: slots))")
        }
        let type: LegacyAdvertisingType = options.advertisingType == .connectableUndirected
            ? .nonConnectableUndirected : options.advertisingType
        let requested = AdvertisingParameters(intervalMin: slots, intervalMax: slots, type: type,
                                              ownAddressType: state.withLock { $0.ownAddressType },
                                              channelMap: options.channelMap)
        let (current, currentData, advertising) = state.withLock { ($0.requested, $0.data, $0.advertising) }
        if advertising && current == requested {
            if currentData != data {
                if options.reenableOnUpdate {
                    _ = try await run(advertisingEnable(false))
                    state.withLock { $0.advertising = false }
                    _ = try await run(advertisingData(data))
                    _ = try await run(advertisingEnable(true))
                    state.withLock { $0.advertising = true }
                } else {
                    _ = try await run(advertisingData(data))   // in place, advertising continues
                }
                state.withLock { $0.data = data }
            }
        } else {
            if advertising {
                _ = try await run(advertisingEnable(false))
                state.withLock { $0.advertising = false }
            }
            if let note = try await setParameters(requested) { notes.append(note) }
            _ = try await run(advertisingData(data))
            _ = try await run(advertisingEnable(true))
            state.withLock { $0.requested = requested; $0.data = data; $0.advertising = true }
        }
        let note = notes.isEmpty ? nil : notes.joined(separator: "; ")
        broadcaster.update { $0.state = .advertising; $0.lastError = note }
    }

    /// Sets the advertising parameters. Bluetooth 4.x controllers refuse non-connectable intervals
    /// under 100 ms; then 100 ms is used and the returned note says so.
    private func setParameters(_ p: AdvertisingParameters) async throws -> String? {
        do {
            try await sendParameters(p)
            return nil
        } catch HCIError.commandFailed(let op, let status) where status == 0x12 || status == 0x11 {
            guard p.intervalMin < 0x00A0 else { throw HCIError.commandFailed(opcode: op, status: status) }
            var slower = p
            slower.intervalMin = 0x00A0
            slower.intervalMax = max(p.intervalMax, 0x00A0)
            try await sendParameters(slower)
            logger.warning("\(adapter): controller refuses non-connectable intervals under 100 ms; using 100 ms")
            return "controller refuses non-connectable intervals under 100 ms: using 100 ms"
        }
    }

    func ensureInitialized() async throws {
        guard !state.withLock({ $0.initialized }) else { return }
        let (publicAddress, mode) = try await controller.exclusively { [controller, options] in
            let address = try await initializeController(controller, reset: options.resetController, timeout: options.commandTimeout)
            return (address, await decideAdvertisingMode(controller, timeout: options.commandTimeout))
        }
        state.withLock { $0.mode = mode }
        var address = publicAddress
        var ownType = OwnAddressType.publicAddress
        var generator = SystemRandomNumberGenerator()
        let chosen: DeviceAddress? = switch options.address {
        case .freshNonResolvablePrivate: DeviceAddress.nonResolvablePrivate(avoiding: publicAddress, using: &generator)
        case .controllerPublic: publicAddress.rawValue == 0 ? DeviceAddress.randomStatic() : nil
        case .random(let a): a
        }
        if let random = chosen {
            _ = try await run(.leSetRandomAddress(random))
            address = random
            ownType = .randomAddress
        }
        state.withLock { $0.initialized = true; $0.address = address; $0.ownAddressType = ownType }
        let described = modeDescription(mode)
        broadcaster.update { $0.adapter = "\(adapter) (\(address)\(described))" }
        logger.info("raw HCI peripheral on \(adapter), advertising as \(address)\(described)")
    }

    func run(_ command: HCICommand) async throws -> [UInt8] {
        try await controller.execute(command, timeout: options.commandTimeout)
    }

    public func stopAdvertising() async throws {
        try await opLock.run { [self] in
            guard state.withLock({ $0.advertising && !$0.shutDown }) else { return }
            _ = try await run(advertisingEnable(false))
            state.withLock { $0.advertising = false; $0.requested = nil; $0.data = nil }
            broadcaster.update { $0.state = .stopped }
        }
    }

    /// Not available over raw HCI: this backend has no ATT server.
    public func publish(service: UUID128, characteristic: UUID128, value: [UInt8]) async throws {
        throw TransportError.unsupported(
            "GATT server over raw HCI (no ATT server in the hci backend): the ballot characteristic "
                + "\(characteristic) cannot be served; advertising stays non-connectable and votes are "
                + "counted from advertisements alone — use --radio bluez to serve ballots")
    }

    /// Disables advertising and releases the adapter (the kernel powers it down and gives it back). Idempotent.
    public func shutdown() async {
        _ = try? await opLock.run { [self] in
            let (advertising, scanning, already, mode) = state.withLock { s in
                defer { s.shutDown = true; s.advertising = false; s.scan = nil }
                return (s.advertising, s.scan != nil, s.shutDown, s.mode)
            }
            guard !already else { return }
            if advertising { _ = try? await run(advertisingEnable(false)) }
            if scanning { _ = try? await run(.scanEnable(false, filterDuplicates: false, mode: mode)) }
            controller.stop()
        }
        broadcaster.update { $0.state = .stopped }
        broadcaster.close()
    }

    public func status() -> AsyncStream<RadioStatus> { broadcaster.stream() }
}
