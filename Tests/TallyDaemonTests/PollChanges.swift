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
    if await first(of: changes, within: timeout, where: condition) { return }
    XCTFail("no change of the poll made this true: \(what)", file: file, line: line)
    throw EventuallyTimeout(what: what)
}

/// Whether `stream` delivers an element for which `accept` holds before `limit` (a bound for a broken
/// run, not a wait the test relies on: a working run returns as soon as such an element arrives).
func first(of stream: AsyncStream<Void>, within limit: Duration,
           where accept: @escaping @Sendable () async -> Bool = { true }) async -> Bool {
    await withTaskGroup(of: Bool.self) { group in
        group.addTask {
            for await _ in stream where await accept() { return true }
            return false
        }
        group.addTask {
            try? await Task.sleep(for: limit)
            return false
        }
        let got = await group.next() ?? false
        group.cancelAll()
        return got
    }
}
