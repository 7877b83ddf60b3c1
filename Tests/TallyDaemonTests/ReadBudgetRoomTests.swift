import ClickerSim
import ClickerTransport
import ClickerWire
import Logging
@testable import TallyDaemon
import Voter
import XCTest

/// GATT reads in a busy room (issue 13 §8): a read pauses the scan, so while ballots are arriving the
/// tally's reads take at most 5 % of the radio's time; once the room is quiet every ballot is read.
final class ReadBudgetRoomTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // test constant

    func testReadsTakeTheirShareWhileBallotsArriveAndVerifyEveryoneOnceQuiet() async throws {
        let n = 40
        let air = SimulatedAir(AirConfiguration(seed: 21, clock: .virtual))
        // No beacon: its loop runs beside the air (on the wall clock here) at instants `drive` does not
        // wait for, and the run would depend on the machine's load. Without it `drive` starts and ends
        // each read at the same instants of the air's clock on an idle machine and on a loaded one; with
        // seeded keys too, every run gives the same figures.
        var options = PollOptions(joinCode: code, confirmByGATT: true)
        options.beacon = .off
        let controller = try PollController(options: options, store: nil)
        let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        var keys = SplitMix64(seed: 21)
        let voters = (0..<n).map { _ in
            VoterSession(secret: pollSecret(code), question: 1, identity: DeviceKey.generate(using: &keys), transport: air.addPeripheral(),
                         state: nil, logger: quiet)
        }
        let run = await air.start(controller)
        var t = air.now.nanoseconds
        func step() async {
            t += 100_000_000
            await air.drive(controller, until: RadioInstant(nanoseconds: t))
        }
        // 20 s of a busy room: every voter casts, then changes its answer every 2 s.
        var last: [Answer] = []
        for s in 0..<200 {
            if s % 20 == 0 {
                last = (0..<n).map { .choice(UInt8(($0 + s / 20) % 4)) }
                for (v, a) in zip(voters, last) { _ = try await v.cast(a) }
            }
            await step()
        }
        let busy = await controller.verification.budget
        // 5 % of 20 s, the 1 s burst, and a read under way at the end (well under 1 s here).
        XCTAssertLessThanOrEqual(busy.charged, .seconds(3), "reads while ballots arrive took \(busy.charged)")
        let deferred = await controller.verification.deferred
        XCTAssertGreaterThan(deferred, 0, "the budget held reads back")
        // Quiet: nobody changes any more; every voter's last ballot is read and verified.
        var r = await controller.results()
        for _ in 0..<600 where r.gattVerified < n {
            await step()
            r = await controller.results()
        }
        XCTAssertEqual(r.gattVerified, n, "every ballot verified once the room is quiet")
        XCTAssertEqual(r.voters, n)
        var expected: [String: Int] = ["A": 0, "B": 0, "C": 0, "D": 0]
        for a in last { if case .choice(let i) = a { expected[String(UnicodeScalar(65 + i)), default: 0] += 1 } }
        XCTAssertEqual(r.counts, expected, "every voter's last answer counted")
        for v in voters { await v.stop() }
        run.cancel()
        _ = try? await run.value
        air.finishAdvertisementStreams()
    }
}
