import ClickerTestSupport
@testable import TallyDaemon

extension PollController {
    /// Moves `clock` (the poll's) in steps of `step`, each once the beacon has acted at the instant before
    /// (``beaconSettled()``), for `span` or until `done` holds; returns whether it does.
    @discardableResult
    nonisolated func pass(_ clock: TestClock, _ span: Duration, step: Duration = .milliseconds(10),
                          until done: () -> Bool = { false }) async -> Bool {
        let end = clock.now.advanced(by: span)
        await beaconSettled()
        while !done(), clock.now < end {
            clock.advance(by: step)
            await beaconSettled()
        }
        return done()
    }
}
