import ClickerSim
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import Logging
import Synchronization
@testable import TallyDaemon
import Voter
import XCTest

/// Attacks on the beacon's followers, performed from an attacker's radio on the simulated air against
/// the real pipeline: a `PollController` that broadcasts, counts and acknowledges, and the voters
/// `clicker-vote <join-code>` runs (`BeaconFollowService`), all on the air's virtual clock
/// (docs/SECURITY.md, issue 36 items 3 and 4).
final class BeaconAttackTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // test constant
    let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The air, a tally on its clock, an attacker's radio recording everything it hears.
    struct Room {
        let air: SimulatedAir
        let controller: PollController
        let run: Task<Void, any Error>
        let attacker: SimulatedPeripheral
        let heard: Locked<[AdvertisementReport]>
        let recorder: Task<Void, Never>
        /// The voters so far (``voter(_:shown:seed:answer:)``): each acts at every instant `drive` passes.
        let voters = Locked<[AirVoter]>([])
        var virtualNow: Duration { .nanoseconds(Int64(air.now.nanoseconds)) }

        func stop() async {
            run.cancel()
            _ = try? await run.value
            air.finishAdvertisementStreams()
            await recorder.value
        }
    }

    func room(seed: UInt64) async throws -> Room {
        let air = SimulatedAir(AirConfiguration(seed: seed, clock: .virtual))
        // The tally's wall clock is the air's: its STATE counter runs on the voters' clock.
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil,
                                            logger: quiet,
                                            clock: PollClock(air.clock, origin: Date(timeIntervalSince1970: 1_800_000_000)))
        let attacker = air.addAttacker(rssi: -50)
        let stream = attacker.listen(companyID: BallotFormat.companyID, dutyCycle: BeaconFollower.listening)
        let heard = Locked<[AdvertisementReport]>([])
        let recorder = Task { do { for try await r in stream { heard.withLock { $0.append(r) } } } catch {} }
        let run = await air.start(controller)
        return Room(air: air, controller: controller, run: run, attacker: attacker, heard: heard, recorder: recorder)
    }

    /// A voter running the code `clicker-vote` runs, on the air's clock, answering `answer(question)` the
    /// first time it is shown each question (as a student types it once); its status lines are collected.
    func voter(_ room: Room, shown: Locked<[String]>, seed: UInt64, answer: @escaping @Sendable (UInt8) -> String)
        -> Task<Void, any Error> {
        let air = room.air
        let student = AirVoter(air, rssi: -60)
        room.voters.withLock { $0.append(student) }
        let answered = Mutex<Set<UInt8>>([])
        let service = BeaconFollowService(
            secret: pollSecret(code), identity: DeviceKey.generate(), roster: false, transport: student.radio,
            state: nil, lines: student.lines,
            report: { s in
                shown.withLock { $0.append(s.line) }
                if case .status(.open(let q), _) = s, answered.withLock({ $0.insert(q.number).inserted }) { student.type(answer(q.number)) }
            },
            logger: quiet, clock: air.clock, start: StaggeredStart(seed: seed), turns: student.turns)
        return Task { try await service.run() }
    }

    /// Drives the air in 100 ms steps for at most `limit` (the tally's beacon and the voters keep the air's
    /// time and act at each of its instants before it moves on), calling `each` every step, until `done`.
    func drive(_ room: Room, for limit: Duration, each: (Duration) async throws -> Void = { _ in },
               until done: () async -> Bool) async rethrows -> Bool {
        let end = room.virtualNow + limit
        while room.virtualNow < end {
            if await done() { return true }
            try await each(room.virtualNow)
            await room.air.drive(room.controller, until: RadioInstant(nanoseconds: room.air.now.nanoseconds + 100_000_000),
                                 voters: room.voters.withLock { $0 })
        }
        return await done()
    }

    /// Attack #5 at its real parameters: twelve voters are counted on question 1; the instructor opens
    /// question 2 and the voters answer it as soon as it shows. The moment the attacker hears the tally's
    /// STATE of question 2 it sends one forged STATE frame "question 2 closed" (its counter half a second
    /// ahead of the tally's, sealed with the join-code key, for 100 ms at 20 ms). The tally's next STATE opens
    /// question 2 again. Every voter sends its answer again and is counted within 20 s, and the tally saw
    /// the forged frame. Before, each voter that heard the forgery before its acknowledgement showed the
    /// question unanswered and sent nothing.
    func testOneForgedCloseErasesNoAnswer() async throws {
        let n = 12
        let r = try await room(seed: 51)
        let shown = (0..<n).map { _ in Locked<[String]>([]) }
        let voters = (0..<n).map { i in voter(r, shown: shown[i], seed: UInt64(i + 1), answer: { _ in ["A", "B", "C"][i % 3] }) }
        // Answers are typed when question 1 shows: they go out as soon as the voters hear it.
        let counted = try await drive(r, for: .seconds(30)) { await r.controller.results().voters == n }
        XCTAssertTrue(counted, "the room's baseline: every voter counted without an attack")
        // A second question: the voters answer it, and the attacker forges as their ballots start.
        r.heard.withLock { $0.removeAll() }
        try await r.controller.nextQuestion()
        var forgedAt: Duration?
        let forger = BeaconForger(secret: pollSecret(code))
        let ok = try await drive(r, for: .seconds(20), each: { now in
            if let at = forgedAt {
                if now - at >= .milliseconds(100) { try await r.attacker.stopAdvertising() }
                return
            }
            let tallys = r.heard.withLock { $0.map(\.data) }
            guard let newest = forger.newestState(in: tallys), case .open(let q) = newest.poll, q.number == 2 else { return }
            var forged = newest
            // Half a second ahead of the tally's newest STATE (a follower takes up to 5 s of lead): the
            // forgery stays the newest frame on the air until the tally's own frames catch up with it.
            forged.counter += 50
            forged.poll = .questionClosed(q)
            forged.interval = .stop
            try await r.attacker.advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: try forger.seal(forged),
                                                              interval: .milliseconds(20), connectable: false))
            forgedAt = now
        }, until: {
            let res = await r.controller.results()
            return res.voters == n && res.question == 2
        })
        XCTAssertNotNil(forgedAt, "the attacker never heard question 2")
        let closedShown = shown.filter { $0.withLock { $0.contains("question-closed 2") } }.count
        XCTAssertGreaterThan(closedShown, 0, "the forged frame reached voters")
        let results = await r.controller.results()
        XCTAssertTrue(ok, "counted on question 2: \(results.voters) of \(n); \(closedShown) voters were shown the forged close")
        let forgeries = await r.controller.beaconForgeries
        XCTAssertGreaterThan(forgeries, 0, "the tally heard the forged frame")
        for v in voters { v.cancel() }
        for v in voters { _ = try? await v.value }
        await r.stop()
    }

    /// Attack #6 at its real parameters: an outsider records 30 s of the tally's frames on question 1;
    /// the instructor moves to question 2; the outsider replays the recorded STATE frames (each at its
    /// recorded offset, a frame every 20 ms, looping) for 60 s, and eight voters start from 0.5 s to 5.4 s
    /// into it. Each answers what it is shown. All are counted on question 2 within 15 s of the replay's
    /// start. Before,
    /// a voter whose first STATE was a replayed one followed question 1 until the replay looped and
    /// its replay guard's anchor went stale (about 40 s), and was counted on nothing meanwhile.
    func testAReplayOfRecordedFramesHoldsNoLateVoter() async throws {
        let n = 8
        let r = try await room(seed: 61)
        _ = try await drive(r, for: .seconds(30)) { false }
        let replay = FrameReplay(recording: r.heard.withLock { $0 })
        XCTAssertGreaterThan(replay.frames.count, 15, "a STATE every second or two")
        try await r.controller.nextQuestion()
        let started = r.virtualNow
        var current: [UInt8]?
        let shown = (0..<n).map { _ in Locked<[String]>([]) }
        var voters: [Task<Void, any Error>] = []
        var countedAt: Duration?
        let ok = try await drive(r, for: .seconds(60), each: { now in
            if let f = replay.frame(at: now - started), f != current {
                current = f
                try await r.attacker.advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: f,
                                                                  interval: .milliseconds(20), connectable: false))
            }
            // Eight voters start late, one every 700 ms from 0.5 s into the replay.
            let i = voters.count
            if i < n, now - started >= .milliseconds(500 + 700 * i) {
                voters.append(voter(r, shown: shown[i], seed: UInt64(100 + i), answer: { _ in "B" }))
            }
        }, until: {
            let res = await r.controller.results()
            if res.question == 2, res.voters == n, countedAt == nil { countedAt = r.virtualNow - started }
            return countedAt != nil
        })
        let res = await r.controller.results()
        let lines = shown.map { $0.withLock { $0 } }
        let heldOnOne = lines.filter { $0.contains("question 1 single 4") }.count
        XCTAssertTrue(ok, "counted on question 2: \(res.voters) of \(n) after 60 s; \(heldOnOne) were shown question 1")
        XCTAssertLessThanOrEqual(countedAt ?? .seconds(60), .seconds(15), "the last voter started at 5.4 s")
        print("replay attack: \(heldOnOne) of \(n) late voters took the replay first; all counted on question 2 "
              + "\(countedAt.map { "\($0)" } ?? "never") after the replay began")
        XCTAssertGreaterThan(heldOnOne, 0, "the replay reached the voters first (the attack was performed)")
        for v in voters { v.cancel() }
        for v in voters { _ = try? await v.value }
        await r.stop()
    }

    /// Issue 36 item 9: the alert of a forged STATE frame says what the forgery can do and which question
    /// students should see, and it is still shown ten minutes after the last forged frame (its effects can
    /// last the poll: an answer to a false question is kept for its number). It claims nothing about
    /// counted votes. Before, it said "counted votes are not affected" and went after 60 s.
    func testTheForgeryAlertSaysWhatItCanDoForTheRestOfThePoll() async throws {
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil, logger: quiet,
                                            clock: PollClock(TestClock(), origin: t0))
        let forger = BeaconForger(secret: pollSecret(code))
        let forged = try forger.seal(BeaconState(voteID: code.voteID, counter: 99, mode: .anonymous,
                                                 poll: .open(BeaconQuestion(number: 2, kind: .single, options: 4)),
                                                 interval: .stop))
        await controller.ingest(AdvertisementReport(address: DeviceAddress(rawValue: 0xB0_0000_0001), rssi: -50,
                                                    companyID: BallotFormat.companyID, data: forged,
                                                    timestamp: RadioInstant(nanoseconds: 1_000_000)))
        for (after, ago) in [(5.0, "5 s ago"), (600.0, "10 min ago")] {
            let alert = await controller.viewModel(now: t0.addingTimeInterval(after)).alert ?? "no alert"
            XCTAssertTrue(alert.hasPrefix("forged beacon: 1 STATE frame of this poll not sent by this tally"), alert)
            XCTAssertTrue(alert.contains("the last \(ago) during question 1"), alert)
            XCTAssertTrue(alert.contains("false question or a false close"), alert)
            XCTAssertTrue(alert.contains("answers to a false question are sent for its number"), alert)
            XCTAssertTrue(alert.hasSuffix("check that they see question 1"), alert)
            XCTAssertFalse(alert.contains("not affected"), alert)
        }
    }
}

/// A value behind a lock, shared by reference (a `Mutex` cannot be stored in a copyable value or an array).
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}
