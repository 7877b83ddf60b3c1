import CDBus
import Synchronization

struct InterfaceState {
    var description: DBusInterface
    var values: [String: DBusValue]
}

/// An object exported on a connection. Remove it with ``unexport()``.
public final class DBusExportedObject: Sendable {
    public let path: DBusObjectPath
    let core: ConnectionCore
    let interfaces: Mutex<[(String, InterfaceState)]>

    init(path: DBusObjectPath, core: ConnectionCore, interfaces: [DBusInterface]) {
        self.path = path
        self.core = core
        self.interfaces = Mutex(interfaces.map { iface in
            var values: [String: DBusValue] = [:]
            for p in iface.properties { if let v = p.value { values[p.name] = v } }
            return (iface.name, InterfaceState(description: iface, values: values))
        })
    }

    /// The names of the exported interfaces, in export order.
    public var interfaceNames: [String] { interfaces.withLock { $0.map(\.0) } }

    /// The current value of a property (stored or computed).
    public func property(_ name: String, interface: String) throws -> DBusValue {
        let (prop, stored) = try interfaces.withLock { list -> (DBusProperty, DBusValue?) in
            guard let st = list.first(where: { $0.0 == interface })?.1 else {
                throw DBusError(name: DBusError.unknownInterface, message: "no interface \(interface) on \(path)")
            }
            guard let p = st.description.properties.first(where: { $0.name == name }) else {
                throw DBusError(name: DBusError.unknownProperty, message: "no property \(interface).\(name)")
            }
            return (p, st.values[name])
        }
        if let g = prop.getter { return try g() }
        guard let v = stored else {
            throw DBusError(name: DBusError.failed, message: "property \(interface).\(name) has no value")
        }
        return v
    }

    /// All readable properties of an interface (as `GetAll` returns them).
    public func allProperties(interface: String) throws -> [String: DBusValue] {
        let (props, values) = try interfaces.withLock { list -> ([DBusProperty], [String: DBusValue]) in
            guard let st = list.first(where: { $0.0 == interface })?.1 else {
                throw DBusError(name: DBusError.unknownInterface, message: "no interface \(interface) on \(path)")
            }
            return (st.description.properties, st.values)
        }
        var out: [String: DBusValue] = [:]
        for p in props where p.access != .write {
            if let g = p.getter { out[p.name] = try g() } else if let v = values[p.name] { out[p.name] = v }
        }
        return out
    }

    /// Sets stored properties and emits one `PropertiesChanged` for those whose value changed (honouring
    /// each property's ``DBusProperty/EmitsChanged``). Values must match the declared signatures.
    public func setProperties(_ changes: [String: DBusValue], interface: String) throws {
        let (changed, invalidated) = try interfaces.withLock { list -> ([String: DBusValue], [String]) in
            guard let i = list.firstIndex(where: { $0.0 == interface }) else {
                throw DBusError(name: DBusError.unknownInterface, message: "no interface \(interface) on \(path)")
            }
            var changed: [String: DBusValue] = [:]
            var invalidated: [String] = []
            for (name, value) in changes {
                guard let p = list[i].1.description.properties.first(where: { $0.name == name }) else {
                    throw DBusError(name: DBusError.unknownProperty, message: "no property \(interface).\(name)")
                }
                guard value.signatureString == p.signature.rawValue || (p.signature.rawValue == "ay" && value.signatureString == "ay") else {
                    throw DBusError(name: DBusError.invalidArgs,
                                    message: "property \(name) is '\(p.signature)', got '\(value.signatureString)'")
                }
                try DBusMessageWriter.check(value, depth: 0)
                if list[i].1.values[name] == value { continue }
                list[i].1.values[name] = value
                switch p.emitsChanged {
                case .true: changed[name] = value
                case .invalidates: invalidated.append(name)
                case .const, .false: break
                }
            }
            return (changed, invalidated)
        }
        if !changed.isEmpty || !invalidated.isEmpty {
            try emitPropertiesChanged(interface: interface, changed: changed, invalidated: invalidated)
        }
    }

    /// Sets one stored property (see ``setProperties(_:interface:)``).
    public func setProperty(_ name: String, _ value: DBusValue, interface: String) throws {
        try setProperties([name: value], interface: interface)
    }

    /// Emits `PropertiesChanged` explicitly (e.g. for computed properties).
    public func emitPropertiesChanged(interface: String, changed: [String: DBusValue], invalidated: [String] = []) throws {
        try emitSignal(interface: "org.freedesktop.DBus.Properties", name: "PropertiesChanged",
                       arguments: [.string(interface), .stringVariantDictionary(changed), .stringArray(invalidated.sorted())])
    }

    /// Emits a signal from this object.
    public func emitSignal(interface: String, name: String, arguments: [DBusValue] = [], destination: String? = nil) throws {
        let msg = try DBusMessage.signal(path: path, interface: interface, member: name, destination: destination,
                                         arguments: arguments)
        try core.send(msg)
    }

    /// Adds an interface (emits `InterfacesAdded` if an object manager covers this object).
    public func addInterface(_ iface: DBusInterface) throws {
        try Validate.interface(iface.name)
        try interfaces.withLock { list in
            guard !list.contains(where: { $0.0 == iface.name }) else {
                throw DBusError(name: DBusError.invalidArgs, message: "interface \(iface.name) already exported on \(path)")
            }
            var values: [String: DBusValue] = [:]
            for p in iface.properties { if let v = p.value { values[p.name] = v } }
            list.append((iface.name, InterfaceState(description: iface, values: values)))
        }
        core.objects.announceAdded(self, interfaces: [iface.name], core: core)
    }

    /// Removes an interface (emits `InterfacesRemoved` if an object manager covers this object).
    public func removeInterface(_ name: String) {
        let removed = interfaces.withLock { list -> Bool in
            let n = list.count
            list.removeAll { $0.0 == name }
            return list.count != n
        }
        if removed { core.objects.announceRemoved(path, interfaces: [name], core: core) }
    }

    /// Stops exporting the object (emits `InterfacesRemoved` if an object manager covers it).
    public func unexport() {
        core.objects.remove(self, core: core)
    }

    /// `a{sa{sv}}` of all interfaces and their properties, as used by `GetManagedObjects`.
    func interfacesAndProperties(only: [String]? = nil) -> DBusValue {
        let names = interfaceNames.filter { only?.contains($0) ?? true }
        var entries: [DBusDictEntry] = []
        for n in names {
            let props = (try? allProperties(interface: n)) ?? [:]
            entries.append(DBusDictEntry(.string(n), .stringVariantDictionary(props)))
        }
        return .dictionary(key: .string, value: "a{sv}", entries)
    }

    func lookupMethod(interface: String?, member: String) -> (String, DBusMethod)? {
        interfaces.withLock { list in
            for (name, st) in list where interface == nil || interface == name {
                if let m = st.description.methods.first(where: { $0.name == member }) { return (name, m) }
            }
            return nil
        }
    }

    func hasInterface(_ name: String) -> Bool { interfaces.withLock { $0.contains { $0.0 == name } } }

    /// Remote `Set`.
    func remoteSet(interface: String, name: String, value: DBusValue) throws {
        let prop = try interfaces.withLock { list -> DBusProperty in
            guard let st = list.first(where: { $0.0 == interface })?.1 else {
                throw DBusError(name: DBusError.unknownInterface, message: "no interface \(interface) on \(path)")
            }
            guard let p = st.description.properties.first(where: { $0.name == name }) else {
                throw DBusError(name: DBusError.unknownProperty, message: "no property \(interface).\(name)")
            }
            return p
        }
        guard prop.access != .read else {
            throw DBusError(name: DBusError.propertyReadOnly, message: "property \(interface).\(name) is read-only")
        }
        guard value.signatureString == prop.signature.rawValue else {
            throw DBusError(name: DBusError.invalidArgs,
                            message: "property \(name) is '\(prop.signature)', got '\(value.signatureString)'")
        }
        try prop.setter?(value)
        if prop.getter == nil {
            try setProperties([name: value], interface: interface)
        }
    }
}

extension DBusConnection {
    /// Exports an object at `path` with the given interfaces (plus Introspectable, Properties and Peer).
    /// If an object manager covers the path, `InterfacesAdded` is emitted.
    @discardableResult
    public func export(_ path: DBusObjectPath, interfaces: [DBusInterface]) throws -> DBusExportedObject {
        var seen = Set<String>()
        for i in interfaces {
            try Validate.interface(i.name)
            guard seen.insert(i.name).inserted else {
                throw DBusError(name: DBusError.invalidArgs, message: "interface \(i.name) given twice")
            }
            for m in i.methods {
                try Validate.member(m.name)
                for a in (m.inArguments ?? []) + (m.outArguments ?? []) where !a.signature.isSingleCompleteType {
                    throw DBusError(name: DBusError.invalidSignature, message: "argument \(a.name) of \(m.name)")
                }
            }
            for p in i.properties {
                try Validate.member(p.name)
                guard p.signature.isSingleCompleteType else {
                    throw DBusError(name: DBusError.invalidSignature, message: "property \(p.name)")
                }
                if let v = p.value {
                    guard v.signatureString == p.signature.rawValue else {
                        throw DBusError(name: DBusError.invalidArgs,
                                        message: "property \(p.name) is '\(p.signature)', initial value is '\(v.signatureString)'")
                    }
                    try DBusMessageWriter.check(v, depth: 0)
                }
            }
        }
        guard isConnected else { throw DBusError(name: DBusError.disconnected, message: "connection closed") }
        let object = DBusExportedObject(path: path, core: core, interfaces: interfaces)
        try core.objects.add(object, core: core)
        return object
    }

    /// Serves `org.freedesktop.DBus.ObjectManager` at `path`: `GetManagedObjects` lists every object
    /// exported below it, and exporting/unexporting objects there emits `InterfacesAdded`/`InterfacesRemoved`.
    public func addObjectManager(at path: DBusObjectPath) {
        core.objects.addManager(path)
    }

    /// Stops serving the object manager at `path`.
    public func removeObjectManager(at path: DBusObjectPath) {
        core.objects.removeManager(path)
    }
}
