import ClickerTransport
import DBus

/// The GATT client: connect, wait for the services, read one characteristic, disconnect.
extension CentralEngine {
    func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                            timeout: Duration) async throws -> [UInt8] {
        let deadline = RadioInstant.now() + timeout
        func remaining(_ what: String) throws -> Duration {
            let left = deadline - RadioInstant.now()
            if left <= .zero { throw TransportError.timeout("\(what) \(device)") }
            return left
        }
        ensureRunning()
        // Wait for the mirror.
        var conn: DBusConnection? = nil
        var adapter: DBusObjectPath? = nil
        while true {
            let (c, a, ready, startup) = state.withLock { ($0.connection, $0.adapterPath, $0.ready, $0.startupError) }
            if let startup, c == nil { throw startup }
            if let c, let a, ready {
                conn = c
                adapter = a
                break
            }
            _ = try remaining("waiting for bluetoothd before reading")
            try await Task.sleep(for: .milliseconds(10))
        }
        guard let conn, let adapter else { throw TransportError.notConnected(device) }
        guard await slots.acquire(timeout: try remaining("waiting for a free connection slot to")) else {
            throw TransportError.timeout("waiting for a free connection slot to \(device)")
        }
        defer { Task { await slots.release() } }
        // A read that waited for a slot while its caller went away (shutdown) makes no connection.
        try Task.checkCancellation()
        guard let path = state.withLock({ $0.mirror.devicePath(adapter: adapter, address: device) }) else {
            throw TransportError.notConnected(device)
        }
        state.withLock { $0.busy[path, default: 0] += 1 }
        defer { state.withLock { s in
            if let n = s.busy[path], n > 1 { s.busy[path] = n - 1 } else { s.busy[path] = nil }
        } }
        do {
            let value = try await connectAndRead(conn, path, device, service, characteristic, remaining)
            await disconnect(conn, path)
            return value
        } catch {
            await disconnect(conn, path)
            throw error
        }
    }

    private func connectAndRead(_ conn: DBusConnection, _ path: DBusObjectPath, _ device: DeviceAddress,
                                _ service: UUID128, _ characteristic: UUID128,
                                _ remaining: (String) throws -> Duration) async throws -> [UInt8] {
        // Always Connect: BlueZ answers at once when already connected, and the mirror may lag behind.
        do {
            _ = try await conn.call(destination: BlueZ.service, path: path, interface: BlueZ.device,
                                    method: "Connect", timeout: try remaining("connecting to"))
        } catch let e as DBusError {
            if e.isTimeout { throw TransportError.timeout("connecting to \(device)") }
            if e.name != "org.bluez.Error.AlreadyConnected" {
                logger.debug("Connect \(device): \(e)")
                throw TransportError.notConnected(device)
            }
        }
        while state.withLock({ $0.mirror.bool(path, BlueZ.device, "ServicesResolved") != true }) {
            _ = try remaining("resolving GATT services of")
            try await Task.sleep(for: .milliseconds(10))
        }
        // bluetoothd may set ServicesResolved before the InterfacesAdded of the GATT objects reach us
        // (seen on bluez 5.66): give them a moment, within the read's own timeout.
        let lookupEnd = ContinuousClock.now + .seconds(3)
        var found: DBusObjectPath?
        while true {
            found = state.withLock {
                $0.mirror.characteristicPath(device: path, service: service, characteristic: characteristic)
            }
            if found != nil || ContinuousClock.now >= lookupEnd { break }
            _ = try remaining("finding the ballot characteristic of")
            try await Task.sleep(for: .milliseconds(10))
        }
        guard let charPath = found else { throw TransportError.characteristicNotFound(characteristic) }
        do {
            let options = DBusValue.stringVariantDictionary([:])
            return try await conn.call([UInt8].self, destination: BlueZ.service, path: charPath,
                                       interface: BlueZ.gattCharacteristic, method: "ReadValue",
                                       arguments: [options], timeout: try remaining("reading the ballot of"))
        } catch let e as DBusError {
            if e.isTimeout { throw TransportError.timeout("reading the ballot of \(device)") }
            logger.debug("ReadValue \(device): \(e)")
            throw TransportError.notConnected(device)
        }
    }

    private func disconnect(_ conn: DBusConnection, _ path: DBusObjectPath) async {
        _ = try? await conn.call(destination: BlueZ.service, path: path, interface: BlueZ.device,
                                 method: "Disconnect", timeout: .seconds(2))
        // Our own disconnect: do not wait for PropertiesChanged to tell the mirror (a read right after
        // this one must not see a stale ServicesResolved).
        state.withLock { s in
            s.mirror.propertiesChanged(path, BlueZ.device, ["Connected": .boolean(false), "ServicesResolved": .boolean(false)], [])
        }
    }
}
