import CDBus
import Synchronization

/// A D-Bus match rule (see the D-Bus specification, "Match Rules"). It is sent to the bus with
/// `AddMatch` and also evaluated locally, so a subscription only sees the messages it asked for even
/// when several subscriptions share one connection.
public struct DBusMatchRule: Sendable, Hashable, CustomStringConvertible {
    /// Message type; signals by default.
    public var type: DBusMessageType? = .signal
    /// Sender: a unique name (`:1.42`) or a well-known name (`org.bluez`, tracked through
    /// `NameOwnerChanged`).
    public var sender: String?
    public var interface: String?
    public var member: String?
    public var path: DBusObjectPath?
    /// Matches the path and everything beneath it.
    public var pathNamespace: DBusObjectPath?
    public var destination: String?
    /// String-argument matches: `[0: "org.bluez.Device1"]` is `arg0='org.bluez.Device1'`.
    public var arguments: [Int: String] = [:]

    public init(type: DBusMessageType? = .signal, sender: String? = nil, interface: String? = nil,
                member: String? = nil, path: DBusObjectPath? = nil, pathNamespace: DBusObjectPath? = nil,
                destination: String? = nil, arguments: [Int: String] = [:]) {
        self.type = type
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.destination = destination
        self.arguments = arguments
    }

    /// `PropertiesChanged` signals, optionally for one interface (arg0) and below a path.
    public static func propertiesChanged(sender: String? = nil, interface: String? = nil,
                                         pathNamespace: DBusObjectPath? = nil) -> DBusMatchRule {
        DBusMatchRule(sender: sender, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                      pathNamespace: pathNamespace, arguments: interface.map { [0: $0] } ?? [:])
    }

    /// `NameOwnerChanged` from the bus, optionally for one name.
    public static func nameOwnerChanged(_ name: String? = nil) -> DBusMatchRule {
        DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                      path: "/org/freedesktop/DBus", arguments: name.map { [0: $0] } ?? [:])
    }

    /// The textual rule given to `AddMatch`.
    public var description: String {
        var parts: [String] = []
        func q(_ k: String, _ v: String) {
            // A quote inside a value is written as '\'' (close, escaped quote, reopen).
            let escaped = v.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''")
            parts.append("\(k)='\(escaped)'")
        }
        if let t = type {
            switch t {
            case .signal: q("type", "signal")
            case .methodCall: q("type", "method_call")
            case .methodReturn: q("type", "method_return")
            case .error: q("type", "error")
            }
        }
        if let s = sender { q("sender", s) }
        if let i = interface { q("interface", i) }
        if let m = member { q("member", m) }
        if let p = path { q("path", p.rawValue) }
        if let p = pathNamespace { q("path_namespace", p.rawValue) }
        if let d = destination { q("destination", d) }
        for (n, v) in arguments.sorted(by: { $0.key < $1.key }) { q("arg\(n)", v) }
        return parts.joined(separator: ",")
    }

    func validate() throws {
        if let s = sender { try Validate.busName(s) }
        if let i = interface { try Validate.interface(i) }
        if let m = member { try Validate.member(m) }
        if let d = destination { try Validate.busName(d) }
        for (n, v) in arguments {
            guard (0...63).contains(n), !v.utf8.contains(0) else {
                throw DBusError(name: DBusError.matchRuleInvalid, message: "bad arg\(n) match")
            }
        }
        if path != nil && pathNamespace != nil {
            throw DBusError(name: DBusError.matchRuleInvalid, message: "path and path_namespace are exclusive")
        }
    }
}

/// A match rule compiled to NUL-terminated byte strings for allocation-free matching on the dispatch
/// thread.
final class CompiledMatch: Sendable {
    let type: Int32
    let interface: [CChar]?
    let member: [CChar]?
    let path: [CChar]?
    let pathNamespace: [CChar]?
    let destination: [CChar]?
    /// Unique sender name (or the bus driver's name) compared directly.
    let fixedSender: [CChar]?
    /// Well-known sender name whose current owner is tracked.
    let trackedSender: String?
    let owner = TrackedOwner()
    let args: [(Int, [CChar])]

    init(_ r: DBusMatchRule) {
        func c(_ s: String?) -> [CChar]? { s.map { Array($0.utf8CString) } }
        type = r.type?.rawValue ?? 0
        interface = c(r.interface)
        member = c(r.member)
        path = c(r.path?.rawValue)
        pathNamespace = r.pathNamespace.flatMap { $0.rawValue == "/" ? nil : c($0.rawValue) }
        destination = c(r.destination)
        if let s = r.sender, s.hasPrefix(":") || s == "org.freedesktop.DBus" {
            fixedSender = c(s)
            trackedSender = nil
        } else {
            fixedSender = nil
            trackedSender = r.sender
        }
        args = r.arguments.sorted { $0.key < $1.key }.map { ($0.key, Array($0.value.utf8CString)) }
    }

    @inline(__always)
    private static func eq(_ a: UnsafePointer<CChar>?, _ b: [CChar]) -> Bool {
        guard let a else { return false }
        return b.withUnsafeBufferPointer { strcmpC(a, $0.baseAddress!) == 0 }
    }

    func matches(_ msg: OpaquePointer) -> Bool {
        if type != 0 && dbus_message_get_type(msg) != type { return false }
        if let m = member, !Self.eq(dbus_message_get_member(msg), m) { return false }
        if let i = interface, !Self.eq(dbus_message_get_interface(msg), i) { return false }
        if let p = path, !Self.eq(dbus_message_get_path(msg), p) { return false }
        if let ns = pathNamespace {
            guard let mp = dbus_message_get_path(msg) else { return false }
            let ok = ns.withUnsafeBufferPointer { nb -> Bool in
                let n = nb.count - 1
                guard strncmpC(mp, nb.baseAddress!, n) == 0 else { return false }
                let next = mp[n]
                return next == 0 || next == 0x2f
            }
            if !ok { return false }
        }
        if let d = destination, !Self.eq(dbus_message_get_destination(msg), d) { return false }
        if let s = fixedSender, !Self.eq(dbus_message_get_sender(msg), s) { return false }
        if trackedSender != nil {
            guard let o = owner.current(), Self.eq(dbus_message_get_sender(msg), o) else { return false }
        }
        if !args.isEmpty {
            var it = DBusMessageIter()
            guard dbus_message_iter_init(msg, &it) != 0 else { return false }
            var index = 0
            for (n, want) in args {
                while index < n {
                    guard dbus_message_iter_next(&it) != 0 else { return false }
                    index += 1
                }
                guard dbus_message_iter_get_arg_type(&it) == DBusTypeCode.string.cValue else { return false }
                var p: UnsafePointer<CChar>? = nil
                withUnsafeMutablePointer(to: &p) { dbus_message_iter_get_basic(&it, UnsafeMutableRawPointer($0)) }
                if !Self.eq(p, want) { return false }
            }
        }
        return true
    }
}

/// The current owner of a tracked well-known name. Written rarely (an owner change, from the dispatch
/// thread or a subscribing task); read for every signal on the dispatch thread through a copy that is
/// refreshed only when the version moved, so matching takes no lock.
final class TrackedOwner: @unchecked Sendable {
    // @unchecked Sendable: `name` is behind a Mutex; `cached` and `cachedVersion` are read and written
    // only on the connection's dispatch thread (``current()``).
    private let name = Mutex<[CChar]?>(nil)
    private let version = Atomic<Int>(0)
    private var cachedVersion = 0
    private var cached: [CChar]? = nil

    /// Sets the owner (`nil` or empty: none). With `onlyIfUnknown`, an owner already known is kept.
    func set(_ owner: String?, onlyIfUnknown: Bool = false) {
        name.withLock { n in
            if onlyIfUnknown && n != nil { return }
            n = owner.flatMap { $0.isEmpty ? nil : Array($0.utf8CString) }
            version.add(1, ordering: .releasing)
        }
    }

    /// The owner as a NUL-terminated string. Dispatch thread only.
    @inline(__always)
    func current() -> [CChar]? {
        let v = version.load(ordering: .acquiring)
        if v != cachedVersion {
            cached = name.withLock { $0 }
            cachedVersion = v
        }
        return cached
    }
}
