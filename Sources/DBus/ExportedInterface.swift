/// Declarations of what a connection exports: interfaces with their methods, properties and signals
/// (the counterpart of dbus-fast's `service.py` decorators). Served by `ExportedObject.swift`.

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
