
/// The tally's beacon for one poll as the ledger has it, as it changes (schema version 7): what a
/// receiver broadcasts. It listens on ``LedgerSchema/beaconChannel`` on a thread of its own with a
/// connection of its own, and yields the beacon at start, at each new serial, and when the ledger
/// cannot be read (then it connects again, at most once per `retryInterval`).
public final class LedgerBeaconFeed: Sendable {
    public enum Reading: Sendable, Equatable {
        /// The beacon as written (nil payload: the tally stopped broadcasting); `nil`: none written yet.
        case beacon(LedgerBeacon?)
        /// Why the ledger cannot be read now.
        case unreadable(String)
    }

    private let listener: LedgerListener
    /// The readings, newest kept when the reader falls behind (only the last beacon matters).
    public let readings: AsyncStream<Reading>

    /// Starts following the beacon of `poll` in the ledger at `url` (a receiver's token, or the
    /// instructor's role). Returns nil when the system refuses a thread.
    public init?(url: String, poll: Int64, retryInterval: Duration = .seconds(1)) {
        let (readings, continuation) = AsyncStream<Reading>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.readings = readings
        guard let listener = LedgerListener(name: "clicker-beacon-feed", url: url, channel: LedgerSchema.beaconChannel, poll: poll,
                                            retry: retryInterval, handlers: {
            var serial: Int64?
            var failing: String?
            return LedgerListener.Handlers(read: { ledger in
                let beacon = try ledger.beacon(poll: poll)
                // A serial this thread has yielded is no news, unless the ledger could not be read meanwhile.
                guard beacon?.serial ?? 0 != serial || failing != nil else { return }
                serial = beacon?.serial ?? 0
                failing = nil
                continuation.yield(.beacon(beacon))
            }, failed: { error in
                let text = "\(error)"
                guard text != failing else { return }
                failing = text
                continuation.yield(.unreadable(text))
            }, ended: { continuation.finish() })
        }) else { return nil }
        self.listener = listener
    }

    /// Stops following; returns once the thread has ended (the readings then finish).
    public func stop() async { await listener.stop() }
}
