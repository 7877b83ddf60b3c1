import ClickerTransport

/// The tally's beacon over raw HCI: non-connectable advertising while the scan goes on.
///
/// Legacy mode: LE Set Random Address, LE Set Advertising Parameters (ADV_NONCONN_IND, min = max =
/// the payload's interval, own address random), LE Set Advertising Data with one Manufacturer Specific
/// Data structure and no Flags (a non-connectable advertisement need not carry them: 27 bytes of
/// frame), LE Set Advertising Enable. Every frame goes out from a new non-resolvable private address,
/// as in extended mode below: advertising is disabled around LE Set Random Address, which the Core
/// specification lets a controller refuse while legacy advertising, scanning or initiating is enabled
/// (Command Disallowed, Vol 4 Part E §7.8.4). A controller that refuses it with the scan on gets the
/// scan disabled around every address change from then on (off for that one command).
/// The tally's passive scan sends nothing, so the random address is the beacon's alone.
///
/// Extended mode (the controller announced LE Extended Advertising, see `HCIAdvertisingMode`): one
/// advertising set, handle 0, extended non-connectable non-scannable (AUX_ADV_IND on the LE 1M
/// secondary PHY) through LE Set Extended Advertising Parameters / Data (operation "complete") /
/// Enable, frames up to the set's data length − 4 and at most 225 bytes (what one extended report
/// carries). The scan then runs on the extended scan commands too. Every frame goes out from a new
/// non-resolvable private address (the set is disabled, given LE Set Advertising Set Random Address
/// and the frame, and enabled again), as Linux
/// does for bluetoothd's beacon: a scanner that filters duplicates by address (the kernel's
/// discovery, so every BlueZ voter) reports each frame, where one address would be reported once.
///
/// Rotation: a controller repeats one data set until it gets another, so the frames are rotated by
/// the host, one LE Set (Extended) Advertising Data every `interval + 10 ms`. Events come every
/// interval plus the controller's advDelay of 0–10 ms, so no gap between events is longer than the
/// rotation period: every frame is on the air for at least one event (barring a host stalled for
/// longer than an event), and a frame goes out twice in about 5 ms / (interval + 5 ms) of the
/// periods (under 5 % at 100 ms, 20 % at 20 ms). The cost is a frame rate about 5 % lower than one
/// frame per event at 100 ms. Host timer jitter adds to both. In extended mode each step re-enables
/// the set (new address), and the controller's first event follows the enable.
extension HCICentral: BroadcasterTransport {
    /// The extra time per rotation step over the interval: the Core specification's maximum advDelay.
    public static let rotationSlack: Duration = .milliseconds(10)

    public func broadcastCapabilities() async throws -> BroadcastCapabilities {
        try await opLock.run { [self] in
            guard !state.withLock({ $0.shutDown }) else { throw HCIError.closed("central was shut down") }
            try await ensureInitialized()
            return state.withLock { $0.mode }.broadcastCapabilities
        }
    }

    public func broadcast(_ payload: BroadcastPayload) async throws {
        try await opLock.run { [self] in
            guard !state.withLock({ $0.shutDown }) else { throw HCIError.closed("central was shut down") }
            try await ensureInitialized()
            do {
                try await broadcastNow(payload)
            } catch {
                broadcaster.update { $0.lastError = "\(error)" }
                throw error
            }
        }
    }

    public func stopBroadcasting() async throws {
        try await opLock.run { [self] in
            let (run, mode) = state.withLock { s in
                defer { s.broadcast = nil; s.broadcastGeneration += 1 }
                return (s.broadcast, s.mode)
            }
            guard let run, !state.withLock({ $0.shutDown }) else { return }
            run.rotation?.cancel()
            _ = try await controller.execute(Self.advertisingEnable(false, mode: mode), timeout: options.commandTimeout)
        }
    }

    /// The payload being broadcast, and the index of the frame on the air (tests, status).
    public var currentBroadcast: (payload: BroadcastPayload, frame: Int)? {
        state.withLock { s in s.broadcast.map { ($0.payload, $0.frame) } }
    }

    /// Manufacturer Specific Data alone: length, type `FF`, company ID, frame.
    static func advertisingData(companyID: UInt16, frame: [UInt8]) -> [UInt8] {
        [UInt8(truncatingIfNeeded: 3 + frame.count), AdvertisingData.typeManufacturerSpecific] + le16(companyID) + frame
    }

    static func advertisingEnable(_ enable: Bool, mode: HCIAdvertisingMode) -> HCICommand {
        mode.isExtended ? .leSetExtendedAdvertisingEnable(enable, handle: beaconHandle) : .leSetAdvertisingEnable(enable)
    }

    static func advertisingDataCommand(_ data: [UInt8], mode: HCIAdvertisingMode) throws(HCIError) -> HCICommand {
        try mode.isExtended ? .leSetExtendedAdvertisingData(handle: beaconHandle, data) : .leSetAdvertisingData(data)
    }

    /// The extended advertising set of the beacon.
    static let beaconHandle: UInt8 = 0

    /// Runs under `opLock`, on an initialized controller.
    private func broadcastNow(_ payload: BroadcastPayload) async throws {
        let mode = state.withLock { $0.mode }
        let capabilities = mode.broadcastCapabilities
        guard !payload.frames.isEmpty else { throw TransportError.unsupported("a broadcast needs at least one frame") }
        if let long = payload.frames.first(where: { $0.count > capabilities.maxFrameLength }) {
            throw TransportError.unsupported("a \(long.count)-byte frame does not fit the \(capabilities.maxFrameLength) bytes "
                + "of \(capabilities.extended ? "an extended" : "a legacy") advertisement on \(adapter)")
        }
        var notes: [String] = []
        let slots = HCITimeSlots.slots(payload.interval, clampedTo: HCITimeSlots.advertisingIntervalRange)
        if HCITimeSlots.duration(slots: slots) != payload.interval {
            notes.append("beacon interval \(payload.interval) set to \(HCITimeSlots.duration(slots: slots))")
        }
        let first = try Self.advertisingDataCommand(Self.advertisingData(companyID: payload.companyID, frame: payload.frames[0]),
                                                    mode: mode)
        let previous = state.withLock { $0.broadcast }
        previous?.rotation?.cancel()
        state.withLock { $0.broadcast = nil; $0.broadcastGeneration += 1 }
        var usedSlots = slots
        if let previous, previous.slots == slots {
            try await replaceFrame(first, mode: mode, enabled: true)   // the next event carries the new first frame
            usedSlots = previous.usedSlots
        } else {
            if previous != nil { _ = try await run(Self.advertisingEnable(false, mode: mode)) }
            if mode.isExtended {
                // A set of 31 octets sends legacy PDUs (ADV_NONCONN_IND), which every scanner hears.
                let properties = capabilities.extended ? ExtendedAdvertisingProperties.extendedNonConnectableNonScannable
                    : ExtendedAdvertisingProperties.legacyNonConnectable
                _ = try await run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(
                    handle: Self.beaconHandle, properties: properties,
                    intervalMin: slots, intervalMax: slots, ownAddressType: .randomAddress)))
                try await replaceFrame(first, mode: mode, enabled: false)
            } else {
                try await setNewLegacyAddress()   // before the parameters that name it as the own address
                usedSlots = try await setLegacyParameters(slots, notes: &notes)
                _ = try await run(first)
            }
            _ = try await run(Self.advertisingEnable(true, mode: mode))
        }
        let generation = state.withLock { s in
            s.broadcast = BroadcastRun(payload: payload, slots: slots, usedSlots: usedSlots)
            return s.broadcastGeneration
        }
        if payload.frames.count > 1 {
            let period = HCITimeSlots.duration(slots: usedSlots) + Self.rotationSlack
            let task = Task { [weak self, clock = options.clock] in
                while !Task.isCancelled {
                    do { try await clock.sleep(for: period) } catch { return }
                    guard let self, await self.rotate(generation: generation, mode: mode) else { return }
                }
            }
            state.withLock { s in
                if s.broadcastGeneration == generation { s.broadcast?.rotation = task } else { task.cancel() }
            }
        }
        let note = notes.isEmpty ? nil : notes.joined(separator: "; ")
        broadcaster.update { $0.lastError = note }
    }

    /// Legacy parameters; a Bluetooth 4.x controller refuses non-connectable intervals under 100 ms,
    /// and then gets 100 ms (the note says so). Returns the slots in use.
    private func setLegacyParameters(_ slots: UInt16, notes: inout [String]) async throws -> UInt16 {
        let p = AdvertisingParameters(intervalMin: slots, intervalMax: slots, type: .nonConnectableUndirected,
                                      ownAddressType: .randomAddress)
        do {
            _ = try await run(.leSetAdvertisingParameters(p))
            return slots
        } catch HCIError.commandFailed(_, let status) where (status == 0x12 || status == 0x11) && slots < 0x00A0 {
            _ = try await run(.leSetAdvertisingParameters(
                AdvertisingParameters(intervalMin: 0x00A0, intervalMax: 0x00A0, type: .nonConnectableUndirected,
                                      ownAddressType: .randomAddress)))
            notes.append("controller refuses non-connectable intervals under 100 ms: beacon at 100 ms")
            return 0x00A0
        }
    }

    /// One rotation step: the next frame of the payload of `generation`. False when that payload is
    /// no longer broadcast (replaced, stopped, shut down) or the controller failed for good.
    private func rotate(generation: UInt64, mode: HCIAdvertisingMode) async -> Bool {
        let result = try? await opLock.run { [self] () async -> Bool in
            guard let (companyID, frame) = state.withLock({ s -> (UInt16, [UInt8])? in
                guard s.broadcastGeneration == generation, !s.shutDown, var run = s.broadcast else { return nil }
                run.frame = (run.frame + 1) % run.payload.frames.count
                s.broadcast = run
                return (run.payload.companyID, run.payload.frames[run.frame])
            }) else { return false }
            do {
                try await replaceFrame(Self.advertisingDataCommand(Self.advertisingData(companyID: companyID, frame: frame), mode: mode),
                                       mode: mode, enabled: true)
            } catch {
                logger.warning("beacon rotation on \(adapter): \(error)")
                broadcaster.update { $0.lastError = "beacon rotation: \(error)" }
                return !controller.hasFailed
            }
            return true
        }
        return result ?? false
    }

    /// Gives the controller the next frame from a new address, advertising disabled around the
    /// address. Extended: Core 5.0 lets a controller refuse the address of an enabled set (Vol 4
    /// Part E §7.8.52, Command Disallowed); later versions refuse it only for connectable advertising.
    /// Legacy: LE Set Random Address may be refused while advertising is enabled (§7.8.4).
    private func replaceFrame(_ data: HCICommand, mode: HCIAdvertisingMode, enabled: Bool) async throws {
        if enabled { _ = try await run(Self.advertisingEnable(false, mode: mode)) }
        if mode.isExtended {
            _ = try await run(.leSetAdvertisingSetRandomAddress(handle: Self.beaconHandle, newBeaconAddress()))
        } else {
            try await setNewLegacyAddress()
        }
        _ = try await run(data)
        if enabled { _ = try await run(Self.advertisingEnable(true, mode: mode)) }
    }

    private func newBeaconAddress() -> DeviceAddress {
        var generator = SystemRandomNumberGenerator()
        let avoid = state.withLock { $0.controllerAddress } ?? DeviceAddress(rawValue: 0)
        return DeviceAddress.nonResolvablePrivate(avoiding: avoid, using: &generator)
    }

    /// LE Set Random Address with a new address, legacy advertising disabled. A controller that
    /// refuses it while scanning (Command Disallowed, as btvirt does) gets the scan disabled around
    /// it, now and at every later frame; the scan's parameters stay as they were.
    private func setNewLegacyAddress() async throws {
        let address = newBeaconAddress()
        let (scanning, pause) = state.withLock { ($0.scanning, $0.addressChangePausesScan) }
        if !(scanning && pause) {
            do {
                _ = try await run(.leSetRandomAddress(address))
                return
            } catch HCIError.commandFailed(_, let status) where status == 0x0C && scanning {   // Command Disallowed
                state.withLock { $0.addressChangePausesScan = true }
                logger.notice("\(adapter) refuses a new random address while it scans: the scan pauses for each beacon frame")
            }
        }
        try await withScanPaused(mode: .legacy) { [controller, options] in
            _ = try await controller.executeNow(.leSetRandomAddress(address), timeout: options.commandTimeout)
        }
    }

    private func run(_ command: HCICommand) async throws -> [UInt8] {
        try await controller.execute(command, timeout: options.commandTimeout)
    }
}

/// What the central broadcasts now.
struct BroadcastRun: Sendable {
    var payload: BroadcastPayload
    /// The interval asked for, and the one the controller took (100 ms on a 4.x controller asked for less).
    var slots: UInt16
    var usedSlots: UInt16
    /// The index of the frame last given to the controller.
    var frame = 0
    var rotation: Task<Void, Never>?
}

/// `", extended advertising (N-byte sets)"` for an extended controller, nothing for a legacy one.
func modeDescription(_ mode: HCIAdvertisingMode) -> String {
    if case .extended(let max) = mode { return ", extended advertising, \(max)-byte sets" }
    return ""
}
