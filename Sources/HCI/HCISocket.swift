import CBluetooth
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A bidirectional channel of HCI packets (each with its H4 indicator): what the controller
/// logic needs of a socket. `HCISocket` is the real one; tests may supply another.
public protocol HCIChannel: Sendable {
    /// Writes one packet.
    func write(_ packet: [UInt8]) throws(HCIError)
    /// Waits up to `timeoutMilliseconds` for one packet; nil when none arrived.
    /// Called from a single reader thread; may block for that long, never longer.
    func read(timeoutMilliseconds: Int32) throws(HCIError) -> [UInt8]?
    /// Releases the channel; later reads and writes throw `HCIError.closed`. Idempotent.
    /// Called by the reader thread once it has stopped reading.
    func close()
}

/// The HCI user channel (`HCI_CHANNEL_USER`) of one adapter: exclusive raw access.
///
/// Why the user channel: it gives this process the controller to itself, so nothing else
/// (the kernel's own LE state machine, bluetoothd) changes scan or advertising state under
/// it. The kernel grants it only while the adapter is *down*; an adapter that is up is in the
/// hands of the kernel and usually bluetoothd, and `open` then refuses with
/// `HCIError.adapterBusy` instead of fighting over it. While the channel is held, the adapter
/// disappears from the management interface (bluetoothd sees it removed); when the socket is
/// closed, also by process exit or crash, the kernel powers the controller down (advertising
/// and scanning stop) and hands the adapter back.
///
/// Binding needs CAP_NET_ADMIN (`HCIError.permissionDenied` names the `setcap` command).
public final class HCISocket: HCIChannel {
    /// The descriptor, nil once closed. Writes hold the lock; only the reader thread reads and closes.
    private let fd: Mutex<Int32?>
    /// A copy of the descriptor for `poll`/`read`, which the reader thread runs without the lock
    /// (it alone closes the descriptor, so it is valid whenever the reader uses it).
    private let readFD: Int32

    private init(fd: Int32) {
        self.fd = Mutex(fd)
        readFD = fd
    }

    deinit { close() }

    /// Opens and binds the user channel of `adapter` (`hci0`, `hci1`, …). `program` names the
    /// executable in the `setcap` advice of a permission error.
    public static func open(adapter: String, program: String) throws(HCIError) -> HCISocket {
        let index = try HCIError.adapterIndex(adapter)
        let fd = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), BTPROTO_HCI)
        guard fd >= 0 else { throw HCIError.forSocket(errno: errno, program: program) }
        var addr = sockaddr_hci()
        addr.hci_family = sa_family_t(AF_BLUETOOTH)
        addr.hci_dev = index
        addr.hci_channel = UInt16(HCI_CHANNEL_USER)
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_hci>.size))
            }
        }
        guard rc == 0 else {
            let e = errno
            let up = e == EBUSY ? isAdapterUp(fd: fd, index: index) : true
            _ = Glibc.close(fd)
            throw HCIError.forBind(errno: e, adapter: adapter, program: program, bluetoothdRunning: isBluetoothdRunning(),
                                   adapterUp: up)
        }
        return HCISocket(fd: fd)
    }

    public func write(_ packet: [UInt8]) throws(HCIError) {
        let result: Int32? = fd.withLock { fd in
            guard let fd else { return nil }
            while true {
                let n = packet.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if n == packet.count { return 0 }
                if n < 0 && errno == EINTR { continue }
                return n < 0 ? errno : EIO
            }
        }
        guard let result else { throw .closed("write after close") }
        guard result == 0 else { throw .systemCall(call: "write(HCI)", errno: result) }
    }

    public func read(timeoutMilliseconds: Int32) throws(HCIError) -> [UInt8]? {
        guard fd.withLock({ $0 != nil }) else { throw .closed("read after close") }
        var pfd = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
        let ready = poll(&pfd, 1, timeoutMilliseconds)
        if ready < 0 {
            if errno == EINTR { return nil }
            throw .systemCall(call: "poll(HCI)", errno: errno)
        }
        if ready == 0 { return nil }
        if pfd.revents & Int16(POLLIN) == 0 && pfd.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
            throw .closed("the adapter went away")
        }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(readFD, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EINTR || errno == EAGAIN { return nil }
            if errno == ENODEV || errno == ENETDOWN || errno == EBADFD || errno == EPIPE { throw .closed("the adapter went away") }
            throw .systemCall(call: "read(HCI)", errno: errno)
        }
        if n == 0 { throw .closed("end of stream") }
        buffer.removeSubrange(n...)
        return buffer
    }

    public func close() {
        fd.withLock { fd in
            if let open = fd { _ = Glibc.close(open) }
            fd = nil
        }
    }
}

/// HCIGETDEVINFO, `_IOR('H', 211, int)`.
private let hciGetDevInfo: UInt = 0x8004_48D3

/// Whether the adapter's HCI_UP flag is set (HCIGETDEVINFO needs no capability). True when unknown.
func isAdapterUp(fd: Int32, index: UInt16) -> Bool {
    var info = hci_dev_info()
    info.dev_id = index
    guard ioctl(fd, hciGetDevInfo, &info) == 0 else { return true }
    return info.flags & (1 << UInt32(HCI_UP)) != 0
}

/// Whether a process named `bluetoothd` runs (scans /proc/*/comm), for error messages only.
func isBluetoothdRunning() -> Bool {
    guard let dir = opendir("/proc") else { return false }
    defer { closedir(dir) }
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        guard let first = name.utf8.first, first >= 0x30, first <= 0x39 else { continue }
        guard let f = fopen("/proc/\(name)/comm", "r") else { continue }
        var line = [CChar](repeating: 0, count: 64)
        let got = fgets(&line, 64, f) != nil
        fclose(f)
        if got, String(decoding: line.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .trimmingSuffixNewline == "bluetoothd" { return true }
    }
    return false
}

extension String {
    fileprivate var trimmingSuffixNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}
