import ClickerTransport
import DBus

/// Advertising (GAP, peripheral role): the exported LEAdvertisement1 and its registration.
extension PeripheralEngine {
    func advertise(_ payload: AdvertisingPayload) async throws {
        if advertisementRegistered, self.payload == payload, connection?.isConnected == true { return }
        let (conn, adapter) = try await ensureReady()
        guard adapterInterfaces[BlueZ.advertisingManager] != nil else { throw fail(.advertisingUnsupported(adapterName)) }
        noteIntervalSupport(payload.interval)
        if advertisementRegistered, var same = self.payload, intervalSupport.withLock({ $0 }) == .ignored {
            // bluetoothd ignores intervals: a new one alone would only take the advertisement off the air a moment.
            same.interval = payload.interval
            if same == payload {
                self.payload = payload
                return
            }
        }
        if advertisementRegistered || advertisementUncertain { await unregisterAdvertisement(conn, adapter) }
        advertisement?.unexport()
        advertisement = nil

        let ms = UInt32(clamping: max(20, min(10_240, payload.interval.components.seconds * 1000
            + payload.interval.components.attoseconds / 1_000_000_000_000_000)))
        let manufacturer = DBusValue.dictionary(key: .uint16, value: .variant,
                                                [DBusDictEntry(.uint16(payload.companyID), .variant(.bytes(payload.data)))])
        let iface = DBusInterface(BlueZ.advertisement, methods: [
            DBusMethod("Release") { [weak self] _ in
                await self?.released()
                return []
            },
        ], properties: [
            DBusProperty("Type", .string, value: .string(payload.connectable ? "peripheral" : "broadcast")),
            DBusProperty("ManufacturerData", DBusSignature("a{qv}"), value: manufacturer),
            DBusProperty("MinInterval", .uint32, value: .uint32(ms)),
            DBusProperty("MaxInterval", .uint32, value: .uint32(ms)),
        ])
        let object: DBusExportedObject
        do {
            object = try conn.export(advertisementPath, interfaces: [iface])
        } catch let e as DBusError {
            throw fail(.rejected("exporting the advertisement", e))
        }
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.advertisingManager,
                                    method: "RegisterAdvertisement",
                                    arguments: [.objectPath(advertisementPath), .stringVariantDictionary([:])],
                                    timeout: options.registrationTimeout)
        } catch {
            object.unexport()
            // As for the GATT application: an unanswered registration may have been taken; withdrawn first next time.
            if !(error is DBusError) || (error as? DBusError).map({ $0.isTimeout || $0.name == Self.alreadyExists }) == true {
                advertisementUncertain = true
            }
            guard let e = error as? DBusError else { throw error }
            switch e.name {
            case "org.bluez.Error.NotPermitted": throw fail(.noFreeAdvertisingInstance(adapterName))
            case "org.bluez.Error.InvalidLength": throw fail(.advertisementTooLong(payload.data.count))
            default:
                if e.meansBluetoothdGone { throw fail(.bluetoothdNotRunning) }
                throw fail(.rejected("RegisterAdvertisement", e))
            }
        }
        advertisement = object
        advertisementRegistered = true
        self.payload = payload
        let support = intervalSupport.withLock { $0 }
        let note = support == .ignored ? Self.intervalNote(payload.interval) : nil
        status.update {
            $0.state = .advertising
            $0.lastError = note
        }
    }

    static func intervalNote(_ interval: Duration) -> String {
        "bluetoothd ignores the requested advertising interval (\(interval)): MinInterval/MaxInterval need its "
            + "experimental features, so the kernel default (about 1.28 s) applies and a full room is counted slowly. "
            + "Fix: set `Experimental = true` under [General] in /etc/bluetooth/main.conf, then sudo systemctl restart bluetooth"
    }

    /// bluetoothd exposes SupportedFeatures/SupportedCapabilities on LEAdvertisingManager1 only with
    /// experimental features on, which is also what makes it apply MinInterval/MaxInterval (BlueZ 5.66).
    func noteIntervalSupport(_ interval: Duration) {
        let props = adapterInterfaces[BlueZ.advertisingManager] ?? [:]
        let honoured = props["SupportedCapabilities"] != nil || props["SupportedFeatures"] != nil
        let before = intervalSupport.withLock { s -> AdvertisingIntervalSupport in
            let b = s
            s = honoured ? .honoured : .ignored
            return b
        }
        if !honoured && before != .ignored { logger.warning("\(Self.intervalNote(interval))") }
    }

    func released() {
        guard advertisementRegistered else { return }
        advertisementRegistered = false
        logger.warning("bluetoothd released the advertisement")
        status.update {
            $0.state = .stopped
            $0.lastError = "bluetoothd released the advertisement (adapter reset or removed); advertise again to resume"
        }
    }

    func unregisterAdvertisement(_ conn: DBusConnection, _ adapter: DBusObjectPath) async {
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.advertisingManager,
                                    method: "UnregisterAdvertisement", arguments: [.objectPath(advertisementPath)],
                                    timeout: options.callTimeout)
        } catch {
            logger.debug("UnregisterAdvertisement: \(error)")
        }
        advertisementRegistered = false
        advertisementUncertain = false
    }

    func stopAdvertising() async throws {
        payload = nil
        if advertisementRegistered, let conn = connection, let adapter = adapterPath {
            await unregisterAdvertisement(conn, adapter)
        }
        advertisement?.unexport()
        advertisement = nil
        advertisementRegistered = false
        status.update { $0.state = .stopped }
    }
}
