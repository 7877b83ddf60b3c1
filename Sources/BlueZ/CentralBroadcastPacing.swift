import ClickerTransport
import DBus
import Synchronization

/// The beacon's rotation over BlueZ, at the pace bluetoothd takes frames.
///
/// Each frame change is a `PropertiesChanged` that bluetoothd turns into a refresh of the advertising
/// instance: two management commands, carried out one at a time for all its adapters, each waiting for
/// the kernel and the controller. Changing frames faster than that queues the refreshes: the air then
/// carries what the tally sealed seconds ago, and everything else bluetoothd does waits behind them
/// (docs/DESIGN.md, "STATE on the air through real bluetoothd": up to 39 s behind in the Debian 12 guest).
///
/// bluetoothd says when it took a change: after the first command of each refresh it writes the TX power
/// the kernel chose back to the advertisement (Properties.Set "TxPower"; 5.66 to 5.82, on every kernel with
/// the extended advertising management commands, whenever the controller reports a power). Once such a
/// write came, the beacon sends a frame change only when bluetoothd confirmed every refresh asked before
/// it: at most one frame waits in bluetoothd, and the newest frame asked for meanwhile goes next. A frame
/// holds the air for the rotation's dwell from its confirmation; the confirmed frames are reported
/// (`framesTaken()`), so the tally places its STATE frames by what went out rather than by a stated frame
/// time. Where no write comes (a Bluetooth 4 controller, a kernel that reports no power), the rotation keeps
/// the dwell alone, as before; a confirmation that does not come within ``BlueZBeacon/confirmationWait(afterGivingUp:)``
/// (1 s, doubled for each given up in a row, at most 8 s) is given up (the refresh failed, or bluetoothd restarted), so a lost write never stops the beacon.
extension BeaconAdvertiser {
    /// Puts the current frame on the air, unless it is there already, the adapter is off, or bluetoothd has
    /// not yet confirmed the change before (the frame then goes out at the confirmation): a ManufacturerData
    /// PropertiesChanged that bluetoothd applies.
    func apply() {
        guard let p = payload, registered != nil, let object else { return }
        let frame = p.frames[frameIndex]
        guard frame != shown else { return }
        guard adapterPowered() != false else {
            counters.withLock { $0.heldWhilePoweredOff += 1 }
            return
        }
        if waitsForConfirmation() {
            if !held { counters.withLock { $0.heldForConfirmation += 1 } }
            held = true
            return
        }
        held = false
        do {
            try object.setProperty("ManufacturerData", Self.manufacturerData(p.companyID, frame), interface: BlueZ.advertisement)
            lastFrameChange = options.clock.now
            shown = frame
            if !confirms { inFlight.removeAll() }
            inFlight.append((frame, options.clock.now))
            counters.withLock { $0.frameChanges += 1 }
        } catch {
            logger.warning("beacon frame change not sent: \(error)")
        }
    }

    /// Whether a frame change must wait: bluetoothd confirms refreshes, one is unconfirmed, and it has not
    /// waited long enough to be given up: ``BlueZBeacon/confirmationTimeout``, doubled for each one given up
    /// in a row (at most 8 s). A bluetoothd that stalls (in the QEMU guests, seconds at a time while voters
    /// register) then gets one more change a wait rather than one a second, each a refresh it must still
    /// carry out once it moves again.
    func waitsForConfirmation() -> Bool {
        guard confirms, let oldest = inFlight.first else { return false }
        if options.clock.now - oldest.at >= BlueZBeacon.confirmationWait(afterGivingUp: givenUpInARow) {
            inFlight.removeAll()
            givenUpInARow += 1
            counters.withLock { $0.confirmationTimeouts += 1 }
            return false
        }
        return true
    }

    /// bluetoothd wrote the TX power back: it took the oldest refresh asked. A confirmed frame is on the air
    /// from now (reported, and held for the dwell); a frame change that waited goes out.
    func confirmed() {
        if !confirms { logger.info("beacon: bluetoothd confirms frame changes (TX power written back): frames change at the pace it takes them") }
        confirms = true
        guard !inFlight.isEmpty else { return }
        let (change, askedAt) = inFlight.removeFirst()
        givenUpInARow = 0
        guard let frame = change else { return }
        counters.withLock { $0.framesConfirmed += 1 }
        let dwell = max(payload?.interval ?? .zero, options.beaconMinimumDwell)
        taken.yield(FrameTaken(frame: frame, frameTime: (options.clock.now - askedAt) + dwell))
        guard inFlight.isEmpty else { return }
        if held { apply() } else if frame == shown { startRotation() }
    }

    /// Nothing is in flight any more (withdrawn, released, registered again).
    func forgetInFlight() {
        inFlight.removeAll()
        held = false
    }

    func stopRotation() {
        generation &+= 1
        rotation?.cancel()
        rotation = nil
    }

    /// Rotates the payload's frames, one every `max(interval, beaconMinimumDwell)`, from the first (with one
    /// frame, the tick only puts back a frame held while the adapter was off or waiting for a confirmation).
    func startRotation() {
        stopRotation()
        guard let p = payload else { return }
        let g = generation
        let dwell = max(p.interval, options.beaconMinimumDwell), clock = options.clock
        rotation = Task { [weak self] in
            while !Task.isCancelled {
                try? await clock.sleep(for: dwell)
                guard let self, await self.advance(g) else { return }
            }
        }
    }

    /// The next frame, if rotation `g` is still the current one (false ends it). While a change waits for
    /// bluetoothd's confirmation the rotation holds its place: the confirmation moves it on.
    func advance(_ g: UInt64) -> Bool {
        guard g == generation, let p = payload else { return false }
        guard registered != nil, object != nil else { return true }  // bluetoothd away: hold the place
        if held || waitsForConfirmation() {
            apply()  // gives up a confirmation that timed out; otherwise the frame stays held
            return true
        }
        frameIndex = (frameIndex + 1) % p.frames.count
        apply()
        return true
    }
}

/// The frames bluetoothd confirmed, to the newest `framesTaken()` stream (a new call ends the one before;
/// the newest 64 wait for a slow reader).
final class FrameTakenFeed: Sendable {
    private let reader = Mutex<AsyncStream<FrameTaken>.Continuation?>(nil)

    func stream() -> AsyncStream<FrameTaken> {
        let (stream, continuation) = AsyncStream<FrameTaken>.makeStream(bufferingPolicy: .bufferingNewest(64))
        reader.withLock { r in defer { r = continuation }; return r }?.finish()
        return stream
    }

    func yield(_ frame: FrameTaken) { _ = reader.withLock { $0 }?.yield(frame) }

    func finish() { reader.withLock { r in defer { r = nil }; return r }?.finish() }
}
