import ClickerTransport
import ClickerWire
import Logging
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Voter
import XCTest

/// What a `VoterService` did, in order: its reports and what it asked of the radio.
final class EventLog: Sendable {
    private struct Waiter {
        let id: Int
        let count: Int
        let continuation: CheckedContinuation<Void, Never>
    }
    private let events = Mutex<[String]>([])
    private let waiters = Mutex<(next: Int, list: [Waiter])>((0, []))

    func add(_ e: String) {
        let n = events.withLock { $0.append(e); return $0.count }
        let ready = waiters.withLock { w in
            let r = w.list.filter { $0.count <= n }
            w.list.removeAll { $0.count <= n }
            return r
        }
        for r in ready { r.continuation.resume() }
    }

    var all: [String] { events.withLock { $0 } }

    /// Suspends until `n` events have been logged (an acknowledged event, no clock). Fails the test
    /// after 30 s of real time instead of hanging the suite, and returns what was logged by then.
    func waitFor(_ n: Int, file: StaticString = #filePath, line: UInt = #line) async -> [String] {
        let id = waiters.withLock { w in w.next += 1; return w.next }
        let timeout = Task {
            guard (try? await Task.sleep(for: .seconds(30))) != nil else { return }
            if resume(id) { XCTFail("\(n) events never came; logged: \(all)", file: file, line: line) }
        }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = waiters.withLock { w in
                let have = events.withLock { $0.count }
                if have >= n { return true }
                w.list.append(Waiter(id: id, count: n, continuation: c))
                return false
            }
            if done { c.resume() }
        }
        timeout.cancel()
        return all
    }

    /// Resumes the waiter `id` if it still waits; whether it did.
    private func resume(_ id: Int) -> Bool {
        let w = waiters.withLock { w -> Waiter? in
            guard let i = w.list.firstIndex(where: { $0.id == id }) else { return nil }
            return w.list.remove(at: i)
        }
        w?.continuation.resume()
        return w != nil
    }
}

/// A radio that logs what it is asked to do, and can refuse to advertise.
struct LoggingRadio: PeripheralTransport {
    let log: EventLog
    var refuse: TransportError?
    func advertise(_ payload: AdvertisingPayload) async throws {
        if let refuse { throw refuse }
        log.add("advertise")
    }
    func stopAdvertising() async throws {}
    func publish(service: UUID128, characteristic: UUID128, value: [UInt8]) async throws {}
    func shutdown() async { log.add("shutdown") }
    func status() -> AsyncStream<RadioStatus> { AsyncStream { $0.finish() } }
}

final class VoterServiceTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input
    let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    func testFollowsTypedAnswersKeepsTheVoteAfterInputEndsAndStopsOnShutdown() async throws {
        let log = EventLog()
        let session = VoterSession(secret: pollSecret(code), question: 1, identity: DeviceKey.generate(),
                                   transport: LoggingRadio(log: log), state: nil)
        let (lines, input) = AsyncStream<String>.makeStream()
        // The real wait for shutdown, announced: the service must reach it before withdrawing.
        let service = VoterService(session: session, first: .choice(1), lines: lines, report: { log.add($0) }, logger: quiet,
                                   untilShutdown: { log.add("waiting for shutdown"); try? await gracefulShutdown() })
        let voter = IDText.voter(await session.voterID)
        try await testGracefulShutdown { shutdown in
            let run = Task { try await service.run() }
            var seen = await log.waitFor(2)
            XCTAssertEqual(seen, ["advertise", "voting B as voter \(voter) (sequence 1)"])
            XCTAssertEqual(voter.count, 8, "the voter ID in its one text form")
            input.yield("  C ")
            input.yield("")
            input.yield("not an answer")  // reported, the vote on the air stays
            input.yield("A")
            seen = await log.waitFor(7)
            XCTAssertEqual(Array(seen[2...3]), ["advertise", "changed to C (sequence 2)"])
            XCTAssertTrue(seen[4].hasPrefix("not cast: not an answer: "), seen[4])
            XCTAssertTrue(seen[4].hasSuffix("; the vote stays C"), seen[4])
            XCTAssertEqual(Array(seen[5...]), ["advertise", "changed to A (sequence 3)"])
            input.finish()
            seen = await log.waitFor(9)
            XCTAssertEqual(Array(seen[7...]), ["input closed; the vote stays on the air until stopped", "waiting for shutdown"])
            log.add("test: shutdown")
            shutdown.triggerGracefulShutdown()
            try await run.value
            let current = await session.current
            XCTAssertEqual(current?.answer, .choice(0))
        }
        // The radio was shut down only after the shutdown was asked for, and the service said so.
        XCTAssertEqual(Array(log.all[7...]), ["input closed; the vote stays on the air until stopped", "waiting for shutdown",
                                              "test: shutdown", "shutdown", "stopped advertising"])
    }

    /// With `--kind`, a typed line the question does not offer is refused before anything goes on
    /// the air: the vote stays as it was, and the next offered answer is cast.
    func testATypedAnswerTheQuestionDoesNotOfferIsNotAdvertised() async throws {
        let log = EventLog()
        let session = VoterSession(secret: pollSecret(code), question: 1, identity: DeviceKey.generate(),
                                   transport: LoggingRadio(log: log), state: nil)
        let (lines, input) = AsyncStream<String>.makeStream()
        let form = AnswerForm(kind: .multi, options: 3)
        let service = VoterService(session: session, first: .multiSelect(0b011), lines: lines, report: { log.add($0) },
                                   logger: quiet, parse: { try form.answer($0) },
                                   untilShutdown: { log.add("waiting for shutdown"); try? await gracefulShutdown() })
        try await testGracefulShutdown { shutdown in
            let run = Task { try await service.run() }
            _ = await log.waitFor(2)
            input.yield("A+D")    // D is not offered
            input.yield("true")   // not a multi-select
            input.yield("A+A")    // a letter twice
            input.yield("C")      // C alone
            input.finish()
            let seen = await log.waitFor(8)
            // Each refused line is said, with what the question takes and the vote that stays.
            XCTAssertEqual(Array(seen[2...3]), [
                "not cast: A+D: option D is not offered; this question takes one or more different letters from A to C, joined by +, like A+C; the vote stays A+B",
                "not cast: true: 'true' does not answer this question; this question takes one or more different letters from A to C, joined by +, like A+C; the vote stays A+B"])
            XCTAssertTrue(seen[4].hasPrefix("not cast: A+A: ") && seen[4].hasSuffix("; the vote stays A+B"), seen[4])
            XCTAssertEqual(Array(seen[5...7]), ["advertise", "changed to C+ (sequence 2)", "input closed; the vote stays on the air until stopped"])
            shutdown.triggerGracefulShutdown()
            try await run.value
        }
        XCTAssertEqual(log.all.filter { $0 == "advertise" }.count, 2, "the refused lines advertised nothing")
    }

    func testAFirstCastThatFailsEndsTheServiceWithItsErrorAndWithdraws() async throws {
        let log = EventLog()
        let radio = LoggingRadio(log: log, refuse: .radioUnavailable("adapter gone"))
        let session = VoterSession(secret: pollSecret(code), question: 1, identity: DeviceKey.generate(), transport: radio, state: nil)
        let service = VoterService(session: session, first: .choice(0), lines: AsyncStream { $0.finish() },
                                   report: { log.add($0) }, logger: quiet)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)], logger: quiet))
        do {
            try await group.run()
            XCTFail("the group ended without the cast's error")
        } catch let e as TransportError {
            XCTAssertEqual(e, .radioUnavailable("adapter gone"))
        }
        XCTAssertEqual(log.all, ["shutdown"], "nothing reported as voting; the radio withdrawn")
    }
}
