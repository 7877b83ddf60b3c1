import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
@testable import TallyDaemon
import Voter
import XCTest

/// The tally's beacon in a roster poll: what it acknowledges, and the STATE interval it announces for
/// its roster and for the devices it hears that are not on it.
final class BeaconRosterDaemonTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // test constant
    var key: BeaconKey { BeaconKey(pollSecret(code)) }

    /// A roster poll acknowledges its students' ballots, never those of a device that is not on the
    /// roster: that one is rejected (`unknownVoter`) and its fingerprint is in no ACKS frame however often
    /// it is heard, so it keeps advertising (docs/SECURITY.md, "Slow a roster poll").
    func testARosterPollNeverAcknowledgesADeviceNotOnTheRoster() async throws {
        let student = DeviceKey.generate(), stranger = DeviceKey.generate()
        let roster = try Roster(entries: [RosterEntry(name: "Ada", studentID: "s1", enrollment: student.enrollmentCode)])
        let radio = RecordingBroadcaster()
        let clock = TestClock()
        let controller = try PollController(options: PollOptions(joinCode: code, roster: roster, confirmByGATT: false), store: nil,
                                            clock: PollClock(clock))
        let run = Task { try await controller.run(central: radio) }
        defer { run.cancel() }
        let out = await controller.pass(clock, .seconds(1)) { !radio.payloads.isEmpty }
        XCTAssertTrue(out, "a payload")
        let secret = pollSecret(code)
        func report(_ device: DeviceKey, address: UInt64, ms: UInt64) -> AdvertisementReport {
            AdvertisementReport(address: DeviceAddress(rawValue: address), rssi: -50, companyID: BallotFormat.companyID,
                                data: BallotSealer(secret: secret, deviceKey: device, mode: .roster)
                                    .advertisement(question: 1, sequence: 1, answer: .choice(1)),
                                timestamp: RadioInstant(nanoseconds: ms * 1_000_000))
        }
        let key = self.key
        @Sendable func acknowledged() -> Set<AckFingerprint> {
            Set(radio.payloads.flatMap(\.frames).flatMap { f -> [AckFingerprint] in
                if case .success(.acks(let a)) = BeaconCodec.open(f, key: key), a.question == 1 { a.fingerprints } else { [] }
            })
        }
        let studentPrint = key.fingerprint(voterID: student.rosterVoterID(in: secret), question: 1, sequence: 1)
        let strangerPrint = key.fingerprint(voterID: stranger.rosterVoterID(in: secret), question: 1, sequence: 1)
        // The stranger first and again and again; the student's ballot last, so that its acknowledgement
        // comes after every report of the stranger was taken.
        for i in 0..<5 { radio.ads.yield(report(stranger, address: 1, ms: 2 + 100 * UInt64(i))) }
        radio.ads.yield(report(student, address: 2, ms: 600))
        try await untilChanged(controller, "the student's ballot counted") { await controller.results().voters == 1 }
        let acked = await controller.pass(clock, .seconds(1)) { acknowledged().contains(studentPrint) }
        XCTAssertTrue(acked, "the student's ballot acknowledged")
        let r = await controller.results()
        XCTAssertEqual(r.voters, 1)
        XCTAssertEqual(r.rejected[Rejection.unknownVoter.rawValue], 5, "\(r.rejected)")
        XCTAssertFalse(acknowledged().contains(strangerPrint), "a device not on the roster was acknowledged")
        XCTAssertEqual(acknowledged(), [studentPrint])
    }

    /// Devices not on the roster are heard (their ballots rejected as `unknownVoter`) and counted in the
    /// beacon's load: 300 of them beside a roster of one student, and the STATE interval is the one for 300
    /// voters, not for one (docs/DESIGN.md, "The STATE interval this tally announces").
    func testDevicesNotOnTheRosterLengthenTheIntervalAsVotersWould() async throws {
        let roster = try Roster(entries: [RosterEntry(name: "Ada", studentID: "s1", enrollment: DeviceKey.generate().enrollmentCode)])
        let radio = RecordingBroadcaster()
        let clock = TestClock()
        let controller = try PollController(options: PollOptions(joinCode: code, roster: roster, confirmByGATT: false), store: nil,
                                            clock: PollClock(clock))
        let run = Task { try await controller.run(central: radio) }
        defer { run.cancel() }
        let broadcast = BeaconAirModel.Broadcast(interval: TallyBeacon.Tuning().composer.fastInterval)
        let key = self.key
        @Sendable func forRoom(_ n: Int) -> Int? {
            BeaconAirModel.stateInterval(unacknowledged: n, acknowledged: 0, broadcast: broadcast).milliseconds
        }
        @Sendable func lastInterval() -> Int? { radio.payloads.last.flatMap { BeaconCodec.state(in: $0, key: key) }?.interval.milliseconds }
        var opened = await controller.pass(clock, .seconds(1)) { lastInterval() == forRoom(1) }
        XCTAssertTrue(opened, "the opening payload")
        // Roster-mode ballots of voter IDs on no roster (the tag is never checked: no key for them).
        for id in 0..<300 {
            let b = Ballot(mode: .roster, voteID: code.voteID, question: 1, voterID: UInt32(0x5000_0000 + id), sequence: 1,
                           answer: .choice(1))
            radio.ads.yield(AdvertisementReport(address: DeviceAddress(rawValue: UInt64(0xC0_0000_0000 + id)), rssi: -50,
                                                companyID: BallotFormat.companyID,
                                                data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(code))),
                                                timestamp: RadioInstant(nanoseconds: 1_000_000)))
        }
        try await untilChanged(controller, "all 300 rejected") { await controller.results().rejected[Rejection.unknownVoter.rawValue] == 300 }
        opened = await controller.pass(clock, .seconds(20)) { lastInterval() == forRoom(300) }
        XCTAssertTrue(opened, "the interval for 300 voters: \(lastInterval() ?? 0) ms")
        let counted = await controller.results().voters
        XCTAssertEqual(counted, 0)
    }

    /// A roster poll opens its question at the interval for its roster (here 40 students, 20 ms), an
    /// anonymous poll at the interval for 1,000 voters (docs/DESIGN.md, "The STATE interval this tally
    /// announces").
    func testARosterPollOpensAtTheIntervalForItsRoster() async throws {
        let roster = try Roster(entries: (0..<40).map {
            RosterEntry(name: "Student \($0)", studentID: "s\($0)", enrollment: DeviceKey.generate().enrollmentCode)
        })
        func openingInterval(_ options: PollOptions, mode: BallotMode) async throws -> Int? {
            let radio = RecordingBroadcaster()
            let clock = TestClock()
            let controller = try PollController(options: options, store: nil, clock: PollClock(clock))
            let run = Task { try await controller.run(central: radio) }
            defer { run.cancel() }
            let out = await controller.pass(clock, .seconds(1)) { !radio.payloads.isEmpty }
            XCTAssertTrue(out, "a payload")
            guard let first = radio.payloads.first, let s = BeaconCodec.state(in: first, key: key),
                  case .open = s.poll else { return nil }
            XCTAssertEqual(s.mode, mode)
            return s.interval.milliseconds
        }
        let broadcast = BeaconAirModel.Broadcast(interval: TallyBeacon.Tuning().composer.fastInterval)
        let forRoster = try await openingInterval(PollOptions(joinCode: code, roster: roster, confirmByGATT: false), mode: .roster)
        let anonymous = try await openingInterval(PollOptions(joinCode: code, confirmByGATT: false), mode: .anonymous)
        XCTAssertEqual(forRoster, BeaconAirModel.stateInterval(unacknowledged: 40, acknowledged: 0, broadcast: broadcast).milliseconds)
        XCTAssertEqual(anonymous, BeaconAirModel.stateInterval(unacknowledged: 1000, acknowledged: 0, broadcast: broadcast).milliseconds)
        XCTAssertLessThan(forRoster ?? .max, anonymous ?? 0)
    }
}
