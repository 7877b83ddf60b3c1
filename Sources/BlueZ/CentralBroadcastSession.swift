import ClickerTransport
import DBus

/// The beacon's bus connection, adapter, bluetoothd coming and going, and what the adapter can broadcast.
extension BeaconAdvertiser {
    /// Connects, reads the tree and picks the adapter (once; again after bluetoothd restarted).
    func ensureReady() async throws -> (DBusConnection, DBusObjectPath) {
        if closed {
            throw BlueZError.rejected("broadcast after shutdown", DBusError(name: DBusError.failed, message: "central shut down"))
        }
        if let c = connection, c.isConnected, let a = adapterPath { return (c, a) }
        let conn: DBusConnection
        if let c = connection, c.isConnected {
            conn = c
        } else {
            do {
                conn = try await DBusConnection.connect(options.bus, clock: options.clock.elapsed)
            } catch {
                throw fail(.busUnreachable(options.bus.spokenName, "\(error)"))
            }
            connection = conn
            openConnection.withLock { $0 = conn }
            registered = nil
            confirms = false  // another bluetoothd may not confirm
            forgetInFlight()
            watchOwner(conn)
        }
        let (mirror, chosen): (ObjectMirror, BlueZ.Adapter)
        do {
            (mirror, chosen) = try await BlueZ.lookUpAdapter(conn, options.adapter, timeout: options.callTimeout)
        } catch let e as BlueZError {
            throw fail(e)
        }
        adapterName = chosen.name
        guard chosen.powered else { throw fail(.adapterPoweredOff(chosen.name)) }
        adapterPath = chosen.path
        manager = mirror.properties(chosen.path, BlueZ.advertisingManager)
        return (conn, chosen.path)
    }

    /// Follows bluetoothd: when it goes away the registration is gone; when it comes back, the current
    /// payload is registered again (bluetoothd may own its name before its adapters are up: a few tries).
    func watchOwner(_ conn: DBusConnection) {
        ownerWatch?.cancel()
        ownerWatch = BlueZ.followOwner(on: conn) { [weak self] owner in
            guard let self else { return false }
            await self.ownerChanged(owner)
            return true
        }
    }

    func ownerChanged(_ newOwner: String) async {
        guard !closed else { return }
        registered = nil
        confirms = false  // a new bluetoothd: whether it confirms is learnt again
        forgetInFlight()
        adapterPath = nil
        manager = nil
        cachedCapabilities = nil
        object?.unexport()
        object = nil
        if newOwner.isEmpty {
            let e = BlueZError.bluetoothdNotRunning
            logger.warning("beacon: \(e)")
            status.update {
                $0.state = wanted == nil ? .stopped : .recovering
                $0.lastError = e.description
            }
            return
        }
        for _ in 0..<20 {
            guard !closed, let p = wanted else { return }
            do {
                try await broadcast(p)
                return
            } catch {
                adapterPath = nil
                status.update {
                    $0.state = .recovering
                    $0.lastError = "\(error)"
                }
                try? await options.clock.sleep(for: .milliseconds(500))
            }
        }
    }

    // MARK: Capabilities

    func capabilities() async throws -> BroadcastCapabilities {
        if let c = cachedCapabilities { return c }
        let (conn, adapter) = try await ensureReady()
        guard let manager else { throw fail(.advertisingUnsupported(adapterName)) }
        let channels: [String] = if case .array(_, let items)? = manager["SupportedSecondaryChannels"]?.unwrapped {
            items.compactMap { if case .string(let s) = $0.unwrapped { s } else { nil } }
        } else { [] }
        // The kernel lists secondary channels only for a controller with LE Extended Advertising, where every
        // advertising set has its own random address. Without it (Bluetooth 4), a broadcast needs the
        // controller's one random address changed, which the controller refuses while it scans.
        let legacy = BroadcastCapabilities(maxFrameLength: BlueZBeacon.legacyFrameLength, extended: false,
                                           whileScanning: !channels.isEmpty).withFrameTime(slack: BlueZBeacon.frameChangeCost,
                                                                                           minimum: frameTime)
        var result = legacy
        if channels.contains("1M") {
            var adLength = 251
            if case .dictionary(_, _, let entries)? = manager["SupportedCapabilities"]?.unwrapped,
               let e = entries.first(where: { $0.key.unwrapped == .string("MaxAdvLen") }),
               case .byte(let n) = e.value.unwrapped {
                adLength = Int(n)
            }
            // What one report carries to a voter behind BlueZ, and what bluetoothd and the kernel leave besides
            // the frame (BlueZBeacon.extendedOverhead): asking for more is refused, and a refusal can kill
            // bluetoothd 5.82.
            let length = min(BlueZBeacon.singleReportFrameLength, adLength - BlueZBeacon.extendedOverhead)
            if length > BlueZBeacon.legacyFrameLength {
                switch try await probe(conn, adapter, length: length) {
                case .accepted:
                    result = BroadcastCapabilities(maxFrameLength: length, extended: true)
                        .withFrameTime(slack: BlueZBeacon.frameChangeCost, minimum: frameTime)
                case .refused: break
                case .inconclusive: return legacy  // no free instance to try with: ask again later
                }
            }
        }
        cachedCapabilities = result
        let mode = result.extended ? "extended" : "legacy"
        let scanning = result.whileScanning ? "" : "; a Bluetooth 4 controller: it cannot broadcast while it scans"
        logger.info("beacon on \(adapterName): \(mode) advertising, \(result.maxFrameLength) bytes per frame\(scanning)")
        return result
    }

    /// The least a frame holds the air here: the rotation's dwell plus what a frame change costs.
    var frameTime: Duration { options.beaconMinimumDwell + BlueZBeacon.frameChangeCost }

    enum ProbeResult { case accepted, refused, inconclusive }

    /// Registers an extended broadcast of `length` bytes and withdraws it at once.
    func probe(_ conn: DBusConnection, _ adapter: DBusObjectPath, length: Int) async throws -> ProbeResult {
        let frame = BlueZBeacon.probeFrame(length: length)
        let iface = DBusInterface(BlueZ.advertisement, methods: [DBusMethod("Release") { _ in [] }], properties: [
            DBusProperty("Type", .string, value: .string("broadcast")),
            DBusProperty("ManufacturerData", DBusSignature("a{qv}"), value: Self.manufacturerData(0xFFFF, frame)),
            DBusProperty("SecondaryChannel", .string, value: .string("1M")),
        ])
        let object: DBusExportedObject
        do {
            object = try conn.export(probePath, interfaces: [iface])
        } catch {
            return .inconclusive
        }
        defer { object.unexport() }
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.advertisingManager,
                                    method: "RegisterAdvertisement",
                                    arguments: [.objectPath(probePath), .stringVariantDictionary([:])],
                                    timeout: options.callTimeout)
        } catch let e as DBusError {
            if e.meansBluetoothdGone { throw fail(.bluetoothdNotRunning) }
            if e.name == "org.bluez.Error.NotPermitted" || e.name == "org.bluez.Error.AlreadyExists" { return .inconclusive }
            logger.info("beacon: \(length)-byte extended frames refused (\(e.name)): BlueZ before 5.69 or the kernel caps advertising data at 31 bytes; using legacy frames")
            return .refused
        }
        _ = try? await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.advertisingManager,
                                 method: "UnregisterAdvertisement", arguments: [.objectPath(probePath)],
                                 timeout: options.callTimeout)
        return .accepted
    }

    // MARK: Interval

    /// bluetoothd 5.66 applies MinInterval/MaxInterval only with experimental features, which is also what
    /// makes it list SupportedFeatures/SupportedCapabilities (the peripheral's rule, `PeripheralAdvertising.swift`).
    func noteIntervalSupport(_ interval: Duration) {
        let props = manager ?? [:]
        let honoured = props["SupportedCapabilities"] != nil || props["SupportedFeatures"] != nil
        let before = intervalSupport.withLock { s -> AdvertisingIntervalSupport in
            let b = s
            s = honoured ? .honoured : .ignored
            return b
        }
        if !honoured && before != .ignored { logger.warning("beacon: \(Self.intervalNote(interval))") }
    }

    static func intervalNote(_ interval: Duration) -> String {
        "bluetoothd ignores the beacon's requested interval (\(interval)): MinInterval/MaxInterval need its "
            + "experimental features, so the kernel's default applies between frame changes. "
            + "Fix: set `Experimental = true` under [General] in /etc/bluetooth/main.conf, then sudo systemctl restart bluetooth"
    }

    // MARK: Shutdown

    func shutdown() async {
        guard !closed else { return }
        let c = counters.withLock { $0 }
        if c.registrations > 0 {
            logger.info("""
                beacon: \(c.frameChanges) frame changes, \(c.framesConfirmed) frames confirmed by bluetoothd, \(c.heldForConfirmation) \
                changes waited for a confirmation, \(c.confirmationTimeouts) confirmations given up
                """)
        }
        await stop()
        closed = true
        ownerWatch?.cancel()
        connection?.close()
        connection = nil
        openConnection.withLock { $0 = nil }
        status.close()
        taken.finish()
    }

    /// From a deinit: closing the connection withdraws the advertisement (bluetoothd watches its owner).
    nonisolated func abandon() {
        openConnection.withLock { c in
            c?.close()
            c = nil
        }
    }
}
