#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Errors of the raw HCI backend, each worded so that a person can act on it.
public enum HCIError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A command parameter outside what the Core Specification allows.
    case invalidParameter(String)
    /// Legacy advertising data holds at most 31 octets.
    case advertisingDataTooLong(bytes: Int, maximum: Int)
    /// The adapter name is not `hciN`.
    case invalidAdapterName(String)
    /// The kernel has no Bluetooth socket family (`socket(AF_BLUETOOTH)` failed).
    case bluetoothUnavailable(errno: Int32)
    /// The process lacks `capability`; `fix` is a command that grants it.
    case permissionDenied(capability: String, fix: String)
    /// No adapter with that index.
    case noSuchAdapter(String)
    /// The adapter is up, i.e. managed by the kernel and probably bluetoothd; this backend refuses to share it.
    case adapterBusy(adapter: String, bluetoothdRunning: Bool)
    /// The adapter is down but the kernel has not finished (or failed) setting it up.
    case adapterNotReady(String)
    /// Another process holds the adapter's HCI user channel.
    case adapterInUse(String)
    /// The adapter is blocked by rfkill.
    case rfkillBlocked(String)
    /// Any other failed system call.
    case systemCall(call: String, errno: Int32)
    /// The controller answered a command with a non-zero status.
    case commandFailed(opcode: HCIOpcode, status: UInt8)
    /// The controller did not answer a command in time.
    case commandTimeout(HCIOpcode)
    /// The controller's answer to a command was too short to use.
    case malformedReply(HCIOpcode)
    /// The controller reported a hardware error (HCI_Hardware_Error).
    case hardwareError(code: UInt8)
    /// The HCI socket was closed (shutdown, or the adapter went away).
    case closed(String)

    public var description: String {
        switch self {
        case .invalidParameter(let what): return "invalid HCI parameter: \(what)"
        case .advertisingDataTooLong(let n, let max):
            return "advertising data of \(n) bytes exceeds the \(max)-byte legacy limit "
                + "(at most \(AdvertisingData.maximumManufacturerPayload) bytes of manufacturer payload)"
        case .invalidAdapterName(let name): return "invalid adapter name '\(name)': expected hci0, hci1, …"
        case .bluetoothUnavailable(let e):
            return "this kernel offers no Bluetooth sockets (socket(AF_BLUETOOTH): \(errnoText(e))); "
                + "load the module (`modprobe bluetooth`) or use a kernel built with CONFIG_BT"
        case .permissionDenied(let cap, let fix):
            return "permission denied: raw HCI access needs \(cap). Grant it once with `\(fix)` or run as root"
        case .noSuchAdapter(let a): return "no Bluetooth adapter \(a) (see `btmgmt info` or `ls /sys/class/bluetooth`)"
        case .adapterBusy(let a, let bluez):
            let index = a.hasPrefix("hci") ? String(a.dropFirst(3)) : a
            return "\(a) is up, so \(bluez ? "the kernel and bluetoothd (running) manage" : "the kernel manages") it; the raw HCI "
                + "backend needs the adapter to itself and will not fight over it. Power it off first: "
                + "`btmgmt --index \(index) power off` (with bluetoothd) or `hciconfig \(a) down`, "
                + "or use --radio bluez"
        case .adapterNotReady(let a):
            return "\(a) is down but the kernel is still setting it up, or its setup failed (see `dmesg`, e.g. "
                + "'Opcode 0x0c03 failed'); wait and retry, or re-plug / re-create the adapter"
        case .adapterInUse(let a): return "\(a) is already held by another raw HCI user (HCI user channel busy)"
        case .rfkillBlocked(let a): return "\(a) is blocked by rfkill: `rfkill unblock bluetooth`"
        case .systemCall(let call, let e): return "\(call) failed: \(errnoText(e))"
        case .commandFailed(let op, let status): return "controller rejected \(op): \(HCIError.statusText(status))"
        case .commandTimeout(let op): return "controller did not answer \(op) in time"
        case .malformedReply(let op): return "controller sent a malformed reply to \(op)"
        case .hardwareError(let code): return "controller reported hardware error 0x\(hex8(code))"
        case .closed(let why): return "HCI socket closed: \(why)"
        }
    }

    /// The Core Specification's name of an HCI status code (Vol 1 Part F), for the common ones.
    public static func statusText(_ status: UInt8) -> String {
        let name: String = switch status {
        case 0x00: "Success"
        case 0x01: "Unknown HCI Command"
        case 0x03: "Hardware Failure"
        case 0x07: "Memory Capacity Exceeded"
        case 0x0C: "Command Disallowed"
        case 0x11: "Unsupported Feature or Parameter Value"
        case 0x12: "Invalid HCI Command Parameters"
        case 0x1F: "Unspecified Error"
        case 0x3A: "Controller Busy"
        default: "error"
        }
        return name + " (0x" + hex8(status) + ")"
    }

    /// The index of `hciN` (also accepts a bare number).
    public static func adapterIndex(_ name: String) throws(HCIError) -> UInt16 {
        let digits = name.hasPrefix("hci") ? name.dropFirst(3) : Substring(name)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }), let index = UInt16(digits),
              index < 0xFFFF
        else { throw .invalidAdapterName(name) }
        return index
    }

    /// The `setcap` command that grants this program raw HCI access.
    public static func setcapCommand(program: String) -> String {
        "sudo setcap cap_net_raw,cap_net_admin+ep $(command -v \(program)), after making the binary 0750 root:clicker-hci"
            + " so that only that group can run it (docs/GUIDE.md: Raw HCI: capabilities for one group only)"
    }

    /// Maps a failed `socket(AF_BLUETOOTH, SOCK_RAW, BTPROTO_HCI)`.
    public static func forSocket(errno e: Int32, program: String) -> HCIError {
        switch e {
        case EAFNOSUPPORT, EPROTONOSUPPORT, ESOCKTNOSUPPORT: .bluetoothUnavailable(errno: e)
        case EPERM, EACCES: .permissionDenied(capability: "CAP_NET_RAW", fix: setcapCommand(program: program))
        default: .systemCall(call: "socket(AF_BLUETOOTH)", errno: e)
        }
    }

    /// Maps a failed `bind` to the HCI user channel of `adapter`. `adapterUp`: whether the
    /// adapter's HCI_UP flag is set (the kernel also refuses while it sets an adapter up).
    public static func forBind(errno e: Int32, adapter: String, program: String, bluetoothdRunning: Bool,
                               adapterUp: Bool = true) -> HCIError {
        switch e {
        case EPERM, EACCES: .permissionDenied(capability: "CAP_NET_ADMIN", fix: setcapCommand(program: program))
        case ENODEV: .noSuchAdapter(adapter)
        case EBUSY where !adapterUp: .adapterNotReady(adapter)
        case EBUSY: .adapterBusy(adapter: adapter, bluetoothdRunning: bluetoothdRunning)
        case EUSERS, EALREADY: .adapterInUse(adapter)
        case ERFKILL: .rfkillBlocked(adapter)
        default: .systemCall(call: "bind(\(adapter), HCI_CHANNEL_USER)", errno: e)
        }
    }
}

func errnoText(_ e: Int32) -> String {
    guard let s = strerror(e) else { return "errno \(e)" }
    return String(cString: s) + " (errno \(e))"
}
