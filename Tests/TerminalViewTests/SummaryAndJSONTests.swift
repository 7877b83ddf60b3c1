import Foundation
import TerminalView
import XCTest

/// Log volume and the machine-readable status.
final class SummaryAndJSONTests: XCTestCase {
    func rejections(_ counts: [String: Int]) -> [TallyViewModel.Rejection] {
        counts.sorted { $0.key < $1.key }.map { TallyViewModel.Rejection(reason: $0.key, count: $0.value) }
    }

    /// A flood gives at most one line per reason per interval: the first at once, the rest added up.
    func testRepeatedRejectionsAreSummarisedOncePerReasonPerInterval() {
        var summary = RejectionSummary(interval: .seconds(5))
        XCTAssertEqual(summary.update(rejections(["badTag": 3]), at: .zero), ["rejected 3 badTag (total 3)"])
        // Ten passes a second for the next 4.9 s, rejections climbing: nothing said.
        var total = 3
        for tenth in 1..<50 {
            total += 40
            XCTAssertEqual(summary.update(rejections(["badTag": total]), at: .milliseconds(100 * tenth)), [])
        }
        XCTAssertEqual(summary.nextDue(), .seconds(5))
        // At 5 s: one line with everything since the first.
        XCTAssertEqual(summary.due(at: .seconds(5)), ["rejected \(total - 3) badTag in the last 5s (total \(total))"])
        XCTAssertEqual(summary.due(at: .seconds(6)), [])
        XCTAssertNil(summary.nextDue(), "nothing unsaid")
        // Another reason has its own interval.
        XCTAssertEqual(summary.update(rejections(["badTag": total, "staleSequence": 1]), at: .seconds(6)),
                       ["rejected 1 staleSequence (total 1)"])
    }

    /// `status --json`: durations are seconds as numbers, paths are not escaped, and it reads back.
    func testStatusJSONHasSecondsAndPlainSlashes() throws {
        let m = TallyViewModel(joinCode: "4821-(secret not shown)",
                               question: .init(number: 2, isOpen: true, elapsed: .milliseconds(75_500)),
                               radio: .init(adapter: "hci0", scanning: true, sinceDiscoveryRestart: .seconds(3)),
                               status: "exported /var/lib/clicker/exports/poll.csv")
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try e.encode(m), as: UTF8.self)
        XCTAssertTrue(text.contains("\"elapsed\":75.5"), text)
        XCTAssertTrue(text.contains("\"sinceDiscoveryRestart\":3"), text)
        XCTAssertTrue(text.contains("/var/lib/clicker/exports/poll.csv"), text)
        XCTAssertFalse(text.contains("\\/"), text)
        let back = try JSONDecoder().decode(TallyViewModel.self, from: Data(text.utf8))
        XCTAssertEqual(back, m)
    }

    /// The screen says why fewer voters are counted than were simulated.
    func testSimulatedRoomIsExplained() {
        var m = TallyViewModel(joinCode: "4821-K7QXM-3PF9A", voters: 288)
        XCTAssertNil(m.roomNote)
        m.simulatedRoom = 300
        let note = try? XCTUnwrap(m.roomNote)
        XCTAssertEqual(note?.hasPrefix("300 simulated, 288 counted: 12 unheard"), true, note ?? "")
        let g = FrameRenderer.render(m, state: ViewState(), width: 80, height: 24)
        XCTAssertTrue(g.text.contains("300 simulated, 288 counted: 12 unheard"), g.text)
        XCTAssertTrue(PlainLineFormatter().statusLine(m).contains("simulated=300"))
        m.voters = 300
        XCTAssertNil(m.roomNote)
    }
}
