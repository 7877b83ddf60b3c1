import ClickerTestSupport
import TallyDaemon
import XCTest

/// Waits until `condition` holds, checking it now and again after each change `poll` announces on its
/// `ChangeFeed` (a counted ballot, a question opened or closed): an event, not a timer. `timeout` is
/// only the test's guard against a change that never comes; then the test fails and the wait throws.
func untilChanged(_ poll: PollController, _ what: String, timeout: Duration = .seconds(10),
                  file: StaticString = #filePath, line: UInt = #line,
                  _ condition: @escaping @Sendable () async -> Bool) async throws {
    try await until(poll.changeFeed.subscribe(), what, timeout: timeout, file: file, line: line, condition)
}
