import CDBus
import OSThreads
import Synchronization

/// Which bus (or peer) to connect to.
public enum DBusBusTarget: Sendable, Hashable {
    /// The system bus: `DBUS_SYSTEM_BUS_ADDRESS` if set, else `unix:path=/run/dbus/system_bus_socket`.
    case system
    /// The session bus: `DBUS_SESSION_BUS_ADDRESS` if set, else libdbus's own session-bus lookup.
    case session
    /// A D-Bus address such as `unix:path=/tmp/x/bus`. With `registerWithBus` (default) the connection
    /// says `Hello` to a message bus; turn it off for a direct peer-to-peer connection.
    case address(String, registerWithBus: Bool = true)
}

/// The reply of `RequestName`.
public enum DBusRequestNameReply: UInt32, Sendable {
    case primaryOwner = 1
    case inQueue = 2
    case exists = 3
    case alreadyOwner = 4
}

/// The reply of `ReleaseName`.
public enum DBusReleaseNameReply: UInt32, Sendable {
    case released = 1
    case nonExistent = 2
    case notOwner = 3
}

/// Flags for `RequestName`.
public struct DBusRequestNameFlags: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let allowReplacement = DBusRequestNameFlags(rawValue: 1)
    public static let replaceExisting = DBusRequestNameFlags(rawValue: 2)
    public static let doNotQueue = DBusRequestNameFlags(rawValue: 4)
}

/// A connection to a message bus, driven by its own dispatch thread (never by the Swift cooperative
/// pool). All methods may be called from any thread or task. The connection closes when ``close()``
/// is called or the last reference to it goes away; calls in flight then fail with
/// `org.freedesktop.DBus.Error.Disconnected` and signal streams finish.
public final class DBusConnection: Sendable {
    let core: ConnectionCore

    /// The unique name the bus assigned (`:1.42`), or `nil` for a peer-to-peer connection.
    public let uniqueName: String?

    init(core: ConnectionCore, uniqueName: String?) {
        self.core = core
        self.uniqueName = uniqueName
    }

    deinit { core.requestClose() }

    /// Connects (authentication and `Hello` run on the new dispatch thread, not on the caller's).
    /// A call's `timeout` passes on `clock`: the continuous clock by default; a test passes a clock it
    /// moves, and a component the clock it runs on.
    public static func connect(_ target: DBusBusTarget,
                               clock: some Clock<Duration> = ContinuousClock()) async throws -> DBusConnection {
        let deadlines = DeadlineClock(clock)
        return try await withCheckedThrowingContinuation { (cont: CheckedContinuation<DBusConnection, Error>) in
            let started = OSThread.start(name: "clicker-dbus") {
                ConnectionCore.threadMain(target: target, clock: deadlines, cont: cont)
            }
            if started == nil {
                cont.resume(throwing: DBusError(name: DBusError.failed, message: "cannot start dispatch thread"))
            }
        }
    }

    /// Connects to the system bus (honouring `DBUS_SYSTEM_BUS_ADDRESS`).
    public static func system() async throws -> DBusConnection { try await connect(.system) }

    /// Connects to the session bus.
    public static func session() async throws -> DBusConnection { try await connect(.session) }

    /// Closes the connection and stops its dispatch thread. Idempotent.
    public func close() { core.requestClose() }

    /// Whether the connection is still open.
    public var isConnected: Bool { !core.isClosed }

    // MARK: Calls

    /// Calls a method and returns the reply message. A D-Bus error reply throws ``DBusError`` with the
    /// peer's error name and message; no reply before `timeout` has passed on the connection's clock
    /// throws `NoReply` (``DBusError/isTimeout``); task cancellation throws `CancellationError`.
    public func call(destination: String?, path: DBusObjectPath, interface: String?, method: String,
                     arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws -> DBusMessage {
        let msg = try DBusMessage.methodCall(destination: destination, path: path, interface: interface,
                                             member: method, arguments: arguments)
        return try await core.sendWithReply(msg, timeout: timeout)
    }

    /// Calls a method and decodes the first reply argument as `T`.
    public func call<T: DBusDecodable>(_: T.Type, destination: String?, path: DBusObjectPath, interface: String?,
                                       method: String, arguments: [DBusValue] = [],
                                       timeout: Duration = .seconds(25)) async throws -> T {
        let reply = try await call(destination: destination, path: path, interface: interface, method: method,
                                   arguments: arguments, timeout: timeout)
        return try reply.decode(T.self)
    }

    /// Sends a method call without waiting for (or asking for) a reply.
    public func callNoReply(destination: String?, path: DBusObjectPath, interface: String?, method: String,
                            arguments: [DBusValue] = []) throws {
        let msg = try DBusMessage.methodCall(destination: destination, path: path, interface: interface,
                                             member: method, arguments: arguments)
        dbus_message_set_no_reply(msg.raw, 1)
        try core.send(msg)
    }

    /// Emits a signal (broadcast unless `destination` is given).
    public func emitSignal(path: DBusObjectPath, interface: String, name: String, arguments: [DBusValue] = [],
                           destination: String? = nil) throws {
        let msg = try DBusMessage.signal(path: path, interface: interface, member: name, destination: destination,
                                         arguments: arguments)
        try core.send(msg)
    }

    // MARK: Bus driver

    static let busName = "org.freedesktop.DBus"
    static let busPath: DBusObjectPath = "/org/freedesktop/DBus"

    func busCall(_ method: String, _ args: [DBusValue]) async throws -> DBusMessage {
        try await call(destination: Self.busName, path: Self.busPath, interface: Self.busName, method: method,
                       arguments: args)
    }

    /// Asks the bus for a well-known name.
    @discardableResult
    public func requestName(_ name: String, flags: DBusRequestNameFlags = [.doNotQueue]) async throws -> DBusRequestNameReply {
        try Validate.busName(name)
        let r = try await busCall("RequestName", [.string(name), .uint32(flags.rawValue)]).decode(UInt32.self)
        guard let reply = DBusRequestNameReply(rawValue: r) else {
            throw DBusDecodingError(expected: "RequestName reply 1...4", found: "\(r)")
        }
        return reply
    }

    /// Releases a well-known name.
    @discardableResult
    public func releaseName(_ name: String) async throws -> DBusReleaseNameReply {
        try Validate.busName(name)
        let r = try await busCall("ReleaseName", [.string(name)]).decode(UInt32.self)
        guard let reply = DBusReleaseNameReply(rawValue: r) else {
            throw DBusDecodingError(expected: "ReleaseName reply 1...3", found: "\(r)")
        }
        return reply
    }

    /// The unique name owning `name`, or `nil` if nobody owns it.
    public func nameOwner(_ name: String) async throws -> String? {
        try Validate.busName(name)
        do {
            return try await busCall("GetNameOwner", [.string(name)]).decode(String.self)
        } catch let e as DBusError where e.name == DBusError.nameHasNoOwner {
            return nil
        }
    }

    /// Adds a match rule on the bus (normally done for you by the signal subscription methods).
    public func addMatch(_ rule: DBusMatchRule) async throws {
        try rule.validate()
        _ = try await busCall("AddMatch", [.string(rule.description)])
    }

    /// Removes a match rule previously added with ``addMatch(_:)``.
    public func removeMatch(_ rule: DBusMatchRule) async throws {
        _ = try await busCall("RemoveMatch", [.string(rule.description)])
    }

}
