import ClickerSim
import ClickerTransport
import ClickerWire
import Logging
import Synchronization
@testable import TallyDaemon
import Voter
import XCTest

/// The whole beacon loop on the simulated air: a real `PollController` broadcasts, real voters
/// (`BeaconFollowService`, the code `clicker-vote <join-code>` runs) follow it. Nobody tells the
/// voters the question but the beacon.
final class BeaconLoopTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // test constant

    /// Every voter shows question 1 from the beacon, answers, is counted and shows "counted"; after
    /// `n` every voter, never restarted, shows question 2, answers again and is counted on it.
    func testVotersFollowTheBeaconAreAcknowledgedAndFollowTheNextQuestion() async throws {
        let n = 16
        let secret = pollSecret(code)
        let air = SimulatedAir(AirConfiguration(seed: 31, clock: .virtual))
        // The tally and the voters keep the air's time: `drive` lets the beacon and every voter act at each
        // instant of the air before it moves on.
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil,
                                            clock: PollClock(air.clock))
        let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let shown = Mutex<[Int: [String]]>([:])
        let students = (0..<n).map { _ in AirVoter(air) }
        var voters: [Task<Void, any Error>] = []
        for (i, student) in students.enumerated() {
            let service = BeaconFollowService(secret: secret, identity: DeviceKey.generate(), roster: false,
                                              transport: student.radio, state: nil, lines: student.lines,
                                              report: { s in shown.withLock { $0[i, default: []].append(s.line) } },
                                              logger: quiet, clock: air.clock, start: StaggeredStart(seed: UInt64(i + 1)),
                                              turns: student.turns)
            voters.append(Task { try await service.run() })
        }
        let run = await air.start(controller)
        func lines(_ i: Int) -> [String] { shown.withLock { $0[i] ?? [] } }
        /// Drives the air in 100 ms steps until every voter's lines satisfy `done`, for at most `limit`.
        func drive(_ what: String, for limit: Duration, until done: ([String]) -> Bool) async {
            var t = air.now.nanoseconds
            let end = t + UInt64(limit.components.seconds) * 1_000_000_000
            while t < end {
                if (0..<n).allSatisfy({ done(lines($0)) }) { return }
                t += 100_000_000
                await air.drive(controller, until: RadioInstant(nanoseconds: t), voters: students)
            }
            let missing = (0..<n).filter { !done(lines($0)) }.map { "\($0): \(lines($0))" }
            XCTFail("\(what): not every voter after \(limit): \(missing.prefix(4))")
        }
        await drive("question 1 shown", for: .seconds(20)) { $0.contains("question 1 single 4") }
        for (i, student) in students.enumerated() { student.type(["A", "B", "C", "D"][i % 4]) }
        await drive("counted on question 1", for: .seconds(60)) { $0.contains { $0.hasPrefix("counted ") } }
        var r = await controller.results()
        XCTAssertEqual(r.voters, n)
        XCTAssertEqual(r.counts, ["A": 4, "B": 4, "C": 4, "D": 4])

        try await controller.nextQuestion()
        await drive("question 2 shown", for: .seconds(20)) { $0.contains("question 2 single 4") }
        for student in students { student.type("B") }
        await drive("counted on question 2", for: .seconds(60)) {
            guard let q2 = $0.lastIndex(of: "question 2 single 4") else { return false }
            return $0[q2...].contains("counted B")
        }
        r = await controller.results()
        XCTAssertEqual(r.question, 2)
        XCTAssertEqual(r.voters, n)
        XCTAssertEqual(r.counts, ["A": 0, "B": n, "C": 0, "D": 0])
        for v in voters { v.cancel() }
        for v in voters { _ = try? await v.value }
        run.cancel()
        _ = try? await run.value
        air.finishAdvertisementStreams()
    }
}
