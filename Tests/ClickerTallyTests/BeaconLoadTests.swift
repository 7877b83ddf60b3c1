import ClickerSim
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import XCTest

/// The tally's estimate of the voters at the STATE interval, and its acknowledgement bookkeeping
/// (``BeaconLoadEstimator``, ``TallyBeacon``; docs/DESIGN.md, "The STATE interval this tally
/// announces").
final class BeaconLoadTests: XCTestCase {
    let poll = TestPoll()
    var key: BeaconKey { BeaconKey(poll.secret) }
    let q = BeaconQuestionInfo(number: 1, kind: .single, options: 4)

    /// On the simulated air, N voters at one interval: the rate at which each is heard again gives N,
    /// on both sides of the optimum (a quiet channel and a choked one), within 20 %.
    func testTheRepeatRateGivesTheNumberOfVotersOnTheAir() async throws {
        for (n, ms) in [(60, 100), (300, 100), (600, 100), (300, 400)] {
            let room = try await AirRoom(voters: n, intervalMs: ms, seed: 3), air = room.air
            air.run(until: RadioInstant(nanoseconds: 1_000_000_000))  // everyone has started
            let before = air.statistics.pdusReceived
            air.run(until: RadioInstant(nanoseconds: 5_000_000_000))
            let reports = air.statistics.pdusReceived - before
            air.finishAdvertisementStreams()
            withExtendedLifetime(room.scanning) {}
            var e = BeaconLoadEstimator()
            e.observe(repeats: reports, events: Double(4 * n) / (Double(ms + 5) / 1000), at: 5_000_000_000)
            let estimate = e.voters(interval: .milliseconds(ms), acknowledged: 0, broadcast: nil)
            XCTAssertNotNil(estimate)
            XCTAssertEqual(Double(estimate ?? 0), Double(n), accuracy: 0.2 * Double(n), "\(n) voters at \(ms) ms, \(reports) reports")
        }
    }

    func testThinEvidenceGivesNoEstimateAndOldEvidenceFades() {
        var e = BeaconLoadEstimator()
        e.observe(repeats: 0, events: 9, at: 0)
        XCTAssertNil(e.voters(interval: .milliseconds(100), acknowledged: 0, broadcast: nil),
                     "9 events: under 10 repeats expected on a quiet channel")
        e.observe(repeats: 40, events: 100, at: 0)
        XCTAssertNotNil(e.voters(interval: .milliseconds(100), acknowledged: 0, broadcast: nil))
        e.observe(repeats: 0, events: 0, at: 10_000_000_000)  // ten half-lives later
        XCTAssertNil(e.voters(interval: .milliseconds(100), acknowledged: 0, broadcast: nil))
    }

    func fingerprints(_ p: BroadcastPayload) -> Set<AckFingerprint> {
        Set(p.frames.flatMap { f -> [AckFingerprint] in
            if case .success(.acks(let a)) = BeaconCodec.open(f, key: key) { a.fingerprints } else { [] }
        })
    }

    func interval(_ p: BroadcastPayload) -> Int? {
        BeaconCodec.state(in: p, key: key)?.interval.milliseconds
    }

    func testAVoterLoudLongAfterItsAcknowledgementIsAcknowledgedAgainButNotAtTheKeepAlive() {
        var t = TallyBeacon(key: key, mode: .anonymous, capabilities: .legacy)
        let loud = VoterKey(mode: .anonymous, voterID: 1), quiet = VoterKey(mode: .anonymous, voterID: 2)
        let ms: UInt64 = 1_000_000
        t.counted(loud, question: 1, sequence: 4, at: 10 * ms)
        t.counted(quiet, question: 1, sequence: 9, at: 10 * ms)
        var p = t.payload(.open(q), tick: 2, at: 20 * ms)
        XCTAssertEqual(fingerprints(p), [key.fingerprint(voterID: 1, question: 1, sequence: 4),
                                         key.fingerprint(voterID: 2, question: 1, sequence: 9)])
        p = t.payload(.open(q), tick: 500, at: 5000 * ms)  // the rotation has moved on
        XCTAssertTrue(fingerprints(p).isEmpty)
        // The loud one is heard twice within a second, 2 s after; the quiet one at its keep-alive, 10.24 s
        // after it was last heard loud.
        t.counted(loud, question: 1, sequence: 4, at: 2000 * ms)
        t.counted(loud, question: 1, sequence: 4, at: 2100 * ms)
        XCTAssertTrue(t.hasPending)
        p = t.payload(.open(q), tick: 510, at: 5100 * ms)
        XCTAssertEqual(fingerprints(p), [key.fingerprint(voterID: 1, question: 1, sequence: 4)])
        t.counted(quiet, question: 1, sequence: 9, at: 10_250 * ms)
        XCTAssertFalse(t.hasPending)
        // A new ballot (new sequence) is acknowledged at once.
        t.counted(quiet, question: 1, sequence: 10, at: 10_300 * ms)
        p = t.payload(.open(q), tick: 1030, at: 10_300 * ms)
        XCTAssertTrue(fingerprints(p).contains(key.fingerprint(voterID: 2, question: 1, sequence: 10)))
    }

    /// Where bluetoothd ignores the requested interval (no experimental features), a voter advertises at
    /// the kernel's 1.28 s whatever it asks: one that missed its acknowledgement must be acknowledged
    /// again (hearings 1.28 s apart used to be too far apart to count as loud, so it never was), and
    /// one that heard it, which the tally cannot tell apart, costs an acknowledgement at 1.5, 3, 6, 12,
    /// 24 s and then every 30 s, not every 1.5 s. A voter at the keep-alive (10.24 s) never.
    func testAVoterHeardEvery1280msIsAcknowledgedAgainBackingOff() {
        var t = TallyBeacon(key: key, mode: .anonymous, capabilities: .legacy)
        let v = VoterKey(mode: .anonymous, voterID: 7), kept = VoterKey(mode: .anonymous, voterID: 8)
        let ms: UInt64 = 1_000_000
        t.counted(v, question: 1, sequence: 3, at: 0)
        t.counted(kept, question: 1, sequence: 5, at: 0)
        _ = t.payload(.open(q), tick: 1, at: 10 * ms)
        var again: [Double] = [], keptAgain = 0
        var heard: UInt64 = 0
        while heard < 120_000 * ms {
            heard += 1280 * ms
            t.counted(v, question: 1, sequence: 3, at: heard)
            if heard % (10_240 * ms) < 1280 * ms {
                t.counted(kept, question: 1, sequence: 5, at: heard)
            }
            if t.hasPending {
                let p = t.payload(.open(q), tick: UInt32(heard / (10 * ms)), at: heard)
                if fingerprints(p).contains(key.fingerprint(voterID: 7, question: 1, sequence: 3)) { again.append(Double(heard) / 1e9) }
                if fingerprints(p).contains(key.fingerprint(voterID: 8, question: 1, sequence: 5)) { keptAgain += 1 }
            }
        }
        XCTAssertEqual(keptAgain, 0, "the voter at the keep-alive was acknowledged again")
        XCTAssertFalse(again.isEmpty, "never acknowledged again")
        XCTAssertLessThanOrEqual(again.first ?? 99, 2.6, "first again at \(again)")
        // The spacings double: 1.5, 3, 6, 12, 24, then 30 s (each to the next hearing, 1.28 s apart).
        let spacings = zip(again.dropFirst(), again).map { $0 - $1 }
        for (n, d) in spacings.enumerated() {
            let expected = min(30, 1.5 * Double(1 << (n + 1)))
            XCTAssertEqual(d, expected, accuracy: 1.3, "spacing \(n + 1) of \(again)")
        }
        XCTAssertGreaterThanOrEqual(again.count, 6, "\(again)")
        XCTAssertLessThanOrEqual(again.count, 8, "\(again)")
    }

    /// An acknowledgement sent again waits behind those sent for the first time.
    func testAnAcknowledgementSentAgainGoesAfterNewOnes() throws {
        var c = BeaconComposer(key: key, mode: .anonymous, capabilities: .legacy)
        let fresh = (1...3).map { key.fingerprint(voterID: $0, question: 1, sequence: 1) }
        let old = (4...6).map { key.fingerprint(voterID: $0, question: 1, sequence: 1) }
        c.acknowledge(fresh, again: old, question: 1, at: 100)
        let p = c.compose(.open(q), interval: BeaconInterval(milliseconds: 100) ?? .stop, at: 100)
        let pages = p.frames.compactMap { f -> [AckFingerprint]? in
            if case .success(.acks(let a)) = BeaconCodec.open(f, key: key) { a.fingerprints } else { nil }
        }
        XCTAssertEqual(pages.first.map(Set.init), Set(fresh), "\(pages)")
        XCTAssertEqual(pages.dropFirst().first.map(Set.init), Set(old), "\(pages)")
    }

    /// Every question opens assuming at least 1,000 voters, or the largest room so far when larger: a
    /// small question must not choke the next one's latecomers.
    func testEveryQuestionAssumesALargeRoomEvenAfterASmallOne() async throws {
        var t = TallyBeacon(key: key, mode: .anonymous, capabilities: .legacy)
        let broadcast = BeaconAirModel.Broadcast(interval: t.tuning.composer.fastInterval)
        let first = interval(t.payload(.open(q), tick: 1, at: 0)) ?? 0
        let expected = BeaconAirModel.stateInterval(unacknowledged: t.tuning.expectedVoters, acknowledged: 0,
                                                    broadcast: broadcast).milliseconds
        XCTAssertEqual(first, expected)
        XCTAssertGreaterThan(first, 600, "1,000 voters need about 0.7 s")
        /// Counts `n` voters on `open`, then opens `next`: the interval the next question starts at.
        var tick: UInt32 = 1
        func start(_ next: BeaconQuestionInfo, after n: Int, on open: BeaconQuestionInfo) -> Int {
            for v in 0..<n {
                t.counted(VoterKey(mode: .anonymous, voterID: UInt32(v)), question: open.number, sequence: 1,
                          at: UInt64(tick) * 1_000_000)
            }
            tick += 1
            _ = t.payload(.open(open), tick: tick, at: UInt64(tick) * 1_000_000)
            tick += 1
            return interval(t.payload(.open(next), tick: tick, at: UInt64(tick) * 1_000_000)) ?? 0
        }
        let second = BeaconQuestionInfo(number: 2, kind: .truefalse, options: 0)
        let afterSmall = start(second, after: 30, on: q)
        XCTAssertEqual(t.room, 30)
        XCTAssertEqual(afterSmall, first, "a question of 30 does not lower the next one's start")

        // What that start is worth: 300 latecomers at it are heard within 3 s on the simulated air. At
        // the interval for the room of 30 (20 ms, the rule before) the channel chokes and hears almost nobody.
        let forThirty = BeaconAirModel.stateInterval(unacknowledged: 30, acknowledged: 0, broadcast: broadcast).milliseconds ?? 0
        XCTAssertEqual(forThirty, 20)
        let heardAtStart = try await heardFraction(voters: 300, intervalMs: afterSmall, within: 3)
        let heardAtThirty = try await heardFraction(voters: 300, intervalMs: forThirty, within: 3)
        XCTAssertGreaterThan(heardAtStart, 0.95, "300 voters at \(afterSmall) ms")
        XCTAssertLessThan(heardAtThirty, 0.2, "300 voters at \(forThirty) ms")

        // A larger room than assumed is the next question's start.
        let afterLarge = start(BeaconQuestionInfo(number: 3, kind: .single, options: 2), after: 1500, on: second)
        XCTAssertEqual(t.room, 1500)
        XCTAssertEqual(afterLarge, BeaconAirModel.stateInterval(unacknowledged: 1500, acknowledged: 0, broadcast: broadcast).milliseconds)
        XCTAssertGreaterThan(afterLarge, first)
    }

    /// A roster poll's room is its roster when that is below 1,000 (its students are all it can count):
    /// 300 students open at the interval for 300, not for 1,000, and the estimate reads no more than 300
    /// voters (it reads too many while acknowledgements settle: docs/SIMULATION.md).
    func testARosterPollsRoomIsItsRoster() {
        var anonymous = TallyBeacon(key: key, mode: .anonymous, capabilities: .legacy)
        var roster = TallyBeacon(key: key, mode: .roster, capabilities: .legacy, roomLimit: 300)
        var large = TallyBeacon(key: key, mode: .roster, capabilities: .legacy, roomLimit: 5000)
        let broadcast = BeaconAirModel.Broadcast(interval: roster.tuning.composer.fastInterval)
        func forRoom(_ n: Int) -> Int? { BeaconAirModel.stateInterval(unacknowledged: n, acknowledged: 0, broadcast: broadcast).milliseconds }
        let opening = interval(roster.payload(.open(q), tick: 1, at: 0)) ?? 0
        let anonymousOpening = interval(anonymous.payload(.open(q), tick: 1, at: 0)) ?? 0
        XCTAssertEqual(opening, forRoom(300))
        XCTAssertEqual(anonymousOpening, forRoom(1000))
        XCTAssertLessThan(opening, anonymousOpening)
        XCTAssertEqual(interval(large.payload(.open(q), tick: 1, at: 0)), anonymousOpening, "a roster above 1,000 changes nothing")

        // 100 voters counted at once, then none of them heard again over the next 1.5 s (their
        // acknowledgements still settling): the channel reads as choked, far beyond 300 voters. The
        // anonymous poll believes it up to its room; the roster poll up to its roster.
        let ms: UInt64 = 1_000_000
        var lastRoster = opening, lastAnonymous = anonymousOpening
        for v in 0..<100 {
            roster.counted(VoterKey(mode: .roster, voterID: UInt32(v)), question: 1, sequence: 1, at: 10 * ms)
            anonymous.counted(VoterKey(mode: .anonymous, voterID: UInt32(v)), question: 1, sequence: 1, at: 10 * ms)
        }
        for step in 1...15 {
            let tick = UInt32(1 + step * 10), at = UInt64(10 + step * 100) * ms
            lastRoster = interval(roster.payload(.open(q), tick: tick, at: at)) ?? 0
            lastAnonymous = interval(anonymous.payload(.open(q), tick: tick, at: at)) ?? 0
        }
        XCTAssertGreaterThan(roster.estimator.events, 10)
        XCTAssertGreaterThan(lastAnonymous, forRoom(300) ?? 0, "the evidence reads more than 300 voters")
        XCTAssertLessThanOrEqual(lastRoster, forRoom(300) ?? 0, "the roster caps the estimate")

        // Never less than the voters counted: 100 counted in a poll whose roster says 50, before any
        // evidence, are taken to be 100.
        var small = TallyBeacon(key: key, mode: .roster, capabilities: .legacy, roomLimit: 50)
        XCTAssertEqual(interval(small.payload(.open(q), tick: 1, at: 0)), forRoom(50))
        for v in 0..<100 { small.counted(VoterKey(mode: .roster, voterID: UInt32(v)), question: 1, sequence: 1, at: 10 * ms) }
        XCTAssertEqual(interval(small.payload(.open(q), tick: 2, at: 20 * ms)), forRoom(100))
    }

    /// Devices the tally hears but cannot count (not on the roster) are never acknowledged and stay loud:
    /// they are in the room, as voters not yet counted, while heard within the last 3 s; never beyond the
    /// room a poll without a roster assumes (voter IDs cost a forger nothing); only the open question's.
    func testDevicesNotOnTheRosterAreInTheRoomUpToWhatAPollWithoutOneAssumes() {
        let ms: UInt64 = 1_000_000
        for capabilities in [BroadcastCapabilities.legacy, .extended] {
            // The room, not the damping: a reversal goes out at once here.
            var tuning = TallyBeacon.Tuning()
            tuning.damping.reversalHold = .zero
            tuning.damping.hold = .zero
            var t = TallyBeacon(key: key, mode: .roster, capabilities: capabilities, roomLimit: 150, tuning: tuning)
            let broadcast = BeaconAirModel.Broadcast(interval: t.tuning.composer.fastInterval)
            func forRoom(_ n: Int) -> Int? { BeaconAirModel.stateInterval(unacknowledged: n, acknowledged: 0, broadcast: broadcast).milliseconds }
            XCTAssertEqual(interval(t.payload(.open(q), tick: 1, at: 0)), forRoom(150))
            for id in 0..<150 { t.heardUncountable(voterID: UInt32(10_000 + id), question: 1, at: 100 * ms) }
            XCTAssertEqual(interval(t.payload(.open(q), tick: 20, at: 200 * ms)), forRoom(300), "\(capabilities)")
            if capabilities.extended {
                // The arrivals' model takes them as loud, like counted voters not yet quiet.
                XCTAssertEqual(t.likelihood.windows.last?.loudCounted, 150)
                XCTAssertEqual(t.likelihood.windows.last?.counted, 0)
            }
            // Another question's ballots are not this question's load.
            for id in 0..<2000 { t.heardUncountable(voterID: UInt32(50_000 + id), question: 2, at: 300 * ms) }
            XCTAssertEqual(interval(t.payload(.open(q), tick: 40, at: 400 * ms)), forRoom(300))
            // Thousands of made-up voter IDs: the room of a poll without a roster, no more.
            for id in 0..<5000 { t.heardUncountable(voterID: UInt32(100_000 + id), question: 1, at: 500 * ms) }
            XCTAssertEqual(interval(t.payload(.open(q), tick: 60, at: 600 * ms)), forRoom(TallyBeacon.Tuning().expectedVoters))
            // Not heard for 3 s: gone, and forgotten: the table they filled takes new devices again.
            XCTAssertEqual(interval(t.payload(.open(q), tick: 400, at: 4000 * ms)), forRoom(150))
            for id in 0..<150 { t.heardUncountable(voterID: UInt32(20_000 + id), question: 1, at: 4100 * ms) }
            XCTAssertEqual(interval(t.payload(.open(q), tick: 420, at: 4200 * ms)), forRoom(300))
        }
    }

    /// The share of `voters` distinct advertisers, all at `intervalMs`, that one scanner hears within
    /// `within` seconds on the simulated air.
    func heardFraction(voters n: Int, intervalMs: Int, within seconds: UInt64) async throws -> Double {
        let room = try await AirRoom(voters: n, intervalMs: intervalMs, seed: 5)
        room.air.run(until: RadioInstant(nanoseconds: seconds * 1_000_000_000))
        room.air.finishAdvertisementStreams()
        var heard = Set<[UInt8]>()
        for try await r in room.scanning { heard.insert(Array(r.data.prefix(2))) }
        return Double(heard.count) / Double(n)
    }

    /// Every counted ballot is acknowledged, past version 3's 4,096 too (made-up voters must not use them
    /// up: `FairAcknowledgementTests`), up to the bound of PROTOCOL §11.4 (2^18, four for each voter a
    /// question holds), never past it; the count starts again with the next question.
    func testEveryCountedBallotIsAcknowledgedUpToTheBoundAndCountedPerQuestion() {
        XCTAssertEqual(TallyBeacon.Tuning().acknowledgementLimit, AckFingerprint.maxHeardPerQuestion)
        XCTAssertGreaterThan(AckFingerprint.maxHeardPerQuestion, 4096)
        // The rule at a bound a debug build composes quickly; the default is the one asserted above.
        var tuning = TallyBeacon.Tuning()
        tuning.acknowledgementLimit = 5_000
        let bound = tuning.acknowledgementLimit
        var t = TallyBeacon(key: key, mode: .anonymous, capabilities: .legacy, tuning: tuning)
        let open = BeaconPhase.open(BeaconQuestionInfo(number: 1, kind: .single, options: 2))
        for v in 0..<(bound + 50) {
            t.counted(VoterKey(mode: .anonymous, voterID: UInt32(v)), question: 1, sequence: 1, at: 1)
        }
        _ = t.payload(open, tick: 1, at: 1)
        XCTAssertEqual(t.acknowledged, bound, "no fingerprint past the bound")
        // A voter beyond the bound changing its answer gets no new fingerprint either.
        t.counted(VoterKey(mode: .anonymous, voterID: UInt32(bound + 10)), question: 1, sequence: 2, at: 2)
        _ = t.payload(open, tick: 2, at: 2)
        XCTAssertEqual(t.acknowledged, bound)
        _ = t.payload(.open(BeaconQuestionInfo(number: 2, kind: .single, options: 2)), tick: 3, at: 3)
        XCTAssertEqual(t.acknowledged, 0, "counted again from the next question")
    }
}
