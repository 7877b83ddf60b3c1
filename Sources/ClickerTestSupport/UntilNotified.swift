import XCTest

/// Waits until `condition` holds, checking it now and again after each element of `notices` (a
/// `ChangeFeed` subscription, say: a counted ballot, a payload broadcast): an event, not a timer.
/// Subscribe before calling, so that no change slips in between the subscription and the first look.
/// `timeout` is only the test's guard against a notice that never comes; then the test fails and the
/// wait throws.
public func until(_ notices: AsyncStream<Void>, _ what: String, timeout: Duration = .seconds(10),
                  file: StaticString = #filePath, line: UInt = #line,
                  _ condition: @escaping @Sendable () async -> Bool) async throws {
    if await condition() { return }
    if await first(of: notices, within: timeout, where: condition) { return }
    XCTFail("no notice made this true: \(what)", file: file, line: line)
    throw EventuallyTimeout(what: what)
}

/// Whether `stream` delivers an element for which `accept` holds before `limit` (a bound for a broken
/// run, not a wait the test relies on: a working run returns as soon as such an element arrives).
public func first(of stream: AsyncStream<Void>, within limit: Duration,
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
