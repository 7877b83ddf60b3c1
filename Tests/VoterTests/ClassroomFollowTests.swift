import ClickerSim
import ClickerTransport
import ClickerWire
import Synchronization
import Voter
import XCTest

/// The demo room on the simulated air: the test broadcasts the tally's STATE frames through the
/// simulated central, and reads the ballots the central hears.
final class ClassroomFollowTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    final class Box: Sendable { let m = Mutex<[UInt8: Set<UInt32>]>([:]) }

    /// The demo room (`clicker-tally --simulate N`) follows the beacon: when STATE says question 2 is
    /// open (the instructor pressed n), the same simulated students vote on question 2.
    func testTheSimulatedRoomFollowsTheBeaconToTheNextQuestion() async throws {
        let secret = pollSecret(code)
        let key = BeaconKey(secret)
        let air = SimulatedAir(AirConfiguration(seed: 8))
        let central = air.central()
        let heard = central.advertisements(companyID: BallotFormat.companyID)
        let voters = Box()
        let collector = Task {
            for try await r in heard where r.data.count == 22 && !BeaconFormat.isBeacon(r.data) {
                let id = r.data[5...8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                voters.m.withLock { _ = $0[r.data[4], default: []].insert(id) }
            }
        }
        var rng = SplitMix64(seed: 3)
        let room = Classroom(count: 12, options: 4, abstainRate: 0, using: &rng)
        let students = Task {
            await room.follow(secret: secret, timeScale: 0.001, answers: { q in
                var r = SplitMix64(seed: UInt64(q.number))
                return room.answering(q.kind.answerKind, options: Int(q.options), using: &r)
            }) { _ in air.addPeripheral(rssi: -50) }
        }
        var counter: UInt32 = 10
        func open(_ q: BeaconQuestion) async throws {
            counter += 100
            let s = try BeaconCodec.seal(.state(BeaconState(voteID: secret.voteID, counter: counter, mode: .anonymous,
                                                            poll: .open(q), interval: BeaconInterval(milliseconds: 100)!)), key: key)
            try await central.broadcast(BroadcastPayload(companyID: BallotFormat.companyID, frames: [s], interval: .milliseconds(20)))
        }
        func everyone(voted question: UInt8) async throws {
            try await eventually("the room on question \(question)", timeout: .seconds(30)) {
                await air.advance(until: RadioInstant(nanoseconds: air.now.nanoseconds + 50_000_000))
                return voters.m.withLock { $0[question]?.count ?? 0 } == room.students.count
            }
        }
        try await open(BeaconQuestion(number: 1, kind: .single, options: 4))
        try await everyone(voted: 1)
        XCTAssertNil(voters.m.withLock { $0[2] })
        try await open(BeaconQuestion(number: 2, kind: .multi, options: 3))
        try await everyone(voted: 2)
        XCTAssertEqual(voters.m.withLock { $0[1] }, voters.m.withLock { $0[2] }, "the same students, never restarted")
        students.cancel()
        await students.value
        collector.cancel()
    }
}
