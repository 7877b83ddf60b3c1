import CBluetooth
import Glibc

/// The capability sets of the calling thread, and the drop of the two the HCI user channel needs.
///
/// Linux keeps capabilities per thread, and a new thread inherits its creator's. A drop therefore
/// covers the whole process only when it runs while the process has a single thread (or on every
/// thread): `clicker-vote` binds the HCI socket and drops at the very start of `main`, before Swift's
/// thread pool exists (``threadCount()`` says whether that held).
public enum ProcessCapabilities {
    /// CAP_NET_ADMIN (binding the HCI user channel) and CAP_NET_RAW (raw HCI sockets).
    public static let netAdmin: Int32 = 12, netRaw: Int32 = 13
    static let setPCap: Int32 = 8

    /// One thread's five capability sets, bit n = capability n.
    public struct Sets: Sendable, Equatable, CustomStringConvertible {
        public var effective: UInt64
        public var permitted: UInt64
        public var inheritable: UInt64
        public var bounding: UInt64
        public var ambient: UInt64

        /// Whether capability `cap` is in any set that lets this thread, or a program it runs, use it.
        public func holdsAny(_ cap: Int32) -> Bool {
            let bit = UInt64(1) << UInt64(cap)
            return (effective | permitted | inheritable | ambient) & bit != 0
        }

        public var description: String {
            func hex(_ v: UInt64) -> String { String(v, radix: 16) }
            return "eff=\(hex(effective)) prm=\(hex(permitted)) inh=\(hex(inheritable)) bnd=\(hex(bounding)) amb=\(hex(ambient))"
        }
    }

    /// The calling thread's sets.
    public static func current() throws(HCIError) -> Sets {
        var header = __user_cap_header_struct(version: UInt32(_LINUX_CAPABILITY_VERSION_3), pid: 0)
        var data = (__user_cap_data_struct(), __user_cap_data_struct())
        let rc = withUnsafeMutableBytes(of: &data) {
            clicker_capget(&header, $0.baseAddress?.assumingMemoryBound(to: __user_cap_data_struct.self))
        }
        guard rc == 0 else { throw .systemCall(call: "capget", errno: errno) }
        func join(_ lo: UInt32, _ hi: UInt32) -> UInt64 { UInt64(lo) | UInt64(hi) << 32 }
        var bounding: UInt64 = 0, ambient: UInt64 = 0
        for cap in 0..<64 {
            let inBounding = clicker_prctl(PR_CAPBSET_READ, UInt(cap), 0)
            if inBounding < 0 { break }  // past the kernel's last capability
            if inBounding == 1 { bounding |= 1 << UInt64(cap) }
            if clicker_prctl(PR_CAP_AMBIENT, UInt(PR_CAP_AMBIENT_IS_SET), UInt(cap)) == 1 { ambient |= 1 << UInt64(cap) }
        }
        return Sets(effective: join(data.0.effective, data.1.effective),
                    permitted: join(data.0.permitted, data.1.permitted),
                    inheritable: join(data.0.inheritable, data.1.inheritable),
                    bounding: bounding, ambient: ambient)
    }

    /// Removes CAP_NET_RAW and CAP_NET_ADMIN from the calling thread for good: from the ambient set,
    /// from the bounding set (possible only while CAP_SETPCAP is effective, as for root; a file-
    /// capability binary without it keeps them in the bounding set, which then grants nothing on its
    /// own since they are gone from every other set), then from the effective, permitted and
    /// inheritable sets. Returns the sets afterwards; throws if either capability is still held.
    @discardableResult
    public static func dropNetworkCapabilities() throws(HCIError) -> Sets {
        let before = try current()
        // Nothing to drop (the systemd unit's case: its bounding set is empty): make no capset call,
        // which the unit's system-call filter (~@privileged) answers with EPERM.
        guard before.holdsAny(netAdmin) || before.holdsAny(netRaw) else { return before }
        for cap in [netAdmin, netRaw] {
            _ = clicker_prctl(PR_CAP_AMBIENT, UInt(PR_CAP_AMBIENT_LOWER), UInt(cap))
            if before.effective & (1 << UInt64(setPCap)) != 0, before.bounding & (1 << UInt64(cap)) != 0 {
                guard clicker_prctl(PR_CAPBSET_DROP, UInt(cap), 0) == 0 else {
                    throw .systemCall(call: "prctl(PR_CAPBSET_DROP)", errno: errno)
                }
            }
        }
        let mask = ~(UInt64(1) << UInt64(netAdmin) | UInt64(1) << UInt64(netRaw))
        func split(_ v: UInt64) -> (UInt32, UInt32) { (UInt32(truncatingIfNeeded: v), UInt32(truncatingIfNeeded: v >> 32)) }
        let (e0, e1) = split(before.effective & mask), (p0, p1) = split(before.permitted & mask)
        let (i0, i1) = split(before.inheritable & mask)
        var header = __user_cap_header_struct(version: UInt32(_LINUX_CAPABILITY_VERSION_3), pid: 0)
        var data = (__user_cap_data_struct(effective: e0, permitted: p0, inheritable: i0),
                    __user_cap_data_struct(effective: e1, permitted: p1, inheritable: i1))
        let rc = withUnsafeMutableBytes(of: &data) {
            clicker_capset(&header, $0.baseAddress?.assumingMemoryBound(to: __user_cap_data_struct.self))
        }
        guard rc == 0 else { throw .systemCall(call: "capset", errno: errno) }
        let after = try current()
        guard !after.holdsAny(netAdmin), !after.holdsAny(netRaw) else {
            throw .systemCall(call: "capset (capabilities still held)", errno: EPERM)
        }
        return after
    }

    /// ``dropNetworkCapabilities()`` for the whole process: refused (before anything is dropped) when
    /// the process has more than one thread, since the others would keep the capabilities.
    @discardableResult
    public static func dropNetworkCapabilitiesOfTheProcess() throws(HCIError) -> Sets {
        let threads = threadCount()
        guard threads == 1 else {
            throw .systemCall(call: "dropping CAP_NET_RAW/CAP_NET_ADMIN with \(threads) threads running", errno: EBUSY)
        }
        return try dropNetworkCapabilities()
    }

    /// Threads in this process (entries of /proc/self/task); 0 if that cannot be read.
    public static func threadCount() -> Int {
        guard let dir = opendir("/proc/self/task") else { return 0 }
        defer { closedir(dir) }
        var n = 0
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { n += 1 }
        }
        return n
    }
}
