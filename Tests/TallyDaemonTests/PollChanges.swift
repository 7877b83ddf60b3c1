import TallyDaemon
import XCTest

/// Waits until `condition` holds, checking it now and again after each change `poll` announces on its
/// `ChangeFeed` (a counted ballot, a question opened or closed): an event, not a timer. `timeout` is
/// only the test's guard against a change that never comes; then the test fails and the wait throws.
func untilChanged(_ poll: PollController, _ what: String, timeout: Duration = .seconds(10),
                  file: StaticString = #filePath, line: UInt = #line,
                  _ condition: @escaping @Sendable () async -> Bool) async throws {
    let changes = poll.changeFeed.subscribe()   // before the first look: no change slips in between
    if await condition() { return }
    let held = await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            for await _ in changes where await condition() { return true }
            return false
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return false
        }
        let first = await group.next() ?? false
        group.cancelAll()
        return first
    }
    if held { return }
    XCTFail("no change of the poll made this true: \(what)", file: file, line: line)
    throw EventuallyTimeout(what: what)
}
