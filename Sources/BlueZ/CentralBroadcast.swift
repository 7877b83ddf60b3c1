import ClickerTransport
import DBus
import Logging
import Synchronization

/// Broadcasting (GAP broadcaster role, the tally's beacon) over BlueZ: one `org.bluez.LEAdvertisement1`
/// of Type `broadcast` whose only data is `ManufacturerData {company: frame}`. Nothing the host would add
/// bytes for is asked (no Includes, LocalName, Appearance, TxPower, Discoverable), so a legacy frame of
/// ``BlueZBeacon/legacyFrameLength`` bytes always fits (PROTOCOL.md §11.1). Discovery goes on meanwhile:
/// the advertisement lives on its own bus connection, apart from the scanning engine, so a refusal or a
/// failure here never touches counting.
///
/// Rotation. bluetoothd (5.66, `src/advertising.c`) watches every registered advertisement's properties
/// (`g_dbus_proxy_set_property_watch`): a `PropertiesChanged` carrying `ManufacturerData` is parsed from the
/// signal itself (no Get) and refreshes the kernel's advertising instance (MGMT Add Advertising, or Add Ext
/// Adv Params + Add Ext Adv Data). That is the cheapest way to rotate: one signal per frame, no round trip,
/// the same instance and registration. Re-registering per frame would cost three round trips (Unregister,
/// Register, bluetoothd's GetAll) and leave the air empty between them; one instance per frame runs out of
/// instances (typically 4–5 per controller) long before a page of acknowledgements does. Frames change no
/// faster than bluetoothd takes them (`CentralBroadcastPacing.swift`).
///
/// Unregistering is the dangerous call on 5.66: it frees the advertisement while refreshes that frame
/// changes started may still be queued for it, and bluetoothd aborts when they complete (seen in the
/// QEMU guest, twice in five runs, when the beacon re-registered for every change of interval). So the
/// beacon registers once and unregisters only when it stops, or when company or legacy/extended change,
/// and then only after frame changes have been quiet for `beaconUnregisterSettle`. A change of interval is
/// a property change too, and only where bluetoothd applies intervals (experimental features; elsewhere
/// the number is ignored and nothing is sent): bluetoothd refreshes once per changed property, so the two
/// go out one at a time in the order that never passes through MinInterval > MaxInterval.
///
/// What the rotation may not do on BlueZ 5.66: a refresh triggered by a property change has no D-Bus
/// request to answer, and if the kernel refuses it (extended-advertising kernels), 5.66 builds an error
/// reply to a null message and aborts (fixed in 5.74, "advertising: Do not crash in case of adv update
/// failure"). So no frame that could be refused is ever sent as a property change: every frame is checked
/// against what the registration accepted before it goes out, and none is sent while the scanning side
/// sees the adapter powered off (the frame waits, and goes out at the first tick after power returns).
/// TxPower is write-only on the object, and never signalled: after each extended refresh bluetoothd (5.66
/// to 5.82, `add_adv_params_callback`) writes the TX power the kernel chose back to the advertisement
/// (Properties.Set). That write is how the beacon learns that a frame change was taken
/// (`CentralBroadcastPacing.swift`); an object that signalled the change would start another refresh, and
/// one that listed the property would have bluetoothd with experimental features apply it as a request.
extension BlueZCentral: BroadcasterTransport {
    /// Legacy: ``BlueZBeacon/legacyFrameLength`` bytes (the host may add Flags). Extended (what one extended
    /// advertising report carries, ``BlueZBeacon/singleReportFrameLength``: 222 bytes, and never more than
    /// `SupportedCapabilities.MaxAdvLen` leaves after ``BlueZBeacon/extendedOverhead``) when the adapter lists
    /// `SupportedSecondaryChannels` and a probe registration of an extended frame is accepted: BlueZ before
    /// 5.69 caps every advertisement at 31 bytes of AD (`BT_AD_MAX_DATA_LEN`) whatever the controller
    /// offers, and only trying tells.
    /// The probe is a broadcast registered and withdrawn at once (``BlueZBeacon/probeFrame(length:)``: zero
    /// bytes, which every decoder takes for someone else's data); its result is kept until bluetoothd restarts.
    public func broadcastCapabilities() async throws -> BroadcastCapabilities { try await beacon.capabilities() }

    public func broadcast(_ payload: BroadcastPayload) async throws { try await beacon.broadcast(payload) }

    public func stopBroadcasting() async throws { await beacon.stop() }

    /// The frames bluetoothd confirmed it took (`CentralBroadcastPacing.swift`); nothing where it does not confirm.
    public func framesTaken() -> AsyncStream<FrameTaken> { beacon.taken.stream() }

    /// The beacon's state (advertising, stopped, recovering) and its last problem, on every change.
    public func broadcastStatus() -> AsyncStream<RadioStatus> { beacon.status.stream() }

    /// Whether bluetoothd applies the beacon's interval (known after the first broadcast).
    public var broadcastIntervalSupport: AdvertisingIntervalSupport { beacon.intervalSupport.withLock { $0 } }

    /// Counters of the beacon.
    public var broadcastStatistics: BlueZBeaconStatistics { beacon.counters.withLock { $0 } }
}

/// Sizes and settings of the BlueZ beacon.
public enum BlueZBeacon {
    /// Manufacturer data of a legacy frame that fits even when the host adds Flags (PROTOCOL.md §11.1).
    public static let legacyFrameLength = 24
    /// What bluetoothd and the kernel keep of `SupportedCapabilities.MaxAdvLen` besides a frame: bluetoothd 5.82
    /// puts a Flags AD (3 bytes) in the data, and Linux 6.12 still holds room for the Flags and the TX power it
    /// may add (3 + 3) besides the manufacturer AD's header (4). Measured in the Debian 13 guest (MaxAdvLen
    /// 251): 238 bytes of manufacturer data are taken, 241 are refused, and bluetoothd 5.82 then often dies
    /// of a corrupted heap ("free(): invalid next size"), so no registration, not even the probe, may ask
    /// for more.
    public static let extendedOverhead = 13
    /// The longest frame a voter behind BlueZ receives whole: what one extended advertising report carries
    /// (``ClickerTransport/BroadcastCapabilities/singleReportData``, 229) less Flags (3) and the manufacturer
    /// AD header (4).
    public static let singleReportFrameLength = BroadcastCapabilities.singleReportData - 7
    /// What putting a frame on the air costs besides the rotation's dwell (`max(interval, beaconMinimumDwell)`):
    /// bluetoothd parses the property change and asks the kernel to refresh the advertising instance, and the
    /// controller's next event follows. An independent listener saw the frames 100–150 ms apart through
    /// bluetoothd 5.66 (issue 39), so the beacon states 50 ms: its frames cost `interval + 50 ms`, at least
    /// 150 ms (``ClickerTransport/BroadcastCapabilities/frameTime(interval:)``). Stated long rather than short:
    /// the tally then puts STATE frames closer together than needed, never further apart.
    public static let frameChangeCost: Duration = .milliseconds(50)
    /// How long a frame change may wait for bluetoothd's confirmation before the beacon gives it up and
    /// changes frames again (`CentralBroadcastPacing.swift`): far longer than a refresh takes (tens of ms
    /// on a laptop, up to a few hundred in the QEMU guests), short enough that a lost confirmation costs
    /// the followers no STATE gap their "no beacon" wait (5 s) would notice.
    public static let confirmationTimeout: Duration = .seconds(1)

    /// How long a frame change waits for its confirmation after `n` were given up in a row:
    /// ``confirmationTimeout`` doubled for each, at most 8 s.
    public static func confirmationWait(afterGivingUp n: Int) -> Duration {
        confirmationTimeout * (1 << min(max(n, 0), 3))
    }

    /// The manufacturer data of the probe that learns whether extended frames go through: all zero bytes, so
    /// it lacks the clicker magic (`CB`, PROTOCOL.md §1) and every decoder, the voters' and the tally's, takes
    /// it for someone else's data (`notOurs`) rather than a malformed frame of the poll.
    public static func probeFrame(length: Int) -> [UInt8] { [UInt8](repeating: 0, count: max(1, length)) }
}

/// What the beacon has done so far.
public struct BlueZBeaconStatistics: Sendable, Hashable {
    /// RegisterAdvertisement calls accepted (first broadcast, interval or mode changes, recoveries).
    public var registrations = 0
    /// Frames put on the air by a ManufacturerData property change (rotation and replacements).
    public var frameChanges = 0
    /// Interval changes sent as property changes (only where bluetoothd applies intervals).
    public var intervalChanges = 0
    /// Frame changes held back because the adapter was powered off.
    public var heldWhilePoweredOff = 0
    /// Frame changes bluetoothd confirmed it took (its TX power write-back after the refresh).
    public var framesConfirmed = 0
    /// Frame changes that waited for bluetoothd to take the one before (``framesConfirmed``).
    public var heldForConfirmation = 0
    /// Refreshes bluetoothd never confirmed within ``BlueZBeacon/confirmationTimeout``.
    public var confirmationTimeouts = 0
    public init() {}
}

actor BeaconAdvertiser {
    /// What a registration fixes; a payload that needs another shape is registered again.
    struct Shape: Equatable {
        var companyID: UInt16
        var extended: Bool
        var intervalMs: UInt32
    }

    let options: BlueZCentralOptions
    let logger: Logger
    nonisolated let status: RadioStatusBroadcaster
    nonisolated let intervalSupport = Mutex<AdvertisingIntervalSupport>(.unknown)
    nonisolated let counters = Mutex(BlueZBeaconStatistics())
    /// The bus connection, for `abandon()` from a deinit (no await there).
    nonisolated let openConnection = Mutex<DBusConnection?>(nil)

    var connection: DBusConnection?
    var adapterPath: DBusObjectPath?
    var adapterName: String
    var manager: [String: DBusValue]?
    var object: DBusExportedObject?
    var registered: Shape?
    /// What is on the air (registered), and what the caller last asked for (registered again after a restart).
    var payload: BroadcastPayload?
    var wanted: BroadcastPayload?
    var frameIndex = 0
    /// The frame bluetoothd was last given (at registration or by a property change), and when the last
    /// property change went out.
    var shown: [UInt8]?
    var lastFrameChange: RadioInstant?
    /// The refreshes asked of bluetoothd and not yet confirmed, oldest first: the frame of a frame change
    /// (or of the registration), nil for an interval change, and when each was asked for.
    var inFlight: [(frame: [UInt8]?, at: RadioInstant)] = []
    /// Whether bluetoothd confirms refreshes here (a TX power write-back came): frame changes then wait for it.
    var confirms = false
    /// A frame change waits for the confirmation of the one before.
    var held = false
    /// Confirmations given up in a row (each doubles the next wait).
    var givenUpInARow = 0
    nonisolated let taken = FrameTakenFeed()
    var generation: UInt64 = 0
    /// Counts `stop()` calls: a broadcast that was waiting on the bus when one came does not register after it.
    var stops: UInt64 = 0
    var rotation: Task<Void, Never>?
    var cachedCapabilities: BroadcastCapabilities?
    /// Whether an extended registration went through (kept when bluetoothd restarts, unlike the capabilities).
    var broadcastExtended = false
    var ownerWatch: Task<Void, Never>?
    var closed = false
    /// Whether the adapter is powered, as the scanning engine last saw it (nil: not known).
    let adapterPowered: @Sendable () -> Bool?

    init(options: BlueZCentralOptions, logger: Logger, adapterPowered: @escaping @Sendable () -> Bool? = { nil }) {
        self.options = options
        self.logger = logger
        self.adapterPowered = adapterPowered
        adapterName = options.adapter.logName
        status = RadioStatusBroadcaster(RadioStatus(adapter: options.adapter.logName, state: .stopped))
    }

    var advertisementPath: DBusObjectPath { (try? options.beaconObjectPath.appending("beacon0")) ?? options.beaconObjectPath }
    var probePath: DBusObjectPath { (try? options.beaconObjectPath.appending("probe")) ?? options.beaconObjectPath }

    /// The failure last logged: the caller's retries of the same failure are not logged again until a
    /// broadcast went out in between.
    var failureLogged: BlueZError?

    func fail(_ e: BlueZError) -> BlueZError {
        if failureLogged != e { logger.error("beacon: \(e)") }
        failureLogged = e
        status.update { $0.lastError = e.description }
        return e
    }

    // MARK: Broadcasting

    func broadcast(_ p: BroadcastPayload) async throws {
        guard !p.frames.isEmpty else { throw TransportError.unsupported("a broadcast needs at least one frame") }
        let stopsBefore = stops
        let longest = p.frames.reduce(0) { max($0, $1.count) }
        var extended = false
        if longest > BlueZBeacon.legacyFrameLength {
            let caps = try await capabilities()
            guard caps.extended, longest <= caps.maxFrameLength else {
                throw TransportError.unsupported("a broadcast frame of \(longest) bytes; adapter \(adapterName) carries "
                    + "\(caps.maxFrameLength) (\(caps.extended ? "extended" : "legacy") advertising through BlueZ)")
            }
            extended = true
        } else if cachedCapabilities?.extended == true {
            // Short frames (the closing STATE) keep the registration's extended shape: the same advertising set,
            // on the same secondary channel, and no registration again for a shape that changed.
            extended = true
        } else if broadcastExtended {
            // The same after bluetoothd came back (it forgot the capabilities): a closing STATE registered
            // then goes out as the frames before it did, with SecondaryChannel, on the adapter that took them.
            extended = true
        }
        wanted = p
        let (conn, adapter) = try await ensureReady()
        guard manager != nil else { throw fail(.advertisingUnsupported(adapterName)) }
        guard stops == stopsBefore else { return }  // stopped meanwhile: the later call wins
        noteIntervalSupport(p.interval)
        let asked = Self.milliseconds(p.interval)
        // Where bluetoothd ignores intervals the registered number stands: changing it would cost refreshes for nothing.
        let intervalMs = intervalSupport.withLock { $0 } == .ignored ? registered?.intervalMs ?? asked : asked
        let shape = Shape(companyID: p.companyID, extended: extended, intervalMs: intervalMs)
        if let r = registered, r.companyID == shape.companyID, r.extended == shape.extended, object != nil, conn.isConnected {
            if r.intervalMs != shape.intervalMs { changeInterval(from: r.intervalMs, to: shape.intervalMs) }
            registered = shape
            payload = p
            frameIndex = 0
            apply()
            startRotation()
            return
        }
        do {
            try await register(p, shape, conn, adapter)
        } catch {
            payload = nil  // nothing is on the air now; nothing stale is registered again after a restart
            status.update { $0.state = .stopped }
            throw error
        }
        if stops != stopsBefore {  // stopped while registering: withdraw again
            await unregister(conn, adapter)
            object?.unexport()
            object = nil
            status.update { $0.state = .stopped }
            return
        }
        payload = p
        frameIndex = 0
        failureLogged = nil
        if shape.extended { broadcastExtended = true }
        startRotation()
    }

    func stop() async {
        stops &+= 1
        payload = nil
        wanted = nil
        stopRotation()
        if registered != nil, let conn = connection, let adapter = adapterPath { await unregister(conn, adapter) }
        registered = nil
        forgetInFlight()
        object?.unexport()
        object = nil
        status.update { $0.state = .stopped }
    }

    /// (Re)registers the advertisement for `p` in `shape`, replacing what was registered.
    func register(_ p: BroadcastPayload, _ shape: Shape, _ conn: DBusConnection, _ adapter: DBusObjectPath) async throws {
        stopRotation()
        if registered != nil { await unregister(conn, adapter) }
        object?.unexport()
        object = nil
        let exported: DBusExportedObject
        do {
            exported = try conn.export(advertisementPath, interfaces: [advertisementInterface(p.frames[0], shape)])
        } catch let e as DBusError {
            throw fail(.rejected("exporting the beacon advertisement", e))
        }
        // bluetoothd refreshes the instance, and confirms it, before it answers.
        inFlight = [(p.frames[0], options.clock.now)]
        held = false
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.advertisingManager,
                                    method: "RegisterAdvertisement",
                                    arguments: [.objectPath(advertisementPath), .stringVariantDictionary([:])],
                                    timeout: options.callTimeout)
        } catch let e as DBusError {
            exported.unexport()
            forgetInFlight()
            throw fail(Self.registrationError(e, adapter: adapterName, length: p.frames[0].count))
        }
        object = exported
        shown = p.frames[0]
        registered = shape
        counters.withLock { $0.registrations += 1 }
        let note = intervalSupport.withLock { $0 } == .ignored ? Self.intervalNote(p.interval) : nil
        status.update {
            $0.adapter = adapterName
            $0.state = .advertising
            $0.lastError = note
        }
    }

    func advertisementInterface(_ first: [UInt8], _ shape: Shape) -> DBusInterface {
        var properties = [
            DBusProperty("Type", .string, value: .string("broadcast")),
            DBusProperty("ManufacturerData", DBusSignature("a{qv}"), value: Self.manufacturerData(shape.companyID, first)),
            DBusProperty("MinInterval", .uint32, value: .uint32(shape.intervalMs)),
            DBusProperty("MaxInterval", .uint32, value: .uint32(shape.intervalMs)),
        ]
        if shape.extended { properties.append(DBusProperty("SecondaryChannel", .string, value: .string("1M"))) }
        // Written by bluetoothd after each refresh, read by no one: not listed, never signalled (see the type's comment).
        properties.append(DBusProperty("TxPower", DBusSignature("n"), access: .write, emitsChanged: .false,
                                       getter: { throw DBusError(name: DBusError.propertyReadOnly, message: "TxPower is write-only") },
                                       setter: { [weak self] _ in Task { await self?.confirmed() } }))
        return DBusInterface(BlueZ.advertisement, methods: [
            DBusMethod("Release") { [weak self] _ in
                await self?.released()
                return []
            },
        ], properties: properties)
    }

    static func manufacturerData(_ company: UInt16, _ frame: [UInt8]) -> DBusValue {
        .dictionary(key: .uint16, value: .variant, [DBusDictEntry(.uint16(company), .variant(.bytes(frame)))])
    }

    /// The interval in whole milliseconds, in BlueZ's accepted 20 ms…10.24 s.
    static func milliseconds(_ d: Duration) -> UInt32 {
        let ms = d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000
        return UInt32(clamping: max(20, min(10_240, ms)))
    }

    static func registrationError(_ e: DBusError, adapter: String, length: Int) -> BlueZError {
        switch e.name {
        case "org.bluez.Error.NotPermitted": .noFreeAdvertisingInstance(adapter)
        case "org.bluez.Error.InvalidLength": .advertisementTooLong(length)
        default: e.meansBluetoothdGone ? .bluetoothdNotRunning : .rejected("RegisterAdvertisement (beacon)", e)
        }
    }

    /// MinInterval and MaxInterval of the registered advertisement, each a property change that bluetoothd
    /// applies on its own: the one that keeps MinInterval ≤ MaxInterval goes first.
    func changeInterval(from old: UInt32, to new: UInt32) {
        guard let object else { return }
        let order = new > old ? ["MaxInterval", "MinInterval"] : ["MinInterval", "MaxInterval"]
        do {
            for name in order {
                try object.setProperty(name, .uint32(new), interface: BlueZ.advertisement)
                inFlight.append((nil, options.clock.now))
            }
            counters.withLock { $0.intervalChanges += 1 }
        } catch {
            logger.warning("beacon interval change not sent: \(error)")
        }
    }

    func unregister(_ conn: DBusConnection, _ adapter: DBusObjectPath) async {
        if let last = lastFrameChange {
            // Let bluetoothd finish the refreshes the last frame changes started (see the type's comment).
            try? await options.clock.sleep(until: last + options.beaconUnregisterSettle)
        }
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.advertisingManager,
                                    method: "UnregisterAdvertisement", arguments: [.objectPath(advertisementPath)],
                                    timeout: options.callTimeout)
        } catch {
            logger.debug("beacon UnregisterAdvertisement: \(error)")
        }
        registered = nil
    }

    func released() {
        guard registered != nil else { return }
        registered = nil
        forgetInFlight()
        stopRotation()
        logger.warning("bluetoothd released the beacon advertisement")
        status.update {
            $0.state = .stopped
            $0.lastError = "bluetoothd released the beacon (adapter reset or removed); the next broadcast registers it again"
        }
    }
}
