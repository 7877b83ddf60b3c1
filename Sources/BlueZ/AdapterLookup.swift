import ClickerTransport
import DBus

extension DBusBusTarget {
    /// How messages name the bus: "the system bus", or the address.
    var spokenName: String {
        switch self {
        case .system: "the system bus"
        case .session: "the session bus"
        case .address(let a, _): a
        }
    }
}

extension BlueZ {
    typealias Adapter = (path: DBusObjectPath, name: String, address: DeviceAddress?, powered: Bool)

    /// One reading of bluetoothd's object tree and the adapter `selection` picks from it: what the
    /// peripheral and the tally's beacon do on connecting and after bluetoothd restarts (the central keeps
    /// a live mirror instead, `CentralSession.swift`). The adapter may be powered off: the caller says so
    /// under the adapter's name. Throws ``BlueZError``.
    static func lookUpAdapter(_ conn: DBusConnection, _ selection: AdapterSelection,
                              timeout: Duration) async throws -> (mirror: ObjectMirror, adapter: Adapter) {
        let mirror: ObjectMirror
        do {
            mirror = try await conn.call(ObjectMirror.self, destination: service, path: root,
                                         interface: objectManager, method: "GetManagedObjects", timeout: timeout)
        } catch let e as DBusError where e.meansBluetoothdGone {
            throw BlueZError.bluetoothdNotRunning
        } catch let e as DBusError {
            throw BlueZError.rejected("GetManagedObjects", e)
        }
        guard let chosen = mirror.adapter(matching: selection) else {
            throw BlueZError.noAdapter(selection.description, mirror.adapters().map(\.name))
        }
        return (mirror, chosen)
    }

    /// Calls `changed` with bluetoothd's new unique name (empty when it went away) until it returns
    /// false or the connection closes.
    static func followOwner(on conn: DBusConnection,
                            _ changed: @escaping @Sendable (String) async -> Bool) -> Task<Void, Never> {
        Task {
            guard let changes = try? await conn.nameOwnerChanges(for: service) else { return }
            for await change in changes {
                guard await changed(change.newOwner) else { return }
            }
        }
    }
}
