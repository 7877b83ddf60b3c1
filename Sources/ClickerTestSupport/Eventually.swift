import XCTest

/// Waits until `condition` holds, checking it every 10 ms for up to `timeout`; on timeout the test
/// fails and the wait throws. For states that announce no event of their own (a peer that left, a
/// counter in another process); where an event exists, wait on the event instead.
public func eventually(_ what: String, timeout: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
                       _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    if try await condition() { return }
    XCTFail("timed out waiting for \(what)", file: file, line: line)
    throw EventuallyTimeout(what: what)
}

/// The error of an ``eventually(_:timeout:file:line:_:)`` (or another wait) that timed out.
public struct EventuallyTimeout: Error, CustomStringConvertible {
    public let what: String
    public init(what: String) { self.what = what }
    public var description: String { "timed out waiting for \(what)" }
}
