import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Logging
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Voter
import XCTest

/// A follower with nothing to do (its answer counted, or its question closed) hears the tally's few
/// frames over and over, about ten a second, for the rest of the lecture (docs/PERFORMANCE.md, "Idle
/// following voter"). It opens each distinct frame once, and it has no timer: it wakes for what it
/// hears alone. Ten simulated minutes of each, on test clocks.
final class IdleFollowerTests: XCTestCase {
    static let voteID: UInt16 = 0x4821
    // Test constant: 64 bytes of key material.
    let key = BeaconKey(keyMaterial: (0..<64).map { UInt8($0) }, voteID: voteID)!
    let voterID: UInt32 = 0xCAFE_F00D
    let q1 = BeaconQuestion(number: 1, kind: .single, options: 4)

    func state(_ poll: BeaconPoll, counter: UInt32, key k: BeaconKey? = nil) -> [UInt8] {
        let interval: BeaconInterval = if case .open = poll { BeaconInterval(milliseconds: 100) ?? .stop } else { .stop }
        let s = BeaconState(voteID: Self.voteID, counter: counter, mode: .anonymous, poll: poll, interval: interval)
        return try! BeaconCodec.seal(s, key: k ?? key)  // valid by construction
    }

    func acks(counter: UInt32, _ fps: [AckFingerprint], key k: BeaconKey? = nil) -> [UInt8] {
        try! BeaconCodec.seal(.acks(BeaconAcks(counter: counter, question: 1, fingerprints: fps)), key: k ?? key)  // valid by construction
    }

    /// The tally's legacy frames as a follower hears them: ten a second, the STATE and the ACKS frame in
    /// turn, both sealed again each second with the counter of that second (10 ms ticks).
    func lecture(seconds: ClosedRange<Int>, state poll: BeaconPoll, fingerprint: AckFingerprint,
                 hear: (_ frame: [UInt8], _ at: Duration) -> Void) {
        for second in seconds {
            let counter = 1000 + UInt32(second) * 100
            let frames = [state(poll, counter: counter), acks(counter: counter + 1, [fingerprint])]
            for k in 0..<10 { hear(frames[k % 2], .seconds(second) + .milliseconds(100 * k)) }
        }
    }

    /// 12,000 frames in 20 simulated minutes, 2,400 of them distinct: each distinct frame is opened (its
    /// tag checked) once, not every time it is heard; the follower stays counted, then closed, and asks
    /// for no clock. A forged frame among them (the STATE with one bit flipped, or sealed with another
    /// join code's key) is refused every time it comes.
    func testAnIdleFollowerOpensEachDistinctFrameOnce() throws {
        var f = BeaconFollower(key: key, mode: .anonymous, voterID: voterID, now: .zero)
        f.hear(state(.open(q1), counter: 1000), at: .zero)
        f.answer(.choice(1))
        guard case .ballot(1, .choice(1), let g, _) = f.advertising else { return XCTFail("\(f.advertising)") }
        f.sealed(generation: g, sequence: 1)
        let fp = key.fingerprint(voterID: voterID, question: 1, sequence: 1)
        f.hear(acks(counter: 1001, [fp]), at: .milliseconds(100))
        XCTAssertEqual(f.status, .counted(.choice(1)))
        XCTAssertFalse(f.awaitsTime)
        let other = BeaconKey(keyMaterial: (0..<64).map { UInt8(255 - $0) }, voteID: Self.voteID)!  // test constant
        let opened = f.admission.framesOpened
        var heard = 0, forged = 0
        lecture(seconds: 1...600, state: .open(q1), fingerprint: fp) { frame, t in
            f.hear(frame, at: t)
            heard += 1
            XCTAssertEqual(f.status, .counted(.choice(1)), "at \(t)")
            XCTAssertFalse(f.awaitsTime, "at \(t)")
            if t.components.attoseconds == 0, t.components.seconds % 60 == 0 {
                // Once a minute, twice each: a bit flipped in the STATE, and another poll's STATE.
                var flipped = frame
                flipped[flipped.count - 1] ^= 1
                let foreign = state(.open(BeaconQuestion(number: 2, kind: .single, options: 4)), counter: 5000, key: other)
                for bad in [flipped, flipped, foreign, foreign] {
                    f.hear(bad, at: t)
                    forged += 1
                    XCTAssertEqual(f.status, .counted(.choice(1)), "a forged frame was taken at \(t)")
                }
            }
        }
        XCTAssertEqual(heard, 6000)
        XCTAssertEqual(forged, 40)
        XCTAssertEqual(f.admission.framesOpened - opened, 1200 + forged,
                       "each distinct frame once, each forged frame every time; not each of the \(heard) frames heard")
        // The question closes: ten more minutes.
        f.hear(state(.questionClosed(q1), counter: 61_050), at: .seconds(601))
        XCTAssertEqual(f.status, .questionClosed(1))
        let closedOpened = f.admission.framesOpened
        lecture(seconds: 602...1201, state: .questionClosed(q1), fingerprint: fp) { frame, t in
            f.hear(frame, at: t)
            XCTAssertEqual(f.status, .questionClosed(1), "at \(t)")
            XCTAssertFalse(f.awaitsTime, "at \(t)")
        }
        XCTAssertEqual(f.admission.framesOpened - closedOpened, 1200)
    }

    /// The service: from the moment the answer is counted until the lecture is over, no timer of its own
    /// fires (before: a tick every 500 ms, 2,400 in these 20 minutes), while it takes every frame and
    /// follows the close.
    func testAnIdleFollowerServiceHasNoTimer() async throws {
        let secret = pollSecret(try JoinCode(parsing: "4821-ABCDE-FGHJK"))
        let key = BeaconKey(secret)
        let log = EventLog()
        let radio = ListeningRadio(log: log)
        let clock = TestClock()
        let turns = FollowTurns()
        let identity = DeviceKey.generate()
        let (lines, input) = AsyncStream<String>.makeStream()
        let service = BeaconFollowService(secret: secret, identity: identity, roster: false, transport: radio, state: nil,
                                          lines: lines, report: { log.add($0.line) },
                                          logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
                                          clock: clock, tick: .milliseconds(500), start: .immediate,
                                          turns: turns)
        func state(_ poll: BeaconPoll, _ counter: UInt32) -> [UInt8] {
            try! BeaconCodec.seal(BeaconState(voteID: key.voteID, counter: counter, mode: .anonymous, poll: poll,  // valid by construction
                                              interval: BeaconInterval(milliseconds: 100) ?? .stop), key: key)
        }
        try await testGracefulShutdown { shutdown in
            let run = Task { try await service.run() }
            _ = await radio.listens.waitFor(1)
            radio.air(state(.open(q1), 1000))
            _ = await log.waitFor(2)
            input.yield("B")
            var seen = await log.waitFor(4)
            XCTAssertEqual(Array(seen[2...]), ["advertise 100 ms", "sending B"])
            // While sending, the clock matters (backing off): half a second, one tick.
            await yieldUntil { clock.sleepers == 1 }
            let ticking = clock.woken
            clock.advance(by: .milliseconds(500))
            await yieldUntil { clock.woken > ticking }
            let voterID = await VoterSession(secret: secret, question: 1, identity: identity, transport: radio, state: nil).voterID
            let fp = key.fingerprint(voterID: voterID, question: 1, sequence: 1)
            // The tally's counter runs with the clock (10 ms ticks), as on the air.
            func counter() -> UInt32 { 1000 + UInt32(clock.now.offset / BeaconReplayGuard.tick) }
            // The follower hears each frame before the clock moves on: the test never runs ahead of it, so
            // every frame is heard at the time it was sent, as on the air, however loaded the machine.
            func air(_ frame: [UInt8]) async {
                radio.air(frame)
                await yieldUntil { turns.isSettled(heard: radio.aired, read: 1) }
            }
            func frames(_ poll: BeaconPoll, seconds: ClosedRange<Int>) async {
                for second in seconds {
                    // A frame every 10 s here (the air's ten a second would only slow the test down): the
                    // STATE, then the ACKS; the clock moves a second at a time.
                    clock.advance(by: .seconds(1))
                    let c = counter()
                    let pair = [state(poll, c), try! BeaconCodec.seal(  // valid by construction
                        .acks(BeaconAcks(counter: c + 1, question: 1, fingerprints: [fp])), key: key)]
                    if second % 10 == 0 { await air(pair[second / 10 % 2]) }
                }
            }
            radio.air(try BeaconCodec.seal(.acks(BeaconAcks(counter: 1001, question: 1, fingerprints: [fp])), key: key))
            seen = await log.waitFor(6)
            XCTAssertEqual(Array(seen[4...]), ["advertise 10240 ms", "counted B"])
            // The tick that was waiting is called off (before, it never was: this waits in vain).
            await yieldUntil { clock.sleepers == 0 }
            let counted = clock.woken
            // Each change of phase half a second after the last STATE of the phase before (sealed in the
            // same tick, it would be no newer).
            await frames(.open(q1), seconds: 1...600)
            clock.advance(by: .milliseconds(500))
            await air(state(.questionClosed(q1), counter()))
            seen = await log.waitFor(8)
            XCTAssertEqual(Array(seen[6...]), ["stop", "question-closed 1"], "every frame before the close was taken")
            await frames(.questionClosed(q1), seconds: 601...1200)
            clock.advance(by: .milliseconds(500))
            await air(state(.closed, counter()))
            seen = await log.waitFor(9)
            XCTAssertEqual(seen.last, "poll-closed")
            XCTAssertEqual(clock.woken - counted, 0, "timer wake-ups in 20 idle minutes")
            XCTAssertEqual(clock.sleepers, 0, "no timer waits")
            shutdown.triggerGracefulShutdown()
            try await run.value
        }
    }
}

