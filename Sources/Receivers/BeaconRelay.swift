import AsyncAlgorithms
import ClickerLedger
import ClickerTransport
import Logging
import TallyDaemon

/// A receiver broadcasts the tally's beacon (docs/LEDGER.md, "The beacon from every receiver"): the
/// payload the tally's radio broadcasts, as the ledger has it (``LedgerBeaconFeed``), goes out on the
/// receiver's radio as it is, so that a student near the receiver hears the question and sees
/// "counted" whichever receiver counted the ballot. The frames are the tally's, sealed and signed by
/// it: a receiver makes none, and holds no key that could.
///
/// A beacon the tally has not renewed for ``stale`` (by the database's clock at the reading, then the
/// receiver's) is no longer broadcast: a tally that stopped or crashed is not impersonated by an old
/// STATE for long. Frames longer than the receiver's radio takes (the tally's extended frames on a
/// legacy radio) are not broadcast, and the relay says so once; nor, unless told to try anyway
/// (`.always`), is anything broadcast on a radio that cannot broadcast while it scans.
public struct BeaconRelay: Sendable {
    /// How long a beacon the tally did not renew is broadcast. The tally renews it at least once a
    /// second (docs/PROTOCOL.md §11.11), so five missed renewals end it.
    public static let stale: Duration = .seconds(5)

    /// What a relay did.
    public struct Summary: Sendable, Equatable {
        /// Payloads handed to the radio, and those it refused.
        public var broadcast = 0
        public var refused = 0
        /// Times the relay stopped the radio: the tally stopped, or its beacon went stale.
        public var stops = 0

        public init(broadcast: Int = 0, refused: Int = 0, stops: Int = 0) {
            self.broadcast = broadcast
            self.refused = refused
            self.stops = stops
        }
    }

    enum Event: Sendable {
        case reading(LedgerBeaconFeed.Reading)
        case tick
        /// The readings ended.
        case end
    }

    let radio: any BroadcasterTransport
    /// `.whenPossible`: not on a radio that cannot broadcast while it scans; `.always`: whatever it says.
    let mode: BeaconMode
    let logger: Logger

    public init(radio: any BroadcasterTransport, mode: BeaconMode = .whenPossible, logger: Logger) {
        self.radio = radio
        self.mode = mode
        self.logger = logger
    }

    /// Broadcasts what `readings` say until they end or the task is cancelled, checking every second of
    /// `clock` whether the beacon went stale; stops the radio's broadcast at the end.
    public func run<R: AsyncSequence & Sendable, C: Clock<Duration>>(_ readings: R, clock: C) async -> Summary
        where R.Element == LedgerBeaconFeed.Reading {
        var summary = Summary()
        guard mode != .off else { return summary }
        let capabilities: BroadcastCapabilities
        do { capabilities = try await radio.broadcastCapabilities() } catch {
            logger.notice("beacon: this radio does not broadcast (\(error)); students near it hear the tally's beacon only")
            return summary
        }
        guard capabilities.whileScanning || mode == .always else {
            logger.notice("beacon: this adapter cannot broadcast while it scans (a Bluetooth 4 controller); students near it hear the tally's beacon only (or run the receiver with --beacon to try anyway)")
            return summary
        }
        var on = false
        var freshUntil: C.Instant?
        var lastError: String?
        var tooLong = false
        func stop(_ why: String) async {
            guard on else { return }
            on = false
            summary.stops += 1
            try? await radio.stopBroadcasting()
            logger.info("beacon: \(why); not broadcasting")
        }
        // The ticks would go on for ever: the end of the readings is an event of its own.
        let events = merge(chain(readings.map { Event.reading($0) }, [Event.end].async),
                           AsyncTimerSequence(interval: .seconds(1), clock: clock).map { _ in Event.tick })
        do {
            loop: for try await event in events {
                switch event {
                case .end:
                    break loop
                case .tick:
                    if let until = freshUntil, clock.now >= until { freshUntil = nil; await stop("the tally's beacon is not renewed in the ledger") }
                case .reading(.unreadable):
                    continue   // what is on the air stays until it goes stale
                case .reading(.beacon(let beacon)):
                    guard let beacon, let payload = beacon.payload else { await stop("the tally stopped broadcasting"); continue }
                    guard beacon.age < Self.stale else { await stop("the tally's beacon is not renewed in the ledger"); continue }
                    guard payload.frames.allSatisfy({ $0.count <= capabilities.maxFrameLength }) else {
                        if !tooLong {
                            logger.notice("beacon: the tally's frames are longer than this radio broadcasts (\(capabilities.maxFrameLength) bytes: legacy advertising); students near it hear the tally's beacon only")
                        }
                        tooLong = true
                        await stop("the tally's frames do not fit this radio")
                        continue
                    }
                    // Fresh for what is left of its five seconds from now, when it was read (not when the radio took it).
                    let until = clock.now.advanced(by: Self.stale - beacon.age)
                    do {
                        try await radio.broadcast(payload)
                        summary.broadcast += 1
                        if !on || lastError != nil { logger.info("beacon: broadcasting the tally's beacon") }
                        on = true
                        lastError = nil
                        freshUntil = until
                    } catch {
                        summary.refused += 1
                        if lastError != "\(error)" { logger.warning("beacon: the radio refused the tally's beacon: \(error)") }
                        lastError = "\(error)"
                    }
                }
            }
        } catch {}
        if on {
            on = false
            try? await radio.stopBroadcasting()
        }
        return summary
    }
}
