import ClickerSim
import ClickerTransport
import ClickerWire
import DemoRoom
@testable import TallyDaemon
import Voter
import XCTest

/// The room of `clicker-tally --simulate N` on a real `PollController` and the simulated air.
final class DemoRoomTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // test constant

    /// The demo room learns the question from the tally's beacon alone: it votes on question 1, and
    /// after `n` the same students, never restarted, vote on question 2 in its kind and options.
    func testTheDemoRoomFollowsTheBeaconToTheNextQuestion() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 12, clock: .virtual))
        // The tally and the students keep the air's time: `drive` lets the beacon act at each instant of the
        // air before it moves on (the students' tasks are given 5 ms of the wall clock per step, below).
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil,
                                            clock: PollClock(air.clock))
        var rng = SplitMix64(seed: 2)
        let room = Classroom(count: 20, options: 4, abstainRate: 0, using: &rng)
        let run = await air.start(controller)
        let students = Task { await SimulatedRoom(room: room, air: air, controller: controller, speed: 1000, seed: 3,
                                                            clock: air.clock).run() }
        /// Drives the air in 100 ms steps until `done`, for at most 60 s of air time.
        func drive(_ what: String, until done: (PollResults) -> Bool) async throws -> PollResults {
            var t = air.now.nanoseconds
            for _ in 0..<600 {
                let r = await controller.results()
                if done(r) { return r }
                t += 100_000_000
                await air.drive(controller, until: RadioInstant(nanoseconds: t))
                try await Task.sleep(for: .milliseconds(5))  // the students' tasks run on the pool
            }
            let r = await controller.results()
            XCTFail("\(what): question \(r.question), \(r.voters) voters, rejected \(r.rejected)")
            return r
        }
        let first = try await drive("everyone on question 1") { $0.question == 1 && $0.voters == 20 }
        XCTAssertEqual(first.rejected["otherQuestion"] ?? 0, 0)

        try await controller.nextQuestion()
        let second = try await drive("everyone on question 2") { $0.question == 2 && $0.voters == 20 }
        XCTAssertEqual(Set(second.ballots.map(\.voter)), Set(first.ballots.map(\.voter)), "the same students")
        students.cancel()
        await students.value
        run.cancel()
        _ = try? await run.value
        air.finishAdvertisementStreams()
    }
}
