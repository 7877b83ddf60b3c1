import ClickerSim
import ClickerTransport
import ClickerWire
import Foundation
import Glibc
import Synchronization
@testable import Voter
import XCTest

final class VoterTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func tempState() -> StateDirectory {
        StateDirectory(path: NSTemporaryDirectory() + "clicker-voter-\(UUID().uuidString)/clicker")
    }

    /// The advertised bytes of the peripheral, as a scanner on the virtual air hears them. The scanner
    /// listens before the air moves (its stream keeps every report until it is read), so what it hears
    /// does not depend on when a task of the pool gets a thread.
    func heard(_ air: SimulatedAir, for seconds: Int64 = 2) async throws -> [AdvertisementReport] {
        let reports = air.central().advertisements(companyID: BallotFormat.companyID)
        await air.advance(until: air.now + .seconds(seconds))
        air.finishAdvertisementStreams()
        var out: [AdvertisementReport] = []
        for try await r in reports { out.append(r) }
        return out
    }

    func testCastAdvertisesASealedBallotAndServesTheFullOneOverGATT() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 3, clock: .virtual))
        let radio = air.addPeripheral()
        let session = VoterSession(secret: pollSecret(code), question: 2, identity: DeviceKey.generate(), transport: radio,
                                   state: nil)
        let ballot = try await session.cast(.choice(1))
        let reports = try await heard(air)
        XCTAssertFalse(reports.isEmpty)
        let keyring = PollKeyring(secret: pollSecret(code))
        for r in reports {
            XCTAssertLessThanOrEqual(r.data.count, 24, "fits legacy advertising with Flags")
            XCTAssertEqual(try BallotCodec.openAdvertisement(r.data, keyring: keyring).get(), ballot)
        }
        // The answer is not in the clear: the answer bytes differ between two voters choosing B.
        let other = VoterSession(secret: pollSecret(code), question: 2, identity: DeviceKey.generate(),
                                 transport: air.addPeripheral(), state: nil)
        let b2 = try await other.cast(.choice(1))
        XCTAssertNotEqual(BallotCodec.sealAdvertisement(ballot, key: .anonymous(pollSecret(code))),
                          BallotCodec.sealAdvertisement(b2, key: .anonymous(pollSecret(code))))
        let value = try await readBallot(air, radio.address)
        XCTAssertEqual(value.count, BallotFormat.gattLength)
        let signed = try BallotCodec.openGATT(value, keyring: keyring).get()
        XCTAssertEqual(signed.ballot, ballot)
        let publicKey = await session.publicKey
        XCTAssertEqual(signed.publicKey, publicKey)
    }

    /// The ballot `address` serves over GATT, read by a central on the virtual air within 3 s of its time.
    /// The air stands still until the read is with it or over, so the read starts at the same instant
    /// however late its task gets a thread.
    func readBallot(_ air: SimulatedAir, _ address: DeviceAddress) async throws -> [UInt8] {
        let central = air.central()
        let over = Mutex(false)
        let read = Task {
            defer { over.withLock { $0 = true } }
            return try await central.readCharacteristic(device: address, service: BallotFormat.serviceUUID,
                                                        characteristic: BallotFormat.ballotCharacteristicUUID,
                                                        timeout: .seconds(5))
        }
        await air.advance(until: air.now + .seconds(3)) {
            while air.pendingReads == 0, !over.withLock({ $0 }) { await Task.yield() }
        }
        return try await read.value
    }

    /// A restarted voter (new session, same state directory) still outranks its earlier ballot.
    func testSequenceSurvivesARestartAndAlwaysIncreases() async throws {
        let state = tempState()
        let key = try DeviceIdentity.loadOrCreate(in: state)
        let air = SimulatedAir(AirConfiguration(seed: 4, clock: .virtual))
        let first = VoterSession(secret: pollSecret(code), question: 1, identity: key, transport: air.addPeripheral(), state: state)
        let b1 = try await first.cast(.choice(0))
        let b2 = try await first.cast(.choice(2))
        XCTAssertEqual([b1.sequence, b2.sequence], [1, 2])
        let again = try DeviceIdentity.loadOrCreate(in: state)
        XCTAssertEqual(again, key, "the device key is stable")
        let second = VoterSession(secret: pollSecret(code), question: 1, identity: again, transport: air.addPeripheral(), state: state)
        let b3 = try await second.cast(.choice(1))
        XCTAssertEqual(b3.sequence, 3)
        XCTAssertEqual(b3.voterID, b1.voterID, "same voter ID for the same poll")
        // The same answer again re-sends the same ballot: no new number.
        let b3again = try await second.cast(.choice(1))
        XCTAssertEqual(b3again, b3)
        // The sequence runs per poll: the next question continues it.
        let q2 = VoterSession(secret: pollSecret(code), question: 2, identity: again, transport: air.addPeripheral(), state: state)
        let q2b = try await q2.cast(.choice(1))
        XCTAssertEqual(q2b.sequence, 4)
        // Anonymous mode: another poll gives an unlinkable voter ID.
        let other = try JoinCode(parsing: "1234-ABCDE-FGHJK")
        XCTAssertNotEqual(again.anonymousVoterID(in: pollSecret(other)), b1.voterID)
    }

    /// The device-key file is exactly one line with one newline (PROTOCOL.md §5).
    func testDeviceKeyFileIsOneLine() throws {
        let state = tempState()
        let key = try DeviceIdentity.loadOrCreate(in: state)
        let text = String(decoding: try XCTUnwrap(state.read("device-key")), as: UTF8.self)
        XCTAssertEqual(text, key.encoded)
        XCTAssertEqual(text.filter { $0 == "\n" }.count, 1)
        XCTAssertTrue(text.hasSuffix("\n"))
        XCTAssertEqual(try DeviceIdentity.loadOrCreate(in: state), key)
    }

    func testStateFilesAreOwnerOnly() throws {
        let state = tempState()
        _ = try DeviceIdentity.loadOrCreate(in: state)
        // A claimed sequence writes the sequence file, under its lock file (the key has one too).
        XCTAssertEqual(try SequenceStore(state: state).claim(poll: "a-4821-1", question: 1, answer: [1, 0, 0]), 1)
        var st = stat()
        let files = ["device-key", "device-key.lock", SequenceStore.file, SequenceStore.lock]
        for name in files {
            XCTAssertEqual(stat(state.path + "/" + name, &st), 0, name)
            XCTAssertEqual(st.st_mode & 0o777, 0o600, name)
        }
        XCTAssertEqual(stat(state.path, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o700)
        // Nothing else in the directory (a leftover temporary file would escape the checks above).
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: state.path).sorted(), files.sorted())
    }

    func testDamagedKeyFileIsAClearErrorNotACrash() throws {
        let state = tempState()
        try state.write("device-key", Array("not a key\n".utf8))
        XCTAssertThrowsError(try DeviceIdentity.loadOrCreate(in: state)) { error in
            XCTAssertEqual(error as? VoterStateError, .corrupt(state.path + "/device-key"))
            XCTAssertTrue("\(error)".contains("delete it"))
        }
    }

    func testClassroomIsReproducibleAndRealistic() {
        var a = SplitMix64(seed: 5), b = SplitMix64(seed: 5)
        let r1 = Classroom(count: 300, using: &a), r2 = Classroom(count: 300, using: &b)
        XCTAssertEqual(r1.students.map(\.thinkTime), r2.students.map(\.thinkTime))
        XCTAssertGreaterThan(r1.students.count, 270, "a few abstain, most vote")
        let changers = r1.students.filter { $0.change != nil }.count
        XCTAssertTrue((20...80).contains(changers), "about 15 % change their mind, got \(changers)")
        for s in r1.students {
            XCTAssertTrue(s.thinkTime >= .seconds(2) && s.thinkTime <= .seconds(25))
            if let c = s.change { XCTAssertNotEqual(c.to, s.answer) }
        }
    }

    func testChurnSpreadsTheRequestedRate() {
        XCTAssertNil(Classroom.Churn(votesPerSecond: 0, students: 10))
        XCTAssertNil(Classroom.Churn(votesPerSecond: 10, students: 0))
        XCTAssertNil(Classroom.Churn(votesPerSecond: .nan, students: 10))
        let c = try! XCTUnwrap(Classroom.Churn(votesPerSecond: 100, students: 300))
        XCTAssertEqual(c.period, .seconds(3), "300 students at 100 votes/s: each changes every 3 s")
        let phases = (0..<300).map { c.phase(of: $0) }
        XCTAssertTrue(phases.allSatisfy { $0 >= .zero && $0 < c.period })
        XCTAssertEqual(Set(phases).count, 300, "phases spread, not bunched")
        // In any one-second window a third of the students change: 100 votes.
        XCTAssertTrue((99...101).contains(phases.filter { $0 < .seconds(1) }.count))
    }

    /// A churning student moves between its own final answer and another of the question's kind:
    /// for every kind, both are answers the question offers, and they differ, so a churning room of
    /// a numeric or ranked question is counted instead of rejected as `answerNotOffered`.
    func testChurnAnswersAreOfTheQuestionsKind() {
        var rng = SplitMix64(seed: 5)
        let room = Classroom(count: 200, abstainRate: 0, using: &rng)
        let cases: [(Answer.Kind, Int, ClosedRange<Int16>)] = [
            (.choice, 4, 0...100), (.trueFalse, 2, 0...100), (.multiSelect, 5, 0...100),
            (.ranking, 6, 0...100), (.numeric, 1, -50...50), (.choice, 2, 0...100),
        ]
        for (kind, options, range) in cases {
            let asked = room.answering(kind, options: options, range: range, using: &rng)
            var differ = 0
            for s in asked.students {
                for a in [s.answer, s.final, s.alternate] {
                    XCTAssertTrue(a.isOffered(kinds: [kind], options: options, range: range), "\(kind): \(a) not offered")
                }
                if s.alternate != s.final { differ += 1 }
            }
            // A numeric alternate is drawn at random and may, rarely, land on the same number.
            XCTAssertGreaterThanOrEqual(differ, kind == .numeric ? 195 : 200, "\(kind): alternates differ from final answers")
        }
    }

    /// The room asked a question answers in the kind it accepts (single choice first when it accepts
    /// several), in its range (0…100 when it declares none), and stays as it is for a question that
    /// accepts no kind the room knows.
    func testTheRoomAnswersTheKindTheQuestionAccepts() {
        var rng = SplitMix64(seed: 9)
        let room = Classroom(count: 100, abstainRate: 0, using: &rng)
        let cases: [(Set<Answer.Kind>, Int, ClosedRange<Int16>?, Answer.Kind, ClosedRange<Int16>)] = [
            ([.numeric], 1, 5...7, .numeric, 5...7), ([.numeric], 1, nil, .numeric, 0...100),
            ([.ranking, .multiSelect], 5, nil, .multiSelect, 0...100), ([.trueFalse], 2, nil, .trueFalse, 0...100),
            ([.choice, .ranking], 3, nil, .choice, 0...100),
        ]
        for (kinds, options, range, kind, expected) in cases {
            let asked = room.answering(kinds: kinds, options: options, range: range, using: &rng)
            for s in asked.students {
                XCTAssertTrue(s.final.isOffered(kinds: [kind], options: options, range: expected), "\(kinds): \(s.final)")
            }
        }
        let unchanged = room.answering(kinds: [], options: 4, range: nil, using: &rng)
        XCTAssertEqual(unchanged.students.map(\.final), room.students.map(\.final))
    }

    /// The churning room on an injected clock: the test moves time from one wake-up to the next,
    /// each time after every student is asleep again, so the number of casts is exact.
    func testChurningRoomKeepsCasting() async throws {
        var rng = SplitMix64(seed: 9)
        let room = Classroom(count: 4, abstainRate: 0, using: &rng)
        let counter = AdvertCounter()
        let secret = pollSecret(self.code)
        let clock = TestClock()
        let task = Task {
            await room.run(secret: secret, question: 1, churn: 20, clock: clock) { _ in CountingPeripheral(counter: counter) }
        }
        // Casts fall on whole milliseconds; an end between two keeps rounding out of the count.
        let horizon = Duration.microseconds(40_000_500)
        let end = TestClock.Instant(offset: horizon)
        while true {
            await clock.waitForSleepers(room.students.count)
            guard let next = clock.nextDeadline, next <= end else { break }
            clock.advance(to: next)
        }
        task.cancel()
        await task.value
        // Every cast a student makes up to the horizon: the first answer, a change, then one every period.
        let churn = try XCTUnwrap(Classroom.Churn(votesPerSecond: 20, students: room.students.count))
        var expected = 0
        for (i, s) in room.students.enumerated() {
            var t = s.thinkTime
            expected += 1
            if let c = s.change {
                t += c.after
                expected += 1
            }
            t += churn.phase(of: i)
            while t <= horizon {
                expected += 1
                t += churn.period
            }
        }
        XCTAssertGreaterThan(expected - room.students.count, 4 * 20, "the room churns (period \(churn.period))")
        XCTAssertEqual(counter.count, expected)
    }
}

final class AdvertCounter: @unchecked Sendable {
    // Safe: every access holds `lock`.
    private let lock = NSLock()
    private var n = 0
    func add() { lock.lock(); n += 1; lock.unlock() }
    var count: Int { lock.lock(); defer { lock.unlock() }; return n }
}

struct CountingPeripheral: PeripheralTransport {
    let counter: AdvertCounter
    func advertise(_ payload: AdvertisingPayload) async throws { counter.add() }
    func stopAdvertising() async throws {}
    func publish(service: UUID128, characteristic: UUID128, value: [UInt8]) async throws {}
    func shutdown() async {}
    func status() -> AsyncStream<RadioStatus> { AsyncStream { $0.finish() } }
}
