import ClickerTransport
import ClickerWire
import InMemoryLogging
import Logging
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Voter
import XCTest

/// A radio that advertises (logging what and at which interval) and listens to frames the test
/// sends; its listen stream can be ended, as when bluetoothd goes away.
final class ListeningRadio: PeripheralTransport, ListenerTransport {
    let log: EventLog
    let sinks = Mutex<[AsyncThrowingStream<AdvertisementReport, any Error>.Continuation]>([])
    let listens = EventLog()
    init(log: EventLog) { self.log = log }

    func advertise(_ payload: AdvertisingPayload) async throws {
        log.add("advertise \(payload.interval.components.seconds * 1000 + payload.interval.components.attoseconds / 1_000_000_000_000_000) ms")
    }
    func stopAdvertising() async throws { log.add("stop") }
    func publish(service: UUID128, characteristic: UUID128, value: [UInt8]) async throws {}
    func shutdown() async { log.add("shutdown") }
    func status() -> AsyncStream<RadioStatus> { AsyncStream { $0.finish() } }

    func listen(companyID: UInt16, dutyCycle: ScanDutyCycle) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        let (stream, c) = AsyncThrowingStream<AdvertisementReport, any Error>.makeStream()
        sinks.withLock { $0.append(c) }
        listens.add("listen")
        return stream
    }

    private let delivered = Mutex(0)
    /// How many frames ``air(_:)`` delivered.
    var aired: Int { delivered.withLock { $0 } }

    /// Delivers `bytes` to the newest listener.
    func air(_ bytes: [UInt8]) {
        guard let c = sinks.withLock({ $0.last }) else { return }
        delivered.withLock { $0 += 1 }
        c.yield(AdvertisementReport(address: DeviceAddress(1, 2, 3, 4, 5, 6), rssi: -50, companyID: BallotFormat.companyID,
                                     data: bytes, timestamp: RadioInstant(nanoseconds: 0)))
    }

    /// Ends the listen stream (the daemon went away).
    func endListening() { sinks.withLock { $0.last?.finish() } }
}

final class BeaconFollowServiceTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input
    let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    func testFollowsTheBeaconCastsAndSlowsWhenCountedAndListensAgain() async throws {
        let secret = pollSecret(code)
        let key = BeaconKey(secret)
        let log = EventLog()
        let radio = ListeningRadio(log: log)
        let identity = DeviceKey.generate()
        let (lines, input) = AsyncStream<String>.makeStream()
        let service = BeaconFollowService(secret: secret, identity: identity, roster: false, transport: radio,
                                          state: nil, lines: lines,
                                          report: { log.add($0.line) }, logger: quiet,
                                          tick: .seconds(3600), start: .immediate)
        var counter: UInt32 = 1000
        func state(_ poll: BeaconPoll, _ ms: Int?) -> [UInt8] {
            counter += 1
            return try! BeaconCodec.seal(BeaconState(voteID: key.voteID, counter: counter, mode: .anonymous, poll: poll,
                                                     interval: ms.flatMap { BeaconInterval(milliseconds: $0) } ?? .stop), key: key)
        }
        let q2 = BeaconQuestion(number: 2, kind: .single, options: 4)
        try await testGracefulShutdown { shutdown in
            let run = Task { try await service.run() }
            _ = await radio.listens.waitFor(1)
            var seen = await log.waitFor(1)
            XCTAssertEqual(seen, ["waiting"])
            radio.air(state(.open(q2), 100))
            seen = await log.waitFor(2)
            XCTAssertEqual(seen.last, "question 2 single 4")
            input.yield("E")          // refused by the question's form: nothing advertised
            seen = await log.waitFor(3)
            XCTAssertEqual(seen.last, "not-offered E")
            input.yield("B")
            seen = await log.waitFor(5)
            XCTAssertEqual(Array(seen[3...]), ["advertise 100 ms", "sending B"])
            let voterID = await VoterSession(secret: secret, question: 2, identity: identity, transport: radio, state: nil).voterID
            // Another ballot's acknowledgement (sequence 2) changes nothing; then this one's (sequence 1).
            counter += 1
            radio.air(try BeaconCodec.seal(.acks(BeaconAcks(counter: counter, question: 2, fingerprints: [
                key.fingerprint(voterID: voterID, question: 2, sequence: 2)])), key: key))
            counter += 1
            radio.air(try BeaconCodec.seal(.acks(BeaconAcks(counter: counter, question: 2, fingerprints: [
                key.fingerprint(voterID: voterID, question: 2, sequence: 1)])), key: key))
            seen = await log.waitFor(7)
            XCTAssertEqual(Array(seen[5...]), ["advertise 10240 ms", "counted B"])
            // Listening again after the stream ends.
            radio.endListening()
            _ = await radio.listens.waitFor(2)
            radio.air(state(.questionClosed(q2), nil))
            seen = await log.waitFor(9)
            XCTAssertEqual(Array(seen[7...]), ["stop", "question-closed 2"])
            radio.air(state(.closed, nil))
            seen = await log.waitFor(10)
            XCTAssertEqual(seen.last, "poll-closed")
            shutdown.triggerGracefulShutdown()
            try await run.value
        }
        XCTAssertEqual(log.all.last, "shutdown")
    }

    /// One line per change: a voter in the wrong mode is told once, although the beacon goes on to
    /// questions of other numbers and the follower takes note of them.
    func testARosterMismatchIsToldOnceWhateverTheQuestion() async throws {
        let secret = pollSecret(code)
        let key = BeaconKey(secret)
        let log = EventLog()
        let radio = ListeningRadio(log: log)
        let service = BeaconFollowService(secret: secret, identity: DeviceKey.generate(), roster: true, transport: radio,
                                          state: nil, lines: AsyncStream { $0.finish() },
                                          report: { log.add($0.line) }, logger: quiet, tick: .seconds(3600),
                                          start: .immediate)
        var counter: UInt32 = 1000
        func state(_ q: UInt8, _ mode: BallotMode) -> [UInt8] {
            counter += 1
            return try! BeaconCodec.seal(BeaconState(voteID: key.voteID, counter: counter, mode: mode,
                                                     poll: .open(BeaconQuestion(number: q, kind: .single, options: 4)),
                                                     interval: BeaconInterval(milliseconds: 100) ?? .stop), key: key)
        }
        try await testGracefulShutdown { shutdown in
            let run = Task { try await service.run() }
            _ = await radio.listens.waitFor(1)
            radio.air(state(1, .anonymous))
            _ = await log.waitFor(2)
            radio.air(state(2, .anonymous))
            radio.air(state(3, .anonymous))
            // A beacon in this voter's mode is a change: once it is reported, the frames before it were taken.
            radio.air(state(4, .roster))
            _ = await log.waitFor(3)
            shutdown.triggerGracefulShutdown()
            try await run.value
        }
        XCTAssertEqual(Array(log.all.prefix(3)), ["waiting", "roster-mismatch", "question 4 single 4"])
    }

    /// A roster ballot unacknowledged for 15 s makes the voter say, once, that the device may not be on
    /// the class list; an acknowledged one, or an anonymous ballot, never does.
    func testARosterBallotNotCountedWithinFifteenSecondsSaysWhyOnce() async throws {
        let secret = pollSecret(code)
        let key = BeaconKey(secret)
        for roster in [true, false] {
            let log = EventLog(), logged = InMemoryLogHandler()
            var warnings: [String] { logged.entries.map { "\($0.level): \($0.message)" } }
            let radio = ListeningRadio(log: log)
            let clock = FollowerClock()
            let identity = DeviceKey.generate()
            let (lines, input) = AsyncStream<String>.makeStream()
            let notes = EventLog()
            let service = BeaconFollowService(
                secret: secret, identity: identity, roster: roster, transport: radio, state: nil, lines: lines,
                report: { if case .note(let n) = $0 { notes.add(n) } else { log.add($0.line) } },
                logger: Logger(label: "test", factory: { _ in logged }),
                clock: clock, tick: .milliseconds(2), start: .immediate)
            let mode: BallotMode = roster ? .roster : .anonymous
            let q1 = BeaconQuestion(number: 1, kind: .single, options: 4)
            var counter: UInt32 = 1000
            func state() -> [UInt8] {
                counter += 1
                return try! BeaconCodec.seal(BeaconState(voteID: key.voteID, counter: counter, mode: mode, poll: .open(q1),
                                                         interval: BeaconInterval(milliseconds: 100) ?? .stop), key: key)
            }
            try await testGracefulShutdown { shutdown in
                let run = Task { try await service.run() }
                _ = await radio.listens.waitFor(1)
                radio.air(state())
                _ = await log.waitFor(2)
                input.yield("B")
                var seen = await log.waitFor(4)
                XCTAssertEqual(seen.last, "sending B")
                // The service reads the clock for the start of sending just after it reports "sending B":
                // ticks after that first, then 14.9 s later (read on several ticks since): nothing said yet.
                await clock.waitForReads(clock.reads + 3)
                clock.set(.milliseconds(14_900))
                await clock.waitForReads(clock.reads + 3)
                XCTAssertEqual(warnings, [])
                clock.set(.seconds(16))
                if roster {
                    await yieldUntil { !warnings.isEmpty }
                    let said = warnings + ["(nothing said)"]
                    XCTAssertTrue(said[0].hasPrefix("warning: not counted after 15 s: a roster poll counts only devices on the class list"),
                                  said[0])
                } else {
                    await clock.waitForReads(clock.reads + 3)
                }
                // More frames and ticks, then the acknowledgement: every event before it was taken.
                radio.air(state())
                await clock.waitForReads(clock.reads + 3)
                let voterID = await VoterSession(secret: secret, question: 1, identity: identity, roster: roster,
                                                 transport: radio, state: nil).voterID
                counter += 1
                radio.air(try BeaconCodec.seal(.acks(BeaconAcks(counter: counter, question: 1, fingerprints: [
                    key.fingerprint(voterID: voterID, question: 1, sequence: 1)])), key: key))
                // 14.9 s without a frame backed the ballot off once (BeaconFollower.silenceBeforeBackoff); the
                // next STATE set its interval again.
                repeat { seen = await log.waitFor(seen.count + 1) } while seen.last != "counted B" && seen.count < 12
                XCTAssertEqual(Array(seen.suffix(4)), ["advertise 200 ms", "advertise 100 ms", "advertise 10240 ms", "counted B"])
                // Counted: no more ticks; a frame at 60 s is looked at (the clock read) and nothing is said.
                clock.set(.seconds(60))
                let reads = clock.reads
                radio.air(state())
                await clock.waitForReads(reads + 3)
                shutdown.triggerGracefulShutdown()
                try await run.value
            }
            XCTAssertEqual(warnings.count, roster ? 1 : 0, "roster \(roster): \(warnings)")
            // The student reads it too, as a sentence.
            XCTAssertEqual(notes.all.count, roster ? 1 : 0, "roster \(roster): \(notes.all)")
            if roster { XCTAssertTrue(notes.all[0].hasPrefix("Not counted yet after 15 s. A roster poll counts only"), notes.all[0]) }
        }
    }

    /// The answer given on the command line waits for a question that takes it: shown the first
    /// question (which it does not answer) with a word on why nothing was cast, it is cast for the next.
    func testTheFirstAnswerIsCastForTheFirstQuestionItAnswers() async throws {
        let secret = pollSecret(code)
        let key = BeaconKey(secret)
        let log = EventLog()
        let radio = ListeningRadio(log: log)
        let service = BeaconFollowService(secret: secret, identity: DeviceKey.generate(), roster: false, transport: radio,
                                          state: nil, lines: AsyncStream { _ in }, first: "true",
                                          report: { log.add($0.line) }, logger: quiet,
                                          tick: .seconds(3600), start: .immediate)
        var counter: UInt32 = 1000
        func state(_ q: BeaconQuestion) -> [UInt8] {
            counter += 1
            return try! BeaconCodec.seal(BeaconState(voteID: key.voteID, counter: counter, mode: .anonymous, poll: .open(q),
                                                     interval: BeaconInterval(milliseconds: 100) ?? .stop), key: key)
        }
        try await testGracefulShutdown { shutdown in
            let run = Task { try await service.run() }
            _ = await radio.listens.waitFor(1)
            radio.air(state(BeaconQuestion(number: 1, kind: .single, options: 4)))
            var seen = await log.waitFor(3)
            XCTAssertEqual(seen[1], "question 1 single 4")
            XCTAssertTrue(seen[2].hasPrefix("true (given when you started) does not answer this question"), seen[2])
            radio.air(state(BeaconQuestion(number: 2, kind: .truefalse, options: 0)))
            seen = await log.waitFor(6)
            XCTAssertEqual(Array(seen[3...]), ["advertise 100 ms", "question 2 truefalse 0", "sending true"])
            shutdown.triggerGracefulShutdown()
            try await run.value
        }
    }

    /// A ballot goes on the air at the moment its ``StaggeredStart`` drew within its interval, not
    /// when the STATE frame asked for it: every voter in the room heard that frame at the same time.
    func testABallotGoesOnTheAirAtTheMomentItsStartDrew() async throws {
        let secret = pollSecret(code)
        let key = BeaconKey(secret)
        let log = EventLog()
        let radio = ListeningRadio(log: log)
        let clock = FollowerClock()
        let (lines, input) = AsyncStream<String>.makeStream()
        let service = BeaconFollowService(secret: secret, identity: DeviceKey.generate(), roster: false, transport: radio,
                                          state: nil, lines: lines, report: { log.add($0.line) }, logger: quiet,
                                          clock: clock, tick: .milliseconds(2), start: StaggeredStart(seed: 7))
        let q1 = BeaconQuestion(number: 1, kind: .single, options: 4)
        let state = try BeaconCodec.seal(BeaconState(voteID: key.voteID, counter: 1001, mode: .anonymous, poll: .open(q1),
                                                     interval: BeaconInterval(milliseconds: 1000) ?? .stop), key: key)
        // The same draw, made here: when the ballot answered at 0 s may start.
        var expected = StaggeredStart(seed: 7)
        expected.update(.ballot(question: 1, answer: .choice(1), generation: 1, interval: .seconds(1)), at: .zero)
        let startAt = try XCTUnwrap(expected.startAt)
        XCTAssertGreaterThan(startAt, .milliseconds(10), "a draw this early would not show the wait")
        try await testGracefulShutdown { shutdown in
            let run = Task { try await service.run() }
            _ = await radio.listens.waitFor(1)
            radio.air(state)
            _ = await log.waitFor(2)
            input.yield("B")
            var seen = await log.waitFor(3)
            XCTAssertEqual(seen.last, "sending B")
            clock.set(startAt - .milliseconds(1))
            await clock.waitForReads(clock.reads + 3)
            XCTAssertEqual(log.all.count, 3, "on the air before its start: \(log.all)")
            clock.set(startAt)
            seen = await log.waitFor(4)
            XCTAssertEqual(seen.last, "advertise 1000 ms")
            shutdown.triggerGracefulShutdown()
            try await run.value
        }
    }
}

/// The follower's clock, set by the test; counts its reads so a test can wait for ticks to be taken.
final class FollowerClock: Clock, Sendable {
    typealias Instant = ElapsedClock.Instant
    private let state = Mutex<(now: Duration, reads: Int)>((.zero, 0))
    func set(_ t: Duration) { state.withLock { $0.now = t } }
    var reads: Int { state.withLock { $0.reads } }
    var now: Instant { state.withLock { $0.reads += 1; return Instant(offset: $0.now) } }
    var minimumResolution: Duration { .nanoseconds(1) }
    /// The time set by the test does not pass on its own: a sleeper waits, in real time, as long as the
    /// test's time says it has left (the follower's 2 ms ticks go on while the test holds its time).
    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let left = deadline.offset - state.withLock { $0.now }
        if left > .zero { try await Task.sleep(for: left) }
    }
    /// Yields until the clock has been read `n` times (each tick of the service reads it), or fails
    /// the test after 30 s rather than hang the suite.
    func waitForReads(_ n: Int, file: StaticString = #filePath, line: UInt = #line) async {
        await yieldUntil(file: file, line: line) { self.reads >= n }
    }
}

/// Yields until `condition` holds; fails the test after 30 s of real time instead of hanging.
func yieldUntil(file: StaticString = #filePath, line: UInt = #line, _ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + .seconds(30)
    while !condition() {
        guard ContinuousClock.now < deadline else { return XCTFail("condition never held", file: file, line: line) }
        await Task.yield()
    }
}
