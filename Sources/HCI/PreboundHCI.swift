import Synchronization

/// The HCI user-channel socket an executable binds at start, before it drops its network
/// capabilities, and hands to the backend later.
///
/// Linux keeps capabilities per thread and new threads inherit them, so a drop made once Swift's
/// thread pool runs would leave every other thread holding them. At the top of an async `main`,
/// before its first suspension, the process has a single thread (the drop fails loudly otherwise).
/// The bound socket is the only thing the capabilities were needed for.
public enum PreboundHCI {
    static let socket = Mutex<HCISocket?>(nil)

    /// Binds `adapter`'s user channel when one is given, then drops CAP_NET_RAW and CAP_NET_ADMIN
    /// from every set of the process. Call first thing in `main`.
    public static func bindThenDropCapabilities(adapter: String?, program: String) throws {
        if let adapter {
            let s = try HCISocket.open(adapter: adapter, program: program)
            socket.withLock { $0 = s }
        }
        try ProcessCapabilities.dropNetworkCapabilitiesOfTheProcess()
    }

    /// The socket bound at start, once; nil when none was bound or it was taken already.
    public static func take() -> HCISocket? { socket.withLock { s in defer { s = nil }; return s } }
}
