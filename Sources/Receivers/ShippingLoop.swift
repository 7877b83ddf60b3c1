import Logging

/// Has a writer retry the ledger once every `interval` on `clock` until cancelled (`sync` runs one
/// pass: ``LedgerReceiver/sync()``, or the tally's link), and logs when the ledger stops or starts
/// taking writes and when the journal refuses ballots. What a receiver and a linked tally both run.
func keepShipping(every interval: Duration, on clock: some Clock<Duration>, logger: Logger,
                  _ sync: @Sendable () async -> ShipperStatus) async {
    var last = ShipperStatus()
    while !Task.isCancelled {
        do { try await clock.sleep(for: interval) } catch { return }
        let now = await sync()
        if now.databaseError != last.databaseError {
            if let e = now.databaseError { logger.warning("the ledger takes no writes (\(e)); counting into the journal") }
            else { logger.notice("the ledger takes writes again; \(now.shipped) ballots committed") }
        }
        if let e = now.journalError, e != last.journalError { logger.error("the journal refused ballots: \(e)") }
        last = now
    }
}

extension LedgerReceiver {
    /// The receiver's writer retried once every `interval` on `clock`, until cancelled (``keepShipping``).
    public nonisolated func keepShipping(every interval: Duration = .seconds(1), on clock: some Clock<Duration> = ContinuousClock(),
                                         logger: Logger) async {
        await Receivers.keepShipping(every: interval, on: clock, logger: logger) { await self.sync() }
    }
}
