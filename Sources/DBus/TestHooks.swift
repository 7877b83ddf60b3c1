import Synchronization

// Diagnostics for this package's tests and measurements only (`package` access: not part of the
// module's public API).

let liveCores = Atomic<Int>(0)
let liveThreads = Atomic<Int>(0)

extension DBusConnection {
    /// Connection cores still alive and dispatch threads still running in this process. Both return
    /// to zero once every connection is closed and released (leak tests).
    package static var liveInstances: (connections: Int, dispatchThreads: Int) {
        (liveCores.load(ordering: .relaxed), liveThreads.load(ordering: .relaxed))
    }

    /// CPU time consumed so far by this connection's dispatch thread (reading, parsing, matching and
    /// running fast-path decoders), in nanoseconds; `nil` once the thread has ended.
    package var dispatchThreadCPUNanoseconds: UInt64? { core.dispatchThreadCPUNanos() }

    /// The number of match rules this connection's subscriptions currently hold on the bus.
    package var activeMatchCount: Int { core.state.withLock { $0.activeMatches } }

    /// Signals this connection has read from the bus, whether or not a subscription matched them.
    package var signalsReceived: Int { core.signalsRead.load(ordering: .relaxed) }
}
