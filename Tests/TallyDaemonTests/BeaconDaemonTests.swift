import ClickerSim
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import Synchronization
@testable import TallyDaemon
import TerminalView
import Voter
import XCTest

/// The tally's beacon in the daemon (docs/PROTOCOL.md §11.11): what it broadcasts, what it does with
/// the beacon frames its own scanner hears.
final class BeaconDaemonTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // test constant
    var key: BeaconKey { BeaconKey(pollSecret(code)) }

    func frameReport(_ data: [UInt8], at ms: UInt64 = 1) -> AdvertisementReport {
        AdvertisementReport(address: DeviceAddress(rawValue: 0xB0_0000_0001), rssi: -50, companyID: BallotFormat.companyID,
                            data: data, timestamp: RadioInstant(nanoseconds: ms * 1_000_000))
    }

    func ballot(voter: UInt32, answer: Answer, at ms: UInt64 = 2) -> AdvertisementReport {
        let b = Ballot(mode: .anonymous, voteID: code.voteID, question: 1, voterID: voter, sequence: 1, answer: answer)
        return AdvertisementReport(address: DeviceAddress(rawValue: UInt64(voter)), rssi: -60, companyID: BallotFormat.companyID,
                                   data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(code))),
                                   timestamp: RadioInstant(nanoseconds: ms * 1_000_000))
    }

    /// Beacon frames of every kind (this poll's, another poll's, damaged) reach neither the ballot
    /// decoder nor the rejection counts; an authentic STATE frame of this poll that the tally did not
    /// seal is counted as a forgery and shown.
    func testBeaconFramesAreNotBallotsAndAForgedStateIsCountedAndShown() async throws {
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let other = BeaconKey(pollSecret(try JoinCode(parsing: "4821-ABCDE-FGHJK")))
        let q = BeaconQuestion(number: 1, kind: .single, options: 4)
        let theirs = try BeaconCodec.seal(.state(BeaconState(voteID: 4821, counter: 9, mode: .anonymous, poll: .open(q),
                                                             interval: .stop)), key: other)
        var damaged = try BeaconCodec.seal(.state(BeaconState(voteID: 4821, counter: 10, mode: .anonymous, poll: .closed,
                                                              interval: .stop)), key: key)
        damaged[23] ^= 1
        let acks = try BeaconCodec.seal(.acks(BeaconAcks(counter: 11, question: 1, fingerprints: [AckFingerprint(value: 7)])), key: key)
        let text = try BeaconCodec.seal(.text(BeaconTextPage(counter: 12, digest: 1, index: 0, count: 1, chunk: [65])), key: key)
        for f in [theirs, damaged, acks, text] { await controller.ingest(frameReport(f)) }
        var r = await controller.results()
        XCTAssertEqual(r.rejected, [:], "beacon frames are not rejected ballots")
        XCTAssertEqual(r.voters, 0)
        var heard = await controller.beaconFramesHeard
        XCTAssertEqual(heard, 4)
        var forged = await controller.beaconForgeries
        XCTAssertEqual(forged, 0, "neither another poll's frame nor a damaged one is a forgery of this poll")
        var alert = await controller.viewModel().alert
        XCTAssertNil(alert)

        // Someone with the join code tells the room the poll closed.
        let forgery = try BeaconCodec.seal(.state(BeaconState(voteID: 4821, counter: 99, mode: .anonymous, poll: .closed,
                                                              interval: .stop)), key: key)
        await controller.ingest(frameReport(forgery))
        await controller.ingest(frameReport(forgery, at: 3))
        forged = await controller.beaconForgeries
        XCTAssertEqual(forged, 2)
        alert = await controller.viewModel().alert
        XCTAssertTrue(alert?.contains("forged beacon: 2 STATE frames") == true, alert ?? "no alert")

        // Ballots still count.
        await controller.ingest(ballot(voter: 5, answer: .choice(2)))
        r = await controller.results()
        XCTAssertEqual(r.voters, 1)
        XCTAssertEqual(r.rejected, [:])
        heard = await controller.beaconFramesHeard
        XCTAssertEqual(heard, 6)
    }

    /// On the simulated air: the tally broadcasts from the poll's start; a listener hears STATE open
    /// with the question, and ACKS frames holding the fingerprints of the ballots counted; after `n`
    /// STATE says question 2; the tally's own STATE frames heard by its scanner are no forgery.
    /// The beacon runs on the air's clock, and `drive` lets it act at each instant before the air moves
    /// on: what it has sent by a given instant of the air is the same on a loaded machine.
    func testTheTallyBroadcastsStateAndAcknowledgesWhatItCounts() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 21, clock: .virtual))
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil,
                                            clock: PollClock(air.clock))
        let ear = air.addPeripheral(rssi: -50)
        let heard = ear.listen(companyID: BallotFormat.companyID, dutyCycle: ScanDutyCycle(window: .milliseconds(60),
                                                                                           interval: .milliseconds(60)))
        var frames = heard.makeAsyncIterator()
        var delivered = 0
        func drain() async throws -> [BeaconFrame] {
            var out: [BeaconFrame] = []
            let now = air.statistics.listenerReportsDelivered
            for _ in delivered..<now {
                guard let r = try await frames.next() else { break }
                if case .success(let f) = BeaconCodec.open(r.data, key: key) { out.append(f) }
            }
            delivered = now
            return out
        }
        var voters: [UInt32: UInt16] = [:]
        for i in 0..<12 {
            let session = VoterSession(secret: pollSecret(code), question: 1, identity: DeviceKey.generate(),
                                       transport: air.addPeripheral(), state: nil)
            try await session.cast(.choice(UInt8(i % 4)))
        }
        let run = await air.start(controller)
        await air.drive(controller, until: RadioInstant(nanoseconds: 2_000_000_000))
        let first = await controller.beacon.payloads
        XCTAssertGreaterThanOrEqual(first, 1, "the first payload")
        for b in await controller.results().ballots {
            voters[UInt32(b.voter, radix: 16) ?? 0] = UInt16(b.sequence)
        }
        XCTAssertEqual(voters.count, 12)
        // The counted ballots went into a payload; the listener hears it.
        let pending = await controller.beacon.tally?.hasPending
        let payloads = await controller.beacon.payloads
        XCTAssertEqual(pending, false, "the acknowledgements composed")
        XCTAssertGreaterThanOrEqual(payloads, 2, "the acknowledgements composed")
        await air.drive(controller, until: RadioInstant(nanoseconds: 3_000_000_000))
        var got = try await drain()
        var states: [BeaconState] = got.compactMap { if case .state(let s) = $0 { s } else { nil } }
        XCTAssertFalse(states.isEmpty)
        for s in states {
            XCTAssertEqual(s.poll, .open(BeaconQuestion(number: 1, kind: .single, options: 4)))
            XCTAssertNotEqual(s.interval, .stop)
        }
        let expected = Set(voters.map { key.fingerprint(voterID: $0.key, question: 1, sequence: $0.value) })
        let acked = Set(got.flatMap { f -> [AckFingerprint] in if case .acks(let a) = f, a.question == 1 { a.fingerprints } else { [] } })
        XCTAssertFalse(acked.isEmpty, "ACKS frames heard")
        XCTAssertTrue(acked.isSubset(of: expected), "only counted ballots are acknowledged")
        XCTAssertGreaterThanOrEqual(acked.count, 6, "\(acked.count) of 12 acknowledgements heard")

        // Next question: STATE says 2.
        let before = await controller.beacon.payloads
        try await controller.nextQuestion()
        await air.drive(controller, until: RadioInstant(nanoseconds: 3_500_000_000))
        let after = await controller.beacon.payloads
        XCTAssertGreaterThan(after, before, "the new question's payload")
        got = try await drain()
        states = got.compactMap { if case .state(let s) = $0 { s } else { nil } }
        XCTAssertEqual(states.last?.poll, .open(BeaconQuestion(number: 2, kind: .single, options: 4)))

        // Its own STATE frame, heard by its scanner, is not a forgery, nor a rejected ballot.
        let rejectedBefore = await controller.results().rejected
        if let own = await controller.beacon.tally?.lastState {
            await controller.ingest(frameReport(own, at: 3_600))
        }
        let forged = await controller.beaconForgeries
        XCTAssertEqual(forged, 0)
        let rejected = await controller.results().rejected
        XCTAssertEqual(rejected, rejectedBefore)
        run.cancel()
        _ = try? await run.value
        air.finishAdvertisementStreams()
    }

    /// A radio that cannot broadcast while it scans (a Bluetooth 4 controller under BlueZ): by default the
    /// beacon stays off, votes still count and the screen says why; asked for (`--beacon`), it goes out anyway.
    func testARadioThatCannotBroadcastWhileItScansLeavesTheBeaconOffAndSaysSo() async throws {
        let bluetooth4 = BroadcastCapabilities(maxFrameLength: 24, extended: false, whileScanning: false)
        let radio = RecordingBroadcaster(capabilities: bluetooth4)
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let run = Task { try await controller.run(central: radio) }
        // The beacon's loop has ended (nothing to broadcast on): the screen says so by then.
        await controller.beaconSettled()
        let offAlert = await controller.viewModel().alert
        XCTAssertTrue(offAlert?.hasPrefix("beacon off: this adapter cannot broadcast while it scans") == true, offAlert ?? "no alert")
        radio.ads.yield(ballot(voter: 3, answer: .choice(1)))
        try await untilChanged(controller, "the ballot counted") { await controller.results().voters == 1 }
        XCTAssertEqual(radio.events, [], "nothing was broadcast")
        let offBeacon = await controller.viewModel().radio.beacon
        XCTAssertNil(offBeacon, "a beacon that is off goes out in no frames")
        _ = try await controller.newPoll()
        let afterNewPoll = await controller.viewModel().alert
        XCTAssertTrue(afterNewPoll?.hasPrefix("beacon off") == true, "a new poll forgot why the beacon is off")
        run.cancel()
        _ = try? await run.value

        var asked = PollOptions(joinCode: code, confirmByGATT: false)
        asked.beacon = .always
        let forced = RecordingBroadcaster(capabilities: bluetooth4)
        let clock = TestClock()
        let tally = try PollController(options: asked, store: nil, clock: PollClock(clock))
        let run2 = Task { try await tally.run(central: forced) }
        let out = await tally.pass(clock, .seconds(1)) { forced.payloads.count >= 1 }
        XCTAssertTrue(out, "the beacon goes out when asked for")
        let alert = await tally.viewModel().alert
        XCTAssertNil(alert)
        run2.cancel()
        _ = try? await run2.value

        var off = PollOptions(joinCode: code, confirmByGATT: false)
        off.beacon = .off
        let silent = RecordingBroadcaster()
        let quiet = try PollController(options: off, store: nil)
        let run3 = Task { try await quiet.run(central: silent) }
        silent.ads.yield(ballot(voter: 4, answer: .choice(2)))
        try await untilChanged(quiet, "the ballot counted without a beacon") { await quiet.results().voters == 1 }
        XCTAssertEqual(silent.events, [], "--no-beacon broadcasts nothing")
        run3.cancel()
        _ = try? await run3.value
    }

    /// The view names the frames the beacon goes out in: an instructor whose radio offers only legacy
    /// frames (bluetoothd before 5.69) learns why students of a large room see "counted" late.
    func testTheViewSaysWhichFramesTheBeaconGoesOutIn() async throws {
        // A join code given by hand commits to no key: extended frames go out unsigned, and the view says so.
        for (capabilities, frames) in [(BroadcastCapabilities.legacy, TallyViewModel.BeaconFrames.legacy), (.extended, .extendedUnsigned)] {
            let radio = RecordingBroadcaster(capabilities: capabilities)
            let clock = TestClock()
            let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil,
                                                clock: PollClock(clock))
            let run = Task { try await controller.run(central: radio) }
            // The frames are chosen before the first payload goes out.
            let out = await controller.pass(clock, .seconds(1)) { radio.payloads.count >= 1 }
            XCTAssertTrue(out, "the beacon went out")
            let said = await controller.viewModel().radio.beacon
            XCTAssertEqual(said, frames)
            let longest = radio.payloads.flatMap(\.frames).map(\.count).max() ?? 0
            XCTAssertLessThanOrEqual(longest, frames == .legacy ? BeaconFormat.legacyBudgetWithFlags : BeaconFormat.extendedBudgetWithFlags)
            run.cancel()
            _ = try? await run.value
        }
    }

    /// With nothing to say (no ballots, no phase change) the tally still seals STATE again at least
    /// every second (`PollController.stateRefresh`, docs/PROTOCOL.md §11.7): no STATE frame of its own
    /// stays on the air long enough to look, to a voter that hears it first, far behind the next one.
    func testAQuietTallySealsStateAgainEverySecond() async throws {
        let radio = RecordingBroadcaster()
        let clock = TestClock()
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil,
                                            clock: PollClock(clock))
        let run = Task { try await controller.run(central: radio) }
        // The poll's clock in 10 ms steps, each taken once the beacon has acted, so a slow machine changes nothing.
        // The broadcast stays fast (a payload every 250 ms) for 5 s after the question opens; then quiet.
        let slow = TallyBeacon.Tuning().composer.slowInterval
        await controller.pass(clock, .seconds(6))
        XCTAssertEqual(radio.payloads.last?.interval, slow, "the broadcast slowed")
        let quietFrom = radio.payloads.count - 1
        let waited: Duration = .seconds(10)
        await controller.pass(clock, waited)
        run.cancel()
        _ = try? await run.value
        let counters = radio.payloads[quietFrom...].compactMap { p -> UInt32? in
            BeaconCodec.state(in: p, key: key)?.counter
        }
        XCTAssertEqual(counters.count, radio.payloads.count - quietFrom, "every payload holds a STATE frame")
        let gaps = zip(counters.dropFirst(), counters).map { Int($0) - Int($1) }
        // 10 ms ticks: a new STATE once the last is 1 s old, at the next 250 ms refresh tick.
        XCTAssertLessThanOrEqual(gaps.max() ?? 0, 125, "STATE counters \(counters)")
        XCTAssertGreaterThanOrEqual(gaps.count, 8, "sealed again up to the end: \(counters)")
        XCTAssertGreaterThanOrEqual(Int(counters.last ?? 0) - Int(counters.first ?? 0),
                                    Int(waited / .milliseconds(10)) - 125, "sealed again up to the end: \(counters)")
    }

    /// At the end of a run the tally sends STATE "closed" for the closing time, then stops; the end
    /// waits no longer than that, and the votes were committed before.
    func testTheEndOfTheRunSendsClosedThenStops() async throws {
        let radio = RecordingBroadcaster()
        let clock = TestClock()
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil,
                                            clock: PollClock(clock))
        let run = Task { try await controller.run(central: radio) }
        // The first refresh tick, taken once the beacon waits for it; the payload is out when it settles.
        await controller.beaconSettled()
        clock.advance(by: .milliseconds(250))
        await controller.beaconSettled()
        XCTAssertGreaterThanOrEqual(radio.payloads.count, 1, "the first payload")
        radio.ads.yield(ballot(voter: 3, answer: .choice(1)))
        try await untilChanged(controller, "the ballot counted") { await controller.results().voters == 1 }
        run.cancel()
        _ = try? await run.value
        let start = clock.now
        let ending = Task { await controller.endBeacon(closing: .milliseconds(300)) }
        // The closing payload is out and the end waits for the poll's clock, not for the wall's.
        await clock.waitForSleeper(until: start.advanced(by: .milliseconds(300)))
        XCTAssertEqual(radio.events.last, "broadcast", "closed sent, not yet stopped")
        clock.advance(by: .milliseconds(299))
        XCTAssertEqual(radio.events.last, "broadcast", "299 ms in, it still says closed")
        // At 300 ms it stops, with the clock standing there (the radio's bound of 1.3 s never comes).
        clock.advance(by: .milliseconds(1))
        try await until(radio.broadcasts.subscribe(), "stopped at 300 ms") { radio.events.last == "stop" }
        await ending.value
        let events = radio.events
        XCTAssertEqual(events.last, "stop")
        guard let last = radio.payloads.last, let s = BeaconCodec.state(in: last, key: key) else {
            return XCTFail("no closing payload")
        }
        XCTAssertEqual(s.poll, .closed)
        XCTAssertEqual(last.frames.count, 1)
        XCTAssertEqual(events.suffix(2).first, "broadcast")
    }
}
