import ClickerTransport
import DBus

/// A local copy of BlueZ's object tree (bleak's model): filled once from GetManagedObjects, then kept
/// current from InterfacesAdded, InterfacesRemoved and PropertiesChanged. Pure value, no I/O.
///
/// Devices are what grows with the room, so of each Device1 only the properties the backends read
/// are kept (`keptDeviceProperties`); bluetoothd sends about fourteen, among them advertising blobs
/// that change with every advertisement and are delivered as reports instead. The freedesktop
/// interfaces every object lists (Introspectable, Properties) are not kept either. Adapters and GATT
/// objects, few and small, are kept whole.
struct ObjectMirror: Sendable {
    typealias Properties = [String: DBusValue]
    typealias Interfaces = [String: Properties]

    private(set) var objects: [DBusObjectPath: Interfaces] = [:]

    /// The Device1 properties the backends look up. Add a name here before reading it from the mirror.
    static let keptDeviceProperties: Set<String> = ["Address", "Connected", "Paired", "ServicesResolved"]

    static func keeps(_ interface: String) -> Bool { interface.hasPrefix("org.bluez.") }

    static func keeps(_ property: String, of interface: String) -> Bool {
        interface != BlueZ.device || keptDeviceProperties.contains(property)
    }

    init() {}

    init(managedObjects: [DBusObjectPath: Interfaces]) {
        replaceAll(with: managedObjects)
    }

    mutating func replaceAll(with managedObjects: [DBusObjectPath: Interfaces]) {
        objects = [:]
        objects.reserveCapacity(managedObjects.count)
        for (path, interfaces) in managedObjects { interfacesAdded(path, interfaces) }
    }

    mutating func removeAll() { objects = [:] }

    mutating func interfacesAdded(_ path: DBusObjectPath, _ interfaces: Interfaces) {
        var entry = objects[path] ?? [:]
        for (name, props) in interfaces where Self.keeps(name) {
            var kept = entry[name] ?? [:]
            for (k, v) in props where Self.keeps(k, of: name) { kept[k] = v.unwrapped }
            entry[name] = kept
        }
        if !entry.isEmpty { objects[path] = entry }
    }

    /// Returns true when the object is gone entirely.
    @discardableResult
    mutating func interfacesRemoved(_ path: DBusObjectPath, _ names: [String]) -> Bool {
        guard var entry = objects[path] else { return true }
        for n in names { entry[n] = nil }
        if entry.isEmpty {
            objects[path] = nil
            return true
        }
        objects[path] = entry
        return false
    }

    /// Applies a PropertiesChanged. Changes for objects or interfaces not in the mirror are ignored
    /// (BlueZ announces every object with InterfacesAdded first).
    mutating func propertiesChanged(_ path: DBusObjectPath, _ interface: String, _ changed: Properties,
                                    _ invalidated: [String]) {
        guard objects[path]?[interface] != nil else { return }
        for (k, v) in changed where Self.keeps(k, of: interface) { objects[path]?[interface]?[k] = v.unwrapped }
        for k in invalidated { objects[path]?[interface]?[k] = nil }
    }

    /// Removes every object at or below `path` (an adapter going away takes its devices along).
    mutating func removeSubtree(_ path: DBusObjectPath) {
        for p in objects.keys where p.isDescendant(of: path) { objects[p] = nil }
    }

    func properties(_ path: DBusObjectPath, _ interface: String) -> Properties? { objects[path]?[interface] }

    func bool(_ path: DBusObjectPath, _ interface: String, _ name: String) -> Bool? {
        if case .boolean(let b)? = objects[path]?[interface]?[name] { return b }
        return nil
    }

    func string(_ path: DBusObjectPath, _ interface: String, _ name: String) -> String? {
        switch objects[path]?[interface]?[name] {
        case .string(let s)?: s
        case .objectPath(let p)?: p.rawValue
        default: nil
        }
    }

    /// Adapters in path order: (path, interface name such as hci0, address, powered).
    func adapters() -> [(path: DBusObjectPath, name: String, address: DeviceAddress?, powered: Bool)] {
        objects.compactMap { path, ifaces -> (DBusObjectPath, String, DeviceAddress?, Bool)? in
            guard let props = ifaces[BlueZ.adapter] else { return nil }
            let name = String(path.rawValue.split(separator: "/").last ?? Substring(path.rawValue))
            var address: DeviceAddress? = nil
            if case .string(let a)? = props["Address"] { address = DeviceAddress(a) }
            var powered = false
            if case .boolean(let p)? = props["Powered"] { powered = p }
            return (path, name, address, powered)
        }.sorted { $0.0 < $1.0 }.map { (path: $0.0, name: $0.1, address: $0.2, powered: $0.3) }
    }

    /// The Device1 object for `address` below `adapter`, if the mirror has one.
    func devicePath(adapter: DBusObjectPath, address: DeviceAddress) -> DBusObjectPath? {
        if let p = DevicePath.path(adapter: adapter, address: address), objects[p]?[BlueZ.device] != nil { return p }
        // Fall back to the Address property (paths normally encode it, but do not rely on it).
        for (p, ifaces) in objects where p.isDescendant(of: adapter, orSelf: false) {
            if case .string(let a)? = ifaces[BlueZ.device]?["Address"], DeviceAddress(a) == address { return p }
        }
        return nil
    }

    /// The GattCharacteristic1 with UUID `characteristic` in a GattService1 with UUID `service`, below `device`.
    func characteristicPath(device: DBusObjectPath, service: UUID128, characteristic: UUID128) -> DBusObjectPath? {
        var services: Set<DBusObjectPath> = []
        for (p, ifaces) in objects where p.isDescendant(of: device, orSelf: false) {
            if case .string(let u)? = ifaces[BlueZ.gattService]?["UUID"], UUID128(u) == service { services.insert(p) }
        }
        guard !services.isEmpty else { return nil }
        for (p, ifaces) in objects where p.isDescendant(of: device, orSelf: false) {
            guard let c = ifaces[BlueZ.gattCharacteristic], case .string(let u)? = c["UUID"], UUID128(u) == characteristic
            else { continue }
            if case .objectPath(let s)? = c["Service"], services.contains(s) { return p }
        }
        return nil
    }

    /// Whether a service with UUID `service` exists below `device` (to tell "no service" from "no characteristic").
    func hasService(device: DBusObjectPath, service: UUID128) -> Bool {
        objects.contains { p, ifaces in
            guard p.isDescendant(of: device, orSelf: false), case .string(let u)? = ifaces[BlueZ.gattService]?["UUID"]
            else { return false }
            return UUID128(u) == service
        }
    }

    var count: Int { objects.count }
}

extension ObjectMirror: DBusDecodable {
    /// Reads a GetManagedObjects reply (`a{oa{sa{sv}}}`) straight into a mirror, decoding only what the
    /// mirror keeps: no intermediate copy of every property of every object (with a room of devices,
    /// that copy was the daemon's largest allocation, and glibc keeps such peaks resident).
    init(from reader: inout DBusMessageReader) throws {
        self.init()
        try reader.forEachDictEntry { object in
            let path = try object.readObjectPath()
            var entry: Interfaces = [:]
            try object.forEachDictEntry { iface in
                let name = try iface.readString()
                guard Self.keeps(name) else { return try iface.skip() }
                var props: Properties = [:]
                try iface.forEachDictEntry { prop in
                    let key = try prop.readString()
                    guard Self.keeps(key, of: name) else { return try prop.skip() }
                    props[key] = try prop.read().unwrapped
                }
                entry[name] = props
            }
            if !entry.isEmpty { objects[path] = entry }
        }
    }

    init(dbusValue: DBusValue) throws {
        self.init(managedObjects: try [DBusObjectPath: Interfaces](dbusValue: dbusValue))
    }
}
