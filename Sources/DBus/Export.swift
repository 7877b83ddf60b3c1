import CDBus
import Synchronization

/// A named argument of an exported method or signal (for introspection and argument checking).
public struct DBusArgument: Sendable, Hashable {
    public var name: String
    public var signature: DBusSignature
    public init(_ name: String, _ signature: DBusSignature) {
        self.name = name
        self.signature = signature
    }
}

/// An incoming method call, as seen by an exported method's handler.
public struct DBusMethodCall: Sendable {
    /// The call message (header fields, raw arguments).
    public let message: DBusMessage
    /// The decoded arguments (their signature already matched the method's declaration).
    public let arguments: [DBusValue]
    /// The object the call was addressed to.
    public let object: DBusExportedObject
    /// The caller's unique name.
    public var sender: String? { message.sender }
    /// A reader over the raw arguments, for typed decoding.
    public func reader() -> DBusMessageReader { message.reader() }
}

/// One exported method. The handler runs as a task (it may suspend); what it returns is sent back as
/// the reply and must match `outArguments`. Throwing a ``DBusError`` replies with that error name;
/// a ``DBusDecodingError`` becomes `InvalidArgs`; anything else becomes `org.freedesktop.DBus.Error.Failed`.
///
/// Handlers must not capture the ``DBusConnection`` strongly (the connection owns its exported objects,
/// so that would keep it open forever); use ``DBusMethodCall/object`` to emit signals or change properties.
public struct DBusMethod: Sendable {
    public var name: String
    /// The declared input arguments; `nil` accepts any arguments (not introspected).
    public var inArguments: [DBusArgument]?
    /// The declared output arguments; `nil` allows any reply (not introspected).
    public var outArguments: [DBusArgument]?
    public var handler: @Sendable (DBusMethodCall) async throws -> [DBusValue]

    public init(_ name: String, in inArguments: [DBusArgument]? = [], out outArguments: [DBusArgument]? = [],
                handler: @escaping @Sendable (DBusMethodCall) async throws -> [DBusValue]) {
        self.name = name
        self.inArguments = inArguments
        self.outArguments = outArguments
        self.handler = handler
    }

    var inSignature: String? { inArguments.map { $0.map(\.signature.rawValue).joined() } }
    var outSignature: String? { outArguments.map { $0.map(\.signature.rawValue).joined() } }
}

/// One exported property. Stored properties keep their value in the exported object (change it with
/// ``DBusExportedObject/setProperty(_:_:interface:)``, which emits `PropertiesChanged`); a property with a
/// `getter` is computed on every read instead. Getters and setters run on the dispatch thread and must
/// not block.
public struct DBusProperty: Sendable {
    public enum Access: String, Sendable { case read, write, readwrite }
    /// The `org.freedesktop.DBus.Property.EmitsChangedSignal` behaviour.
    public enum EmitsChanged: String, Sendable { case `true`, invalidates, const, `false` }

    public var name: String
    public var signature: DBusSignature
    public var access: Access
    public var emitsChanged: EmitsChanged
    /// The initial value of a stored property.
    public var value: DBusValue?
    /// Computes the value on each read (overrides the stored value).
    public var getter: (@Sendable () throws -> DBusValue)?
    /// Called on a remote `Set` (after the type was checked); throw to refuse. The stored value is then
    /// updated and `PropertiesChanged` emitted.
    public var setter: (@Sendable (DBusValue) throws -> Void)?

    public init(_ name: String, _ signature: DBusSignature, access: Access = .read, emitsChanged: EmitsChanged = .true,
                value: DBusValue? = nil, getter: (@Sendable () throws -> DBusValue)? = nil,
                setter: (@Sendable (DBusValue) throws -> Void)? = nil) {
        self.name = name
        self.signature = signature
        self.access = access
        self.emitsChanged = emitsChanged
        self.value = value
        self.getter = getter
        self.setter = setter
    }
}

/// A signal an exported interface may emit (for introspection).
public struct DBusSignalDescription: Sendable, Hashable {
    public var name: String
    public var arguments: [DBusArgument]
    public init(_ name: String, _ arguments: [DBusArgument] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// An interface to export on an object.
public struct DBusInterface: Sendable {
    public var name: String
    public var methods: [DBusMethod]
    public var properties: [DBusProperty]
    public var signals: [DBusSignalDescription]

    public init(_ name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [],
                signals: [DBusSignalDescription] = []) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }
}

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

    func introspectionXML(children: [String], isManager: Bool) -> String {
        var x = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>

        """
        x += Introspection.standard(properties: true, objectManager: isManager)
        let list = interfaces.withLock { $0.map(\.1.description) }
        for i in list { x += Introspection.interface(i) }
        for c in children { x += "  <node name=\"\(Introspection.escape(c))\"/>\n" }
        x += "</node>\n"
        return x
    }
}

enum Introspection {
    static func escape(_ s: String) -> String {
        var o = ""
        for ch in s {
            switch ch {
            case "&": o += "&amp;"
            case "<": o += "&lt;"
            case ">": o += "&gt;"
            case "\"": o += "&quot;"
            case "'": o += "&apos;"
            default: o.append(ch)
            }
        }
        return o
    }

    static func arg(_ a: DBusArgument, direction: String?) -> String {
        var s = "      <arg name=\"\(escape(a.name))\" type=\"\(escape(a.signature.rawValue))\""
        if let d = direction { s += " direction=\"\(d)\"" }
        return s + "/>\n"
    }

    static func interface(_ i: DBusInterface) -> String {
        var x = "  <interface name=\"\(escape(i.name))\">\n"
        for m in i.methods {
            x += "    <method name=\"\(escape(m.name))\">\n"
            for a in m.inArguments ?? [] { x += arg(a, direction: "in") }
            for a in m.outArguments ?? [] { x += arg(a, direction: "out") }
            x += "    </method>\n"
        }
        for s in i.signals {
            x += "    <signal name=\"\(escape(s.name))\">\n"
            for a in s.arguments { x += arg(a, direction: nil) }
            x += "    </signal>\n"
        }
        for p in i.properties {
            x += "    <property name=\"\(escape(p.name))\" type=\"\(escape(p.signature.rawValue))\" access=\"\(p.access.rawValue)\""
            if p.emitsChanged != .true {
                x += ">\n      <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"\(p.emitsChanged.rawValue)\"/>\n    </property>\n"
            } else {
                x += "/>\n"
            }
        }
        return x + "  </interface>\n"
    }

    static func standard(properties: Bool, objectManager: Bool) -> String {
        var x = """
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect">
              <arg name="xml_data" type="s" direction="out"/>
            </method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId">
              <arg name="machine_uuid" type="s" direction="out"/>
            </method>
          </interface>

        """
        if properties {
            x += """
              <interface name="org.freedesktop.DBus.Properties">
                <method name="Get">
                  <arg name="interface_name" type="s" direction="in"/>
                  <arg name="property_name" type="s" direction="in"/>
                  <arg name="value" type="v" direction="out"/>
                </method>
                <method name="GetAll">
                  <arg name="interface_name" type="s" direction="in"/>
                  <arg name="props" type="a{sv}" direction="out"/>
                </method>
                <method name="Set">
                  <arg name="interface_name" type="s" direction="in"/>
                  <arg name="property_name" type="s" direction="in"/>
                  <arg name="value" type="v" direction="in"/>
                </method>
                <signal name="PropertiesChanged">
                  <arg name="interface_name" type="s"/>
                  <arg name="changed_properties" type="a{sv}"/>
                  <arg name="invalidated_properties" type="as"/>
                </signal>
              </interface>

            """
        }
        if objectManager {
            x += """
              <interface name="org.freedesktop.DBus.ObjectManager">
                <method name="GetManagedObjects">
                  <arg name="objects" type="a{oa{sa{sv}}}" direction="out"/>
                </method>
                <signal name="InterfacesAdded">
                  <arg name="object" type="o"/>
                  <arg name="interfaces" type="a{sa{sv}}"/>
                </signal>
                <signal name="InterfacesRemoved">
                  <arg name="object" type="o"/>
                  <arg name="interfaces" type="as"/>
                </signal>
              </interface>

            """
        }
        return x
    }
}

struct RegistryState {
    var objects: [DBusObjectPath: DBusExportedObject] = [:]
    var managers: Set<DBusObjectPath> = []
    /// Method handlers still running, cancelled when the connection closes.
    var handlers: [UInt64: Task<Void, Never>] = [:]
    var nextHandler: UInt64 = 0
    var closed = false
}

/// Exported objects and object managers of one connection; method calls to them are answered here.
final class ObjectRegistry: Sendable {
    let state = Mutex(RegistryState())

    /// Drops every object and cancels running handlers (connection closed).
    func removeAll() {
        let running = state.withLock { s -> [Task<Void, Never>] in
            let tasks = Array(s.handlers.values)
            s = RegistryState()
            s.closed = true
            return tasks
        }
        for t in running { t.cancel() }
    }

    func add(_ object: DBusExportedObject, core: ConnectionCore) throws {
        try state.withLock { s in
            guard s.objects[object.path] == nil else {
                throw DBusError(name: DBusError.invalidArgs, message: "an object is already exported at \(object.path)")
            }
            s.objects[object.path] = object
        }
        announceAdded(object, interfaces: nil, core: core)
    }

    func remove(_ object: DBusExportedObject, core: ConnectionCore) {
        let removed = state.withLock { s -> Bool in
            guard s.objects[object.path] === object else { return false }
            s.objects[object.path] = nil
            return true
        }
        if removed { announceRemoved(object.path, interfaces: object.interfaceNames, core: core) }
    }

    func addManager(_ path: DBusObjectPath) {
        _ = state.withLock { $0.managers.insert(path) }
    }

    func removeManager(_ path: DBusObjectPath) {
        _ = state.withLock { $0.managers.remove(path) }
    }

    /// Object managers strictly above `path`.
    func managers(covering path: DBusObjectPath) -> [DBusObjectPath] {
        state.withLock { s in s.managers.filter { path.isDescendant(of: $0, orSelf: false) }.sorted() }
    }

    func announceAdded(_ object: DBusExportedObject, interfaces: [String]?, core: ConnectionCore) {
        let ms = managers(covering: object.path)
        guard !ms.isEmpty else { return }
        let payload = object.interfacesAndProperties(only: interfaces)
        for m in ms {
            if let msg = try? DBusMessage.signal(path: m, interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
                                                 arguments: [.objectPath(object.path), payload]) {
                try? core.send(msg)
            }
        }
    }

    func announceRemoved(_ path: DBusObjectPath, interfaces: [String], core: ConnectionCore) {
        for m in managers(covering: path) {
            if let msg = try? DBusMessage.signal(path: m, interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved",
                                                 arguments: [.objectPath(path), .stringArray(interfaces)]) {
                try? core.send(msg)
            }
        }
    }

    /// Direct child node names of `path` among exported objects and managers.
    func childNames(of path: DBusObjectPath, _ s: RegistryState) -> [String] {
        var names = Set<String>()
        let prefix = path.rawValue == "/" ? "/" : path.rawValue + "/"
        for p in Array(s.objects.keys) + Array(s.managers) where p.rawValue.hasPrefix(prefix) && p != path {
            let rest = p.rawValue.dropFirst(prefix.count)
            if let first = rest.split(separator: "/").first { names.insert(String(first)) }
        }
        return names.sorted()
    }

    /// Handles a method call on the dispatch thread. Returns false if no exported object, manager or
    /// ancestor lives at the path (libdbus then replies `UnknownMethod`).
    func handle(_ raw: OpaquePointer, core: ConnectionCore) -> Bool {
        guard let cpath = dbus_message_get_path(raw), let cmember = dbus_message_get_member(raw) else { return false }
        let path = DBusObjectPath(unchecked: String(cString: cpath))
        let member = String(cString: cmember)
        let interface = dbus_message_get_interface(raw).map { String(cString: $0) }
        let (object, isManager, children) = state.withLock { s in
            (s.objects[path], s.managers.contains(path), self.childNames(of: path, s))
        }
        let isIntrospect = member == "Introspect" && (interface == nil || interface == "org.freedesktop.DBus.Introspectable")
        guard object != nil || isManager || !children.isEmpty || isIntrospect else { return false }
        let msg = DBusMessage(retaining: raw)

        func reply(_ args: [DBusValue]) {
            guard !msg.noReply else { return }
            do {
                try core.send(try msg.makeReturn(args))
            } catch {
                replyError(error)
            }
        }
        func replyError(_ error: Error) {
            guard !msg.noReply else { return }
            let e: DBusError
            switch error {
            case let d as DBusError: e = d
            case let d as DBusDecodingError: e = DBusError(name: DBusError.invalidArgs, message: d.description)
            default: e = DBusError(name: DBusError.failed, message: String(describing: error))
            }
            if let m = msg.makeError(e) { try? core.send(m) }
        }
        func check(_ sig: String) -> Bool {
            if msg.signature.rawValue == sig { return true }
            replyError(DBusError(name: DBusError.invalidArgs,
                                 message: "expected arguments '\(sig)', got '\(msg.signature.rawValue)'"))
            return false
        }

        switch (interface, member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"), (nil, "Introspect"):
            guard check("") else { return true }
            let xml: String
            if let object {
                xml = object.introspectionXML(children: children, isManager: isManager)
            } else {
                var x = """
                <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
                 "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
                <node>

                """
                x += Introspection.standard(properties: false, objectManager: isManager)
                for c in children { x += "  <node name=\"\(Introspection.escape(c))\"/>\n" }
                xml = x + "</node>\n"
            }
            reply([.string(xml)])
            return true
        case ("org.freedesktop.DBus.ObjectManager", "GetManagedObjects"), (nil, "GetManagedObjects"):
            guard isManager else { break }
            guard check("") else { return true }
            let objects = state.withLock { s in
                s.objects.values.filter { $0.path.isDescendant(of: path, orSelf: false) }.sorted { $0.path < $1.path }
            }
            let entries = objects.map { DBusDictEntry(.objectPath($0.path), $0.interfacesAndProperties()) }
            reply([.dictionary(key: .objectPath, value: "a{sa{sv}}", entries)])
            return true
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard let object else { break }
            guard check("ss") else { return true }
            do {
                let (i, n) = try msg.decode(String.self, String.self)
                reply([.variant(try object.property(n, interface: i))])
            } catch { replyError(error) }
            return true
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            guard let object else { break }
            guard check("s") else { return true }
            do {
                let i = try msg.decode(String.self)
                reply([.stringVariantDictionary(try object.allProperties(interface: i))])
            } catch { replyError(error) }
            return true
        case ("org.freedesktop.DBus.Properties", "Set"):
            guard let object else { break }
            guard check("ssv") else { return true }
            do {
                var r = msg.reader()
                let i = try r.readString()
                let n = try r.readString()
                var v = try r.enterVariant()
                try object.remoteSet(interface: i, name: n, value: try v.read())
                reply([])
            } catch { replyError(error) }
            return true
        default:
            break
        }

        guard let object else {
            replyError(DBusError(name: DBusError.unknownObject, message: "no object at \(path)"))
            return true
        }
        if let interface, !object.hasInterface(interface) {
            replyError(DBusError(name: DBusError.unknownInterface, message: "no interface \(interface) at \(path)"))
            return true
        }
        guard let (_, method) = object.lookupMethod(interface: interface, member: member) else {
            replyError(DBusError(name: DBusError.unknownMethod,
                                 message: "no method \(interface.map { $0 + "." } ?? "")\(member) at \(path)"))
            return true
        }
        if let sig = method.inSignature, !check(sig) { return true }
        let args: [DBusValue]
        do { args = try msg.arguments() } catch { replyError(error); return true }
        let call = DBusMethodCall(message: msg, arguments: args, object: object)
        let outSig = method.outSignature
        let handler = method.handler
        let id = state.withLock { s -> UInt64? in
            guard !s.closed else { return nil }
            s.nextHandler &+= 1
            return s.nextHandler
        }
        guard let id else { return true }
        // The task is registered before it can finish (the lock is held across creation), so its
        // own removal below always finds it.
        state.withLock { s in
            s.handlers[id] = Task {
                defer { _ = self.state.withLock { $0.handlers.removeValue(forKey: id) } }
                await self.runHandler(handler, call: call, outSig: outSig, reply: reply, replyError: replyError)
            }
        }
        return true
    }

    private func runHandler(_ handler: @Sendable (DBusMethodCall) async throws -> [DBusValue], call: DBusMethodCall,
                            outSig: String?, reply: ([DBusValue]) -> Void, replyError: (Error) -> Void) async {
        do {
            let result = try await handler(call)
            let got = result.map(\.signatureString).joined()
            guard outSig == nil || got == outSig else {
                replyError(DBusError(name: DBusError.failed,
                                     message: "handler returned '\(got)', declared '\(outSig ?? "")'"))
                return
            }
            reply(result)
        } catch {
            replyError(error)
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
