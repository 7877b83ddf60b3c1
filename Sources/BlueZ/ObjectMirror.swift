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
    /// Parent→child indices, as bleak keeps them: device → its GattService1 objects (by the service's
    /// `Device` property), service → its GattCharacteristic1 objects (by `Service`). Kept with every
    /// change, so a GATT lookup reads a few entries instead of scanning the mirror.
    private(set) var servicesOfDevice: [DBusObjectPath: Set<DBusObjectPath>] = [:]
    private(set) var characteristicsOfService: [DBusObjectPath: Set<DBusObjectPath>] = [:]
    /// Devices whose path does not encode their address (bluetoothd's always do): address → paths.
    private(set) var devicesByAddress: [DeviceAddress: Set<DBusObjectPath>] = [:]

    /// The Device1 properties the backends look up. Add a name here before reading it from the mirror.
    static let keptDeviceProperties: Set<String> = ["Address", "Connected", "Paired", "ServicesResolved"]

    static func keeps(_ interface: String) -> Bool { interface.hasPrefix("org.bluez.") }

    static func keeps(_ property: String, of interface: String) -> Bool {
        interface != BlueZ.device || keptDeviceProperties.contains(property)
    }

    init() {}

    init(managedObjects: [DBusObjectPath: Interfaces]) {
        objects.reserveCapacity(managedObjects.count)
        for (path, interfaces) in managedObjects { interfacesAdded(path, interfaces) }
    }

    mutating func removeAll() {
        objects = [:]
        servicesOfDevice = [:]
        characteristicsOfService = [:]
        devicesByAddress = [:]
    }

    mutating func interfacesAdded(_ path: DBusObjectPath, _ interfaces: Interfaces) {
        let old = objects[path]
        var entry = old ?? [:]
        for (name, props) in interfaces where Self.keeps(name) {
            var kept = entry[name] ?? [:]
            for (k, v) in props where Self.keeps(k, of: name) { kept[k] = v.unwrapped }
            entry[name] = kept
        }
        guard !entry.isEmpty else { return }
        if let old { unindex(path, old) }
        objects[path] = entry
        index(path, entry)
    }

    /// Returns true when the object is gone entirely.
    @discardableResult
    mutating func interfacesRemoved(_ path: DBusObjectPath, _ names: [String]) -> Bool {
        guard var entry = objects[path] else { return true }
        unindex(path, entry)
        for n in names { entry[n] = nil }
        if entry.isEmpty {
            objects[path] = nil
            return true
        }
        objects[path] = entry
        index(path, entry)
        return false
    }

    /// Applies a PropertiesChanged. Changes for objects or interfaces not in the mirror are ignored
    /// (BlueZ announces every object with InterfacesAdded first).
    mutating func propertiesChanged(_ path: DBusObjectPath, _ interface: String, _ changed: Properties,
                                    _ invalidated: [String]) {
        guard let old = objects[path], old[interface] != nil else { return }
        // Only the properties the indices are built from need the object re-indexed.
        let reindex = interface == BlueZ.gattService || interface == BlueZ.gattCharacteristic
            || changed["Address"] != nil || invalidated.contains("Address")
        if reindex { unindex(path, old) }
        for (k, v) in changed where Self.keeps(k, of: interface) { objects[path]?[interface]?[k] = v.unwrapped }
        for k in invalidated { objects[path]?[interface]?[k] = nil }
        if reindex, let new = objects[path] { index(path, new) }
    }

    /// Removes every object at or below `path` (an adapter going away takes its devices along).
    mutating func removeSubtree(_ path: DBusObjectPath) {
        for (p, entry) in objects where p.isDescendant(of: path) {
            unindex(p, entry)
            objects[p] = nil
        }
    }

    func properties(_ path: DBusObjectPath, _ interface: String) -> Properties? { objects[path]?[interface] }

    func bool(_ path: DBusObjectPath, _ interface: String, _ name: String) -> Bool? {
        if case .boolean(let b)? = objects[path]?[interface]?[name] { return b }
        return nil
    }

    /// Adapters in path order: (path, interface name such as hci0, address, powered).
    func adapters() -> [BlueZ.Adapter] {
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
        // Paths normally encode the address; the others are indexed by their Address property.
        return devicesByAddress[address]?.filter { $0.isDescendant(of: adapter, orSelf: false) }.min()
    }

    /// The GattCharacteristic1 with UUID `characteristic` in a GattService1 with UUID `service`, below `device`.
    func characteristicPath(device: DBusObjectPath, service: UUID128, characteristic: UUID128) -> DBusObjectPath? {
        for s in servicesOfDevice[device] ?? [] {
            guard case .string(let u)? = objects[s]?[BlueZ.gattService]?["UUID"], UUID128(u) == service else { continue }
            for c in characteristicsOfService[s] ?? [] {
                if case .string(let u)? = objects[c]?[BlueZ.gattCharacteristic]?["UUID"], UUID128(u) == characteristic {
                    return c
                }
            }
        }
        return nil
    }

    // MARK: Indices

    /// The parent of a GATT object: the object path its property names, else the path one level up.
    private static func owner(_ props: Properties, _ key: String, of path: DBusObjectPath) -> DBusObjectPath? {
        if case .objectPath(let p)? = props[key] { return p }
        let raw = path.rawValue
        guard let slash = raw.lastIndex(of: "/"), slash != raw.startIndex else { return nil }
        return try? DBusObjectPath(String(raw[..<slash]))
    }

    /// The address of a device whose path does not encode it.
    private static func unusualAddress(_ path: DBusObjectPath, _ entry: Interfaces) -> DeviceAddress? {
        guard case .string(let a)? = entry[BlueZ.device]?["Address"], let address = DeviceAddress(a),
              DevicePath.address(of: path.rawValue) != address else { return nil }
        return address
    }

    private mutating func index(_ path: DBusObjectPath, _ entry: Interfaces) {
        if let props = entry[BlueZ.gattService], let device = Self.owner(props, "Device", of: path) {
            servicesOfDevice[device, default: []].insert(path)
        }
        if let props = entry[BlueZ.gattCharacteristic], let service = Self.owner(props, "Service", of: path) {
            characteristicsOfService[service, default: []].insert(path)
        }
        if entry[BlueZ.device] != nil, let address = Self.unusualAddress(path, entry) {
            devicesByAddress[address, default: []].insert(path)
        }
    }

    private mutating func unindex(_ path: DBusObjectPath, _ entry: Interfaces) {
        func remove<K: Hashable>(_ key: K, _ map: inout [K: Set<DBusObjectPath>]) {
            guard let i = map.index(forKey: key) else { return }
            map.values[i].remove(path)
            if map.values[i].isEmpty { map.remove(at: i) }
        }
        if let props = entry[BlueZ.gattService], let device = Self.owner(props, "Device", of: path) {
            remove(device, &servicesOfDevice)
        }
        if let props = entry[BlueZ.gattCharacteristic], let service = Self.owner(props, "Service", of: path) {
            remove(service, &characteristicsOfService)
        }
        if entry[BlueZ.device] != nil, let address = Self.unusualAddress(path, entry) {
            remove(address, &devicesByAddress)
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
            if !entry.isEmpty {
                objects[path] = entry
                index(path, entry)
            }
        }
    }

    init(dbusValue: DBusValue) throws {
        self.init(managedObjects: try [DBusObjectPath: Interfaces](dbusValue: dbusValue))
    }
}

extension ObjectMirror {
    /// The adapter `selection` picks: by name or address, or the first powered one (failing that, the first).
    func adapter(matching selection: AdapterSelection) -> BlueZ.Adapter? {
        let all = adapters()
        return switch selection {
        case .firstPowered: all.first { $0.powered } ?? all.first
        case .name(let n): all.first { $0.name == n }
        case .address(let a): all.first { $0.address == a }
        }
    }
}
