import ClickerTransport
import Logging
import Synchronization

/// A following voter's radio that is opened again when its listening fails: the simulated air's host
/// went away with the tally that hosted it, and a restarted tally hosts a new one on the same socket.
/// The next ``listen(companyID:dutyCycle:)`` after a failure shuts the old radio down, opens a new one
/// with `reopen`, and puts the GATT value and the advertisement back on it before it listens; when
/// the new one cannot be opened yet, that stream fails at once with why, and the caller tries again
/// later (``BeaconFollowService`` backs off).
///
/// BlueZ needs no such thing (a `BlueZPeripheral` registers again by itself when bluetoothd comes
/// back, and listens again on the same object), nor does raw HCI (its socket outlives any daemon, and
/// it was bound before the capabilities were dropped, so it could not be opened again anyway).
public final class ReopeningRadio: PeripheralTransport, ListenerTransport {
    public typealias Radio = any PeripheralTransport & ListenerTransport

    private struct State {
        var radio: Radio
        /// Its listening failed: open a new one before the next listen.
        var broken = false
        /// The broken radio was shut down.
        var shut = false
        var advert: AdvertisingPayload?
        var published: [Published] = []
    }

    private struct Published {
        var service: UUID128
        var characteristic: UUID128
        var value: [UInt8]
    }

    private let state: Mutex<State>
    private let reopen: @Sendable () async throws -> Radio
    private let logger: Logger

    public init(_ radio: Radio, logger: Logger, reopen: @escaping @Sendable () async throws -> Radio) {
        state = Mutex(State(radio: radio))
        self.reopen = reopen
        self.logger = logger
    }

    private var current: Radio { state.withLock { $0.radio } }

    public func advertise(_ payload: AdvertisingPayload) async throws {
        state.withLock { $0.advert = payload }
        try await current.advertise(payload)
    }

    public func stopAdvertising() async throws {
        state.withLock { $0.advert = nil }
        try await current.stopAdvertising()
    }

    public func publish(service: UUID128, characteristic: UUID128, value: [UInt8]) async throws {
        state.withLock { s in
            s.published.removeAll { $0.service == service && $0.characteristic == characteristic }
            s.published.append(Published(service: service, characteristic: characteristic, value: value))
        }
        try await current.publish(service: service, characteristic: characteristic, value: value)
    }

    public func shutdown() async { await current.shutdown() }

    public func status() -> AsyncStream<RadioStatus> { current.status() }

    /// The current radio's listen stream, read in the caller's task: no task of its own relays each
    /// report (a follower hears the beacon about ten times a second, and each relay was one more
    /// wake-up of a thread). A failure marks the radio for opening again.
    public func listen(companyID: UInt16, dutyCycle: ScanDutyCycle) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        let source = ListenSource(radio: self, companyID: companyID, dutyCycle: dutyCycle)
        return AsyncThrowingStream(unfolding: { try await source.next() })
    }

    /// One listen stream's reading end. `@unchecked Sendable`: its mutable state (the inner iterator)
    /// is used only by `next()`, which `AsyncThrowingStream(unfolding:)` calls for its one consumer, one
    /// call at a time (the next call comes after the previous one returned), so it is never touched
    /// from two threads at once.
    private final class ListenSource: @unchecked Sendable {
        let radio: ReopeningRadio
        let companyID: UInt16
        let dutyCycle: ScanDutyCycle
        var iterator: AsyncThrowingStream<AdvertisementReport, any Error>.AsyncIterator?
        var done = false

        init(radio: ReopeningRadio, companyID: UInt16, dutyCycle: ScanDutyCycle) {
            self.radio = radio
            self.companyID = companyID
            self.dutyCycle = dutyCycle
        }

        func next() async throws -> AdvertisementReport? {
            guard !done else { return nil }
            do {
                if iterator == nil {
                    iterator = try await radio.usable().listen(companyID: companyID, dutyCycle: dutyCycle).makeAsyncIterator()
                }
                var it = iterator
                let report = try await it?.next()
                iterator = it
                guard let report else {
                    done = true
                    iterator = nil
                    return nil
                }
                return report
            } catch {
                done = true
                iterator = nil
                if !Task.isCancelled { radio.state.withLock { $0.broken = true } }
                throw error
            }
        }
    }

    /// The radio to listen on: the current one, or once its listening failed a new one, with what
    /// the old one advertised and served.
    private func usable() async throws -> Radio {
        let (broken, shut, old) = state.withLock { ($0.broken, $0.shut, $0.radio) }
        guard broken else { return old }
        if !shut {
            await old.shutdown()
            state.withLock { $0.shut = true }
        }
        let fresh = try await reopen()
        let (advert, published) = state.withLock { s in
            s.radio = fresh
            s.broken = false
            s.shut = false
            return (s.advert, s.published)
        }
        logger.notice("the radio is open again")
        for p in published { try await fresh.publish(service: p.service, characteristic: p.characteristic, value: p.value) }
        if let advert { try await fresh.advertise(advert) }
        return fresh
    }
}
