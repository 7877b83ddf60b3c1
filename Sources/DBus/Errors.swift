import CDBus

/// An error carrying a D-Bus error name and message: errors returned by peers
/// (e.g. `org.bluez.Error.NotPermitted`), errors raised by libdbus or the bus, and local failures
/// (disconnection, timeouts, invalid arguments). Throw one from an exported method handler to send
/// that error name back to the caller.
public struct DBusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The D-Bus error name, e.g. `org.freedesktop.DBus.Error.UnknownMethod`.
    public var name: String
    /// The human-readable message (may be empty).
    public var message: String

    public init(name: String, message: String = "") {
        self.name = name
        self.message = message
    }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    /// True for `NoReply`, `Timeout` and `TimedOut`: the call did not complete in time.
    public var isTimeout: Bool { name == DBusError.noReply || name == DBusError.timeout || name == DBusError.timedOut }

    public static let failed = "org.freedesktop.DBus.Error.Failed"
    public static let noReply = "org.freedesktop.DBus.Error.NoReply"
    public static let timeout = "org.freedesktop.DBus.Error.Timeout"
    public static let timedOut = "org.freedesktop.DBus.Error.TimedOut"
    public static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
    public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
    public static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
    public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
    public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
    public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
    public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
    public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
    public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    public static let invalidSignature = "org.freedesktop.DBus.Error.InvalidSignature"
    public static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
    public static let noMemory = "org.freedesktop.DBus.Error.NoMemory"
    public static let matchRuleInvalid = "org.freedesktop.DBus.Error.MatchRuleInvalid"

    /// Takes the contents of a set C `DBusError` and frees it.
    static func consume(_ e: inout CDBus.DBusError) -> DBusError {
        let name = e.name.map { String(cString: $0) } ?? DBusError.failed
        let msg = e.message.map { String(cString: $0) } ?? ""
        dbus_error_free(&e)
        return DBusError(name: name, message: msg)
    }
}

/// A value read from a message did not have the expected type or shape.
public struct DBusDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What the decoder wanted (a signature or a description).
    public var expected: String
    /// What it found (a signature, `end of message`, or a description).
    public var found: String
    public var context: String

    public init(expected: String, found: String, context: String = "") {
        self.expected = expected
        self.found = found
        self.context = context
    }

    public var description: String {
        "D-Bus decoding error: expected \(expected), found \(found)" + (context.isEmpty ? "" : " (\(context))")
    }
}
