import ClickerTransport
import DBus

/// What went wrong talking to BlueZ, each in words a person can act on, with the command that fixes it.
public enum BlueZError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The D-Bus bus could not be reached (address, reason).
    case busUnreachable(String, String)
    /// Nobody owns `org.bluez` on the bus.
    case bluetoothdNotRunning
    /// No adapter matched the selection (what was asked for, adapters seen).
    case noAdapter(String, [String])
    /// The chosen adapter is powered off.
    case adapterPoweredOff(String)
    /// The adapter has no LEAdvertisingManager1 (no LE support, or a very old BlueZ).
    case advertisingUnsupported(String)
    /// The adapter has no GattManager1.
    case gattUnsupported(String)
    /// `org.bluez.Error.NotPermitted` from RegisterAdvertisement: no free advertising instance.
    case noFreeAdvertisingInstance(String)
    /// `org.bluez.Error.InvalidLength` from RegisterAdvertisement: the data does not fit (data length).
    case advertisementTooLong(Int)
    /// BlueZ refused an operation (operation, D-Bus error).
    case rejected(String, DBusError)

    public var description: String {
        switch self {
        case .busUnreachable(let address, let why):
            return "cannot reach the D-Bus bus at \(address) (\(why)). Fix: sudo systemctl start dbus"
        case .bluetoothdNotRunning:
            return "bluetoothd is not running (nobody owns org.bluez on the bus). Fix: sudo systemctl start bluetooth"
        case .noAdapter(let wanted, let seen):
            let list = seen.isEmpty ? "none" : seen.joined(separator: ", ")
            return "no Bluetooth adapter matches \(wanted) (adapters: \(list)). "
                + "Fix: plug in an adapter or check `bluetoothctl list`; if it is blocked: sudo rfkill unblock bluetooth"
        case .adapterPoweredOff(let name):
            return "Bluetooth adapter \(name) is powered off. Fix: bluetoothctl power on"
        case .advertisingUnsupported(let name):
            return "adapter \(name) offers no LE advertising (no org.bluez.LEAdvertisingManager1). "
                + "Fix: use an LE-capable adapter and BlueZ >= 5.48 (bluetoothd --version)"
        case .gattUnsupported(let name):
            return "adapter \(name) offers no GATT server (no org.bluez.GattManager1). Fix: use BlueZ >= 5.48 (bluetoothd --version)"
        case .noFreeAdvertisingInstance(let name):
            return "adapter \(name) has no free advertising instance (org.bluez.Error.NotPermitted): another program "
                + "is advertising. Fix: stop it (bluetoothctl: menu advertise, then back; advertise off) or restart "
                + "bluetoothd: sudo systemctl restart bluetooth"
        case .advertisementTooLong(let n):
            return "advertising data too long for the adapter (org.bluez.Error.InvalidLength, \(n) bytes of "
                + "manufacturer data; legacy advertising fits 24). Fix: shorten the payload"
        case .rejected(let what, let e):
            return "BlueZ refused \(what): \(e)"
        }
    }
}

extension DBusError {
    /// Whether this error means `org.bluez` (or the object) is gone: bluetoothd stopped or restarting, or
    /// the bus tried to start it on demand and could not (`org.freedesktop.DBus.Error.Spawn.*`: a service
    /// file names bluetoothd, but its Exec fails or, without systemd, `SystemdService` cannot be started).
    var meansBluetoothdGone: Bool {
        name == DBusError.serviceUnknown || name == DBusError.nameHasNoOwner || name == DBusError.disconnected
            || name == DBusError.unknownObject || name.hasPrefix(Self.spawnErrorPrefix)
    }

    /// The prefix of the errors the bus daemon answers when it cannot start a service on demand.
    static let spawnErrorPrefix = "org.freedesktop.DBus.Error.Spawn."
}
