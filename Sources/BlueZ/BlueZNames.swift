import ClickerTransport
import DBus

/// BlueZ's bus name, interfaces and object paths.
enum BlueZ {
    static let service = "org.bluez"
    static let adapter = "org.bluez.Adapter1"
    static let device = "org.bluez.Device1"
    static let gattService = "org.bluez.GattService1"
    static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    static let advertisingManager = "org.bluez.LEAdvertisingManager1"
    static let advertisement = "org.bluez.LEAdvertisement1"
    static let gattManager = "org.bluez.GattManager1"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
    static let root: DBusObjectPath = "/"
}

/// How to pick the adapter.
public enum AdapterSelection: Sendable, Hashable, CustomStringConvertible {
    /// The first adapter (in path order) that is powered; failing that, the first adapter.
    case firstPowered
    /// By interface name, e.g. `hci0`.
    case name(String)
    /// By the adapter's own address.
    case address(DeviceAddress)

    public var description: String {
        switch self {
        case .firstPowered: "any adapter"
        case .name(let n): "name \(n)"
        case .address(let a): "address \(a)"
        }
    }

    /// The adapter's name in log lines until the real one is known.
    var logName: String {
        switch self {
        case .name(let n): n
        case .address(let a): a.description
        case .firstPowered: "bluez"
        }
    }
}

enum DevicePath {
    /// The address encoded in a BlueZ device path (`…/dev_AA_BB_CC_DD_EE_FF`), without allocating.
    static func address(of path: String) -> DeviceAddress? {
        var s = path
        return s.withUTF8 { address(ofBytes: UnsafeRawBufferPointer($0)) }
    }

    /// Same, over raw bytes (a path borrowed from a message).
    static func address(ofBytes p: UnsafeRawBufferPointer) -> DeviceAddress? {
        // "/dev_" + 17 = 22 trailing bytes
        let n = p.count
        guard n >= 22, p[n - 22] == UInt8(ascii: "/"), p[n - 21] == UInt8(ascii: "d"), p[n - 20] == UInt8(ascii: "e"),
              p[n - 19] == UInt8(ascii: "v"), p[n - 18] == UInt8(ascii: "_")
        else { return nil }
        var raw: UInt64 = 0
        var i = n - 17
        for k in 0..<6 {
            guard let hi = hex(p[i]), let lo = hex(p[i + 1]) else { return nil }
            raw = raw << 8 | UInt64(hi << 4 | lo)
            if k < 5 {
                guard p[i + 2] == UInt8(ascii: "_") else { return nil }
            }
            i += 3
        }
        return DeviceAddress(rawValue: raw)
    }

    @inline(__always) static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x41...0x46: c - 0x41 + 10
        case 0x61...0x66: c - 0x61 + 10
        default: nil
        }
    }

    /// `<adapter>/dev_AA_BB_CC_DD_EE_FF`.
    static func path(adapter: DBusObjectPath, address: DeviceAddress) -> DBusObjectPath? {
        try? adapter.appending("dev_" + address.description.replacingOccurrences(of: ":", with: "_"))
    }
}

extension String {
    fileprivate func replacingOccurrences(of a: String, with b: String) -> String {
        split(separator: Character(a), omittingEmptySubsequences: false).joined(separator: b)
    }
}

