import CDBus

/// The four D-Bus message types.
public enum DBusMessageType: Int32, Sendable {
    case methodCall = 1
    case methodReturn = 2
    case error = 3
    case signal = 4
}

/// A received (or sent) D-Bus message. Immutable once created; reading it from several threads at once
/// is safe.
public final class DBusMessage: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: the wrapped libdbus message is never mutated after construction (outgoing
    // messages are filled in before being wrapped, incoming ones are only read); libdbus reference
    // counting is atomic, and header/body reads do not mutate the message for native-endian messages
    // (all messages on a local bus are native-endian).
    let raw: OpaquePointer

    /// Takes over one reference owned by the caller.
    init(adopting raw: OpaquePointer) { self.raw = raw }

    /// Adds a reference.
    init(retaining raw: OpaquePointer) {
        dbus_message_ref(raw)
        self.raw = raw
    }

    deinit { dbus_message_unref(raw) }

    /// The message type.
    public var type: DBusMessageType {
        DBusMessageType(rawValue: dbus_message_get_type(raw)) ?? .error
    }

    /// The object path (calls and signals).
    public var path: DBusObjectPath? {
        dbus_message_get_path(raw).map { DBusObjectPath(unchecked: String(cString: $0)) }
    }

    /// Calls `body` with the object path's bytes (no allocation); an empty buffer if there is no path.
    /// The buffer is only valid inside `body`.
    public func withPathBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let p = dbus_message_get_path(raw) else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: UnsafeRawPointer(p), count: strlenC(p)))
    }

    /// The interface (calls and signals; may be absent on calls).
    public var interface: String? { dbus_message_get_interface(raw).map { String(cString: $0) } }

    /// The method or signal name.
    public var member: String? { dbus_message_get_member(raw).map { String(cString: $0) } }

    /// The error name (error messages).
    public var errorName: String? { dbus_message_get_error_name(raw).map { String(cString: $0) } }

    /// The unique bus name of the sender.
    public var sender: String? { dbus_message_get_sender(raw).map { String(cString: $0) } }

    /// The destination bus name.
    public var destination: String? { dbus_message_get_destination(raw).map { String(cString: $0) } }

    /// The signature of the body.
    public var signature: DBusSignature {
        dbus_message_get_signature(raw).map { DBusSignature(unchecked: String(cString: $0)) } ?? .empty
    }

    /// The serial number assigned when the message was sent.
    public var serial: UInt32 { dbus_message_get_serial(raw) }

    /// The serial of the call this message replies to (returns and errors).
    public var replySerial: UInt32 { dbus_message_get_reply_serial(raw) }

    /// Whether the sender asked for no reply.
    public var noReply: Bool { dbus_message_get_no_reply(raw) != 0 }

    /// A reader positioned at the first body argument.
    public func reader() -> DBusMessageReader { DBusMessageReader(message: self) }

    /// All body arguments, decoded into ``DBusValue``s.
    public func arguments() throws -> [DBusValue] {
        var r = reader()
        var out: [DBusValue] = []
        while !r.isAtEnd { out.append(try r.read()) }
        return out
    }

    /// Decodes the first body argument as `T`.
    public func decode<T: DBusDecodable>(_: T.Type = T.self) throws -> T {
        var r = reader()
        return try r.decode(T.self)
    }

    /// Decodes the first two body arguments.
    public func decode<A: DBusDecodable, B: DBusDecodable>(_: A.Type, _: B.Type) throws -> (A, B) {
        var r = reader()
        let a = try r.decode(A.self)
        let b = try r.decode(B.self)
        return (a, b)
    }

    /// Decodes the first three body arguments.
    public func decode<A: DBusDecodable, B: DBusDecodable, C: DBusDecodable>(_: A.Type, _: B.Type, _: C.Type) throws -> (A, B, C) {
        var r = reader()
        let a = try r.decode(A.self)
        let b = try r.decode(B.self)
        let c = try r.decode(C.self)
        return (a, b, c)
    }

    /// For error messages: the error name and its first string argument as a ``DBusError``.
    public var asError: DBusError? {
        guard type == .error else { return nil }
        var r = reader()
        let text = (try? r.readString()) ?? ""
        return DBusError(name: errorName ?? DBusError.failed, message: text)
    }

    public var description: String {
        var s = "\(type)"
        if let p = path { s += " path=\(p)" }
        if let i = interface { s += " interface=\(i)" }
        if let m = member { s += " member=\(m)" }
        if let e = errorName { s += " error=\(e)" }
        s += " signature=\(signature)"
        return s
    }

    // MARK: Construction

    /// Builds a method call. Names are validated; invalid ones throw instead of reaching libdbus.
    static func methodCall(destination: String?, path: DBusObjectPath, interface: String?, member: String,
                           arguments: [DBusValue]) throws -> DBusMessage {
        if let d = destination { try Validate.busName(d) }
        if let i = interface { try Validate.interface(i) }
        try Validate.member(member)
        guard let m = dbus_message_new_method_call(destination, path.rawValue, interface, member) else {
            throw DBusError(name: DBusError.noMemory, message: "dbus_message_new_method_call")
        }
        let msg = DBusMessage(adopting: m)
        try msg.append(arguments)
        return msg
    }

    /// Builds a signal.
    static func signal(path: DBusObjectPath, interface: String, member: String, destination: String? = nil,
                       arguments: [DBusValue]) throws -> DBusMessage {
        try Validate.interface(interface)
        try Validate.member(member)
        guard let m = dbus_message_new_signal(path.rawValue, interface, member) else {
            throw DBusError(name: DBusError.noMemory, message: "dbus_message_new_signal")
        }
        let msg = DBusMessage(adopting: m)
        if let d = destination {
            try Validate.busName(d)
            dbus_message_set_destination(m, d)
        }
        try msg.append(arguments)
        return msg
    }

    /// Builds a method return for this call.
    func makeReturn(_ arguments: [DBusValue]) throws -> DBusMessage {
        guard let m = dbus_message_new_method_return(raw) else {
            throw DBusError(name: DBusError.noMemory, message: "dbus_message_new_method_return")
        }
        let msg = DBusMessage(adopting: m)
        try msg.append(arguments)
        return msg
    }

    /// Builds an error reply for this call. An invalid error name becomes `org.freedesktop.DBus.Error.Failed`.
    func makeError(_ error: DBusError) -> DBusMessage? {
        let name = Validate.isErrorName(error.name) ? error.name : DBusError.failed
        let text = error.message.utf8.contains(0) ? String(error.message.prefix { $0 != "\0" }) : error.message
        guard let m = dbus_message_new_error(raw, name, text) else { return nil }
        return DBusMessage(adopting: m)
    }

    /// The message in the wire format (marshalled by libdbus) with `serial` set; nil when out of memory.
    /// For sending it through a socket of our own, and for tests of our unmarshaller.
    func marshalled(serial: UInt32) -> [UInt8]? {
        dbus_message_set_serial(raw, serial)
        var p: UnsafeMutablePointer<CChar>?
        var n: Int32 = 0
        guard dbus_message_marshal(raw, &p, &n) != 0, let p else { return nil }
        defer { dbus_free(p) }
        return Array(UnsafeRawBufferPointer(start: p, count: Int(n)))
    }

    /// Appends arguments to a message that has not been sent yet.
    func append(_ arguments: [DBusValue]) throws {
        guard !arguments.isEmpty else { return }
        var w = DBusMessageWriter(message: raw)
        for a in arguments { try w.append(a) }
    }
}

/// Name validation through libdbus (which would otherwise abort on invalid names).
enum Validate {
    static func busName(_ s: String) throws {
        guard !s.utf8.contains(0), dbus_validate_bus_name(s, nil) != 0 else {
            throw DBusError(name: DBusError.invalidArgs, message: "invalid bus name '\(s)'")
        }
    }

    static func interface(_ s: String) throws {
        guard !s.utf8.contains(0), dbus_validate_interface(s, nil) != 0 else {
            throw DBusError(name: DBusError.invalidArgs, message: "invalid interface name '\(s)'")
        }
    }

    static func member(_ s: String) throws {
        guard !s.utf8.contains(0), dbus_validate_member(s, nil) != 0 else {
            throw DBusError(name: DBusError.invalidArgs, message: "invalid member name '\(s)'")
        }
    }

    static func isErrorName(_ s: String) -> Bool {
        !s.utf8.contains(0) && dbus_validate_error_name(s, nil) != 0
    }
}
