import ClickerSim
import ClickerTransport
import ClickerWire
@testable import DemoRoom
import TallyDaemon
import Voter
import XCTest

/// The demo room (`--simulate N`) answers each question with counts of its own: another option
/// leads, by another margin, as in a real class.
final class DemoRoomAnswersTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // test constant

    func counts(_ room: Classroom) -> [Int] {
        var c = [Int](repeating: 0, count: 4)
        for s in room.students { if case .choice(let i) = s.final { c[Int(i)] += 1 } }
        return c
    }

    func testEachQuestionOfTheDemoGetsCountsOfItsOwn() async throws {
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        var rng = SplitMix64(seed: 2)
        let room = Classroom(count: 300, options: 4, using: &rng)
        let rooms = QuestionRooms(room: room, seed: 3, controller: controller)
        var seen: [[Int]] = []
        for q in UInt8(1)...4 {
            let r = await rooms.room(for: BeaconQuestion(number: q, kind: .single, options: 4))
            let c = counts(r)
            XCTAssertEqual(c.reduce(0, +), room.students.count, "every student answers")
            // Plausible: one option leads, and no option takes everyone.
            XCTAssertLessThan(c.max() ?? 0, room.students.count)
            XCTAssertGreaterThan(c.max() ?? 0, room.students.count / 4)
            seen.append(c)
        }
        XCTAssertEqual(Set(seen).count, 4, "four questions, four sets of counts: \(seen)")
    }
}
