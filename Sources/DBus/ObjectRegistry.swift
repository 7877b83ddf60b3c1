import CDBus
import Synchronization

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
                xml = Introspection.intermediateNode(children: children, isManager: isManager)
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
