import ClickerTransport
import Synchronization

/// The voter hearing the beacon over raw HCI: a passive scan while the ballot is advertised.
///
/// The scan runs at the duty cycle asked for (LE Set Scan Parameters, or LE Set Extended Scan
/// Parameters on an extended controller: passive, window and interval in 0.625 ms slots, clamped to
/// 2.5 ms...10.24 s with the window at most the interval; the status says when a value was clamped),
/// with duplicate filtering off. Reports with Manufacturer Specific Data of the stream's company ID
/// are yielded, legacy ones and, on an extended controller, extended ones (joined when the
/// controller reports them in pieces). Scanning starts with the first stream and stops when the last
/// one ends; a stream that asks for another duty cycle restarts the scan with it.
///
/// On an extended controller the ballot goes out through the extended commands as a legacy PDU
/// (ADV_NONCONN_IND), which every scanner hears: a controller takes one command family only.
extension HCIPeripheral: ListenerTransport {
    public func listen(companyID: UInt16, dutyCycle: ScanDutyCycle) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        let (stream, continuation) = AsyncThrowingStream<AdvertisementReport, any Error>.makeStream(
            bufferingPolicy: .bufferingNewest(256))
        let registration = ListenRegistration()
        continuation.onTermination = { [weak self] _ in
            registration.state.withLock { $0.done = true }
            guard let self else { return }
            Task { await self.stopListening(registration) }
        }
        Task { await startListening(companyID: companyID, dutyCycle: dutyCycle, continuation: continuation,
                                    registration: registration) }
        return stream
    }

    /// The scan's parameters for `dutyCycle` (passive), and a note when a value had to be clamped.
    static func scanParameters(for dutyCycle: ScanDutyCycle, ownAddressType: OwnAddressType) -> (ScanParameters, String?) {
        let range = HCITimeSlots.scanIntervalRange
        let interval = HCITimeSlots.slots(dutyCycle.interval, clampedTo: range)
        let window = min(HCITimeSlots.slots(dutyCycle.window, clampedTo: range), interval)
        let p = ScanParameters(active: false, interval: interval, window: window, ownAddressType: ownAddressType)
        let usedInterval = HCITimeSlots.duration(slots: interval), usedWindow = HCITimeSlots.duration(slots: window)
        let note = usedInterval != dutyCycle.interval || usedWindow != dutyCycle.window
            ? "scan \(dutyCycle.window) every \(dutyCycle.interval) set to \(usedWindow) every \(usedInterval) "
                + "(HCI: 0.625 ms steps, 2.5 ms...10.24 s)"
            : nil
        return (p, note)
    }

    /// What the reader has seen so far.
    public func statistics() -> HCIStatistics { controller.statistics }

    /// Streams registered with the controller (tests wait on it).
    var listenerCount: Int { controller.subscriberCount }

    /// The scan in effect, nil when not scanning.
    public var scanParameters: ScanParameters? { state.withLock { $0.scan } }

    private func startListening(companyID: UInt16, dutyCycle: ScanDutyCycle, continuation: HCIController.ReportContinuation,
                                registration: ListenRegistration) async {
        _ = try? await opLock.run { [self] in
            guard !registration.state.withLock({ $0.done }) else { return }
            do {
                guard !state.withLock({ $0.shutDown }) else { throw HCIError.closed("peripheral was shut down") }
                try await ensureInitialized()
                let id = try controller.addSubscriber(companyID: companyID, continuation: continuation)
                registration.state.withLock { $0.id = id }
                let (mode, current, ownType) = state.withLock { ($0.mode, $0.scan, $0.ownAddressType) }
                let (wanted, note) = Self.scanParameters(for: dutyCycle, ownAddressType: ownType)
                if current != wanted {
                    if current != nil {
                        _ = try await run(.scanEnable(false, filterDuplicates: false, mode: mode))
                        state.withLock { $0.scan = nil }
                    }
                    _ = try await run(.scanParameters(wanted, mode: mode))
                    _ = try await run(.scanEnable(true, filterDuplicates: false, mode: mode))
                    state.withLock { $0.scan = wanted }
                }
                broadcaster.update { $0.lastError = note }
            } catch {
                logger.error("cannot listen on \(adapter): \(error)")
                broadcaster.update { $0.lastError = "\(error)" }
                if let id = registration.state.withLock({ $0.id }) { controller.removeSubscriber(id) }
                continuation.finish(throwing: error)
            }
        }
    }

    private func stopListening(_ registration: ListenRegistration) async {
        _ = try? await opLock.run { [self] in
            guard let id = registration.state.withLock({ $0.id }) else { return }
            let remaining = controller.removeSubscriber(id)
            let (scanning, mode) = state.withLock { ($0.scan != nil && !$0.shutDown, $0.mode) }
            guard remaining == 0, scanning, !controller.hasFailed else { return }
            do {
                _ = try await run(.scanEnable(false, filterDuplicates: false, mode: mode))
                state.withLock { $0.scan = nil }
            } catch {
                logger.warning("could not stop scanning on \(adapter): \(error)")
                broadcaster.update { $0.lastError = "\(error)" }
            }
        }
    }

    // MARK: Advertising commands of the controller's family

    /// The advertising set of the ballot on an extended controller.
    static let ballotHandle: UInt8 = 0

    func advertisingEnable(_ enable: Bool) -> HCICommand {
        state.withLock { $0.mode }.isExtended
            ? .leSetExtendedAdvertisingEnable(enable, handle: Self.ballotHandle) : .leSetAdvertisingEnable(enable)
    }

    func advertisingData(_ data: [UInt8]) throws(HCIError) -> HCICommand {
        try state.withLock { $0.mode }.isExtended
            ? .leSetExtendedAdvertisingData(handle: Self.ballotHandle, data) : .leSetAdvertisingData(data)
    }

    /// LE Set Advertising Parameters, or on an extended controller LE Set Extended Advertising
    /// Parameters with the same legacy PDU and then the set's random address (a new set has none).
    func sendParameters(_ p: AdvertisingParameters) async throws {
        let (mode, address) = state.withLock { ($0.mode, $0.address) }
        guard mode.isExtended else {
            _ = try await run(.leSetAdvertisingParameters(p))
            return
        }
        let properties = p.type == .scannableUndirected
            ? ExtendedAdvertisingProperties.legacyScannable : ExtendedAdvertisingProperties.legacyNonConnectable
        _ = try await run(.leSetExtendedAdvertisingParameters(ExtendedAdvertisingParameters(
            handle: Self.ballotHandle, properties: properties, intervalMin: p.intervalMin, intervalMax: p.intervalMax,
            channelMap: p.channelMap, ownAddressType: p.ownAddressType)))
        if p.ownAddressType == .randomAddress, let address {
            _ = try await run(.leSetAdvertisingSetRandomAddress(handle: Self.ballotHandle, address))
        }
    }
}

/// One `listen` stream's registration, shared by its start and its termination handler.
private final class ListenRegistration: Sendable {
    /// `done`: the stream ended (do not register); `id`: the controller's subscriber id once registered.
    let state = Mutex<(done: Bool, id: UInt64?)>((false, nil))
}
