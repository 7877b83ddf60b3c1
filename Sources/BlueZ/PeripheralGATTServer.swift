import ClickerTransport
import DBus
import Synchronization

/// The served characteristic value, shared with ReadValue handlers.
final class ValueCell: Sendable {
    private let bytes = Mutex<[UInt8]>([])
    func get() -> [UInt8] { bytes.withLock { $0 } }
    func set(_ v: [UInt8]) { bytes.withLock { $0 = v } }
}

/// The GATT server: one primary service with one readable characteristic, registered with GattManager1.
extension PeripheralEngine {
    func publish(service: UUID128, characteristic: UUID128, value newValue: [UInt8]) async throws {
        value.set(newValue)
        if gattRegistered, let key = gattKey, key.0 == service, key.1 == characteristic, connection?.isConnected == true {
            return  // ReadValue serves the new value from now on
        }
        let (conn, adapter) = try await ensureReady()
        guard adapterInterfaces[BlueZ.gattManager] != nil else { throw fail(.gattUnsupported(adapterName)) }
        if gattRegistered || gattUncertain { await unregisterApplication(conn, adapter) }
        for o in gattObjects { o.unexport() }
        gattObjects = []

        let app = applicationPath
        let servicePath = (try? app.appending("service0")) ?? app
        let charPath = (try? servicePath.appending("char0")) ?? app
        let cell = value
        conn.addObjectManager(at: app)
        do {
            let s = try conn.export(servicePath, interfaces: [DBusInterface(BlueZ.gattService, properties: [
                DBusProperty("UUID", .string, value: .string(service.description)),
                DBusProperty("Primary", .boolean, value: .boolean(true)),
                DBusProperty("Characteristics", DBusSignature("ao"), value: .objectPathArray([charPath])),
            ])])
            let c = try conn.export(charPath, interfaces: [DBusInterface(BlueZ.gattCharacteristic, methods: [
                DBusMethod("ReadValue", in: [DBusArgument("options", DBusSignature("a{sv}"))],
                           out: [DBusArgument("value", DBusSignature("ay"))]) { call in
                    let bytes = cell.get()
                    var offset = 0
                    if case .dictionary(_, _, let entries)? = call.arguments.first {
                        for e in entries where e.key == .string("offset") {
                            if case .uint16(let o) = e.value.unwrapped { offset = Int(o) }
                        }
                    }
                    guard offset <= bytes.count else {
                        throw DBusError(name: "org.bluez.Error.InvalidOffset", message: "offset \(offset) beyond \(bytes.count) bytes")
                    }
                    return [.bytes(Array(bytes[offset...]))]
                },
            ], properties: [
                DBusProperty("UUID", .string, value: .string(characteristic.description)),
                DBusProperty("Service", .objectPath, value: .objectPath(servicePath)),
                DBusProperty("Flags", DBusSignature("as"), value: .stringArray(["read"])),
                DBusProperty("Value", DBusSignature("ay"), emitsChanged: .false, getter: { .bytes(cell.get()) }),
            ])])
            gattObjects = [s, c]
        } catch let e as DBusError {
            for o in gattObjects { o.unexport() }
            gattObjects = []
            throw fail(.rejected("exporting the GATT application", e))
        }
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.gattManager,
                                    method: "RegisterApplication", arguments: [.objectPath(app), .stringVariantDictionary([:])],
                                    timeout: options.registrationTimeout)
        } catch {
            for o in gattObjects { o.unexport() }
            gattObjects = []
            // No answer (a timeout, or the call was cancelled), or bluetoothd holds our path already: it may
            // have registered the application, and would refuse every later registration of the path
            // (AlreadyExists). The next try withdraws it first.
            if !(error is DBusError) || (error as? DBusError).map({ $0.isTimeout || $0.name == Self.alreadyExists }) == true {
                gattUncertain = true
            }
            guard let e = error as? DBusError else { throw error }
            if e.meansBluetoothdGone { throw fail(.bluetoothdNotRunning) }
            throw fail(.rejected("RegisterApplication", e))
        }
        gattRegistered = true
        gattKey = (service, characteristic)
    }

    func unregisterApplication(_ conn: DBusConnection, _ adapter: DBusObjectPath) async {
        do {
            _ = try await conn.call(destination: BlueZ.service, path: adapter, interface: BlueZ.gattManager,
                                    method: "UnregisterApplication", arguments: [.objectPath(applicationPath)],
                                    timeout: options.callTimeout)
        } catch {
            logger.debug("UnregisterApplication: \(error)")
        }
        gattRegistered = false
        gattUncertain = false
    }
}
