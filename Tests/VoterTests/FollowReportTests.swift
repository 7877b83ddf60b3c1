import ClickerWire
@testable import Voter
import XCTest

/// What a student at a terminal reads for an open question (FollowReport.sentence).
final class FollowReportTests: XCTestCase {
    func testANumericQuestionsPromptSaysItsRangeAndDecimalsOnceTheyArrived() throws {
        let beacon = BeaconQuestion(number: 4, kind: .numeric, options: 0, textDigest: 1)
        let form = try XCTUnwrap(NumericForm(lowest: 900, highest: 1050, decimals: 2))
        let waiting = BeaconFollower.Question(beacon: beacon)
        XCTAssertTrue(FollowReport.status(.open(waiting), question: waiting).sentence.hasSuffix("Type your answer: a number."))
        let arrived = BeaconFollower.Question(beacon: beacon, text: QuestionText(title: "g in m/s²", numeric: form))
        let sentence = FollowReport.status(.open(arrived), question: arrived).sentence
        XCTAssertTrue(sentence.hasPrefix("Question 4: g in m/s²"), sentence)
        XCTAssertTrue(sentence.contains("at most 2 decimals from 9.00 to 10.50"), sentence)
        // A number it does not take is answered with the same words.
        let refused = FollowReport.status(.notOffered(.numeric(1100)), question: arrived).sentence
        XCTAssertTrue(refused.contains("from 9.00 to 10.50"), refused)
        // The answer as typed, 9.81, not the 981 the ballot carries; a script's line keeps the wire value.
        XCTAssertEqual(FollowReport.status(.sending(.numeric(981)), question: arrived).sentence, "Sending 9.81…")
        XCTAssertEqual(FollowReport.status(.counted(.numeric(981)), question: arrived).sentence, "Counted ✓ 9.81")
        XCTAssertEqual(FollowReport.status(.counted(.numeric(981)), question: arrived).line, "counted 981")
    }

    /// A refused answer, then the tally's next STATE frame (which ends "not offered"): the refusal is the
    /// last thing shown; the question is not printed again.
    func testARefusedAnswerDoesNotPrintTheQuestionAgain() throws {
        let code = try JoinCode(parsing: "4821-ABCDE-FGHJK")
        let key = BeaconKey(PollSecret(deriving: code))
        var counter: UInt32 = 100
        func state() throws -> [UInt8] {
            counter += 1
            return try BeaconCodec.seal(BeaconState(voteID: key.voteID, counter: counter, mode: .anonymous,
                                                    poll: .open(BeaconQuestion(number: 1, kind: .single, options: 4)),
                                                    interval: BeaconInterval(milliseconds: 100) ?? .stop), key: key)
        }
        var follower = BeaconFollower(key: key, mode: .anonymous, voterID: 7, now: .zero)
        var screen = FollowScreen(first: nil, wait: .seconds(1), status: follower.status)
        let parse: (String, BeaconFollower.Question) -> Answer? = { _, _ in nil }
        follower.hear(try state(), at: .milliseconds(10))
        let shown = screen.update(&follower, at: .milliseconds(10), parse: parse)
        XCTAssertEqual(shown.map(\.line), ["question 1 single 4"])
        follower.refuse(.choice(4))
        XCTAssertEqual(screen.update(&follower, at: .milliseconds(20), parse: parse).map(\.line), ["not-offered E"])
        for ms in [120, 220, 320] {
            follower.hear(try state(), at: .milliseconds(ms))
            XCTAssertEqual(screen.update(&follower, at: .milliseconds(ms), parse: parse).map(\.line), [],
                           "nothing new to show at \(ms) ms")
        }
        follower.answer(.choice(1))
        XCTAssertEqual(screen.update(&follower, at: .milliseconds(400), parse: parse).map(\.line), ["sending B"])
    }

    /// The title and options arrive after the 3 s wait (TEXT pages lost on a busy air, bluetoothd's
    /// legacy frames): the question was shown without them, and is shown again once they arrive, before
    /// the status that holds, whether the student answered meanwhile or not; once, and never when they
    /// arrived within the wait.
    func testATitleThatArrivesAfterTheWaitIsShownThen() throws {
        let code = try JoinCode(parsing: "4821-ABCDE-FGHJK")
        let key = BeaconKey(PollSecret(deriving: code))
        let text = QuestionText(title: "Capital of France?", options: ["Paris", "Lyon"])
        let block = try XCTUnwrap(text.block)
        let digest = key.textDigest(block)
        let chunks = try XCTUnwrap(QuestionText.chunks(block, chunkLength: 8))
        XCTAssertGreaterThan(chunks.count, 2)
        var counter: UInt32 = 100
        func state(_ n: UInt8) throws -> [UInt8] {
            counter += 1
            return try BeaconCodec.seal(BeaconState(voteID: key.voteID, counter: counter, mode: .anonymous,
                                                    poll: .open(BeaconQuestion(number: n, kind: .single, options: 2, textDigest: digest)),
                                                    interval: BeaconInterval(milliseconds: 100) ?? .stop), key: key)
        }
        func page(_ i: Int) throws -> [UInt8] {
            counter += 1
            return try BeaconCodec.seal(.text(BeaconTextPage(counter: counter, digest: digest, index: UInt8(i),
                                                             count: UInt8(chunks.count), chunk: chunks[i])), key: key)
        }
        let parse: (String, BeaconFollower.Question) -> Answer? = { _, _ in nil }
        let titled = "question 1 single 2 Capital of France?"

        // Not answered yet: the question line again, with the title.
        for answered in [false, true] {
            var follower = BeaconFollower(key: key, mode: .anonymous, voterID: 7, now: .zero)
            var screen = FollowScreen(first: nil, wait: .seconds(3), status: follower.status)
            var shown: [FollowReport] = []
            func at(_ ms: Int, _ frame: [UInt8]? = nil) {
                if let frame { follower.hear(frame, at: .milliseconds(ms)) } else { follower.tick(at: .milliseconds(ms)) }
                shown += screen.update(&follower, at: .milliseconds(ms), parse: parse)
            }
            at(100, try state(1))
            at(200, try page(0))                 // one page of several: the rest are lost
            XCTAssertEqual(shown.map(\.line), [], "the question waits for its title")
            at(3_200)
            XCTAssertEqual(shown.map(\.line), ["question 1 single 2"], "shown without its title after the wait")
            shown = []
            if answered {
                follower.answer(.choice(0))
                at(3_300, try state(1))
                XCTAssertEqual(shown.map(\.line), ["sending A"])
                shown = []
            }
            for i in 1..<chunks.count { at(5_000 + i * 150, try page(i)) }
            XCTAssertEqual(shown.map(\.line), answered ? [titled, "sending A"] : [titled])
            let sentence = shown.map(\.sentence).joined(separator: "\n")
            XCTAssertTrue(sentence.contains("Question 1: Capital of France?\n  A. Paris\n  B. Lyon"), sentence)
            shown = []
            // The pages again, and STATE: nothing more.
            for i in 0..<chunks.count { at(7_000 + i * 150, try page(i)) }
            at(8_000, try state(1))
            XCTAssertEqual(shown.map(\.line), [], "the title is shown once")
        }

        // Within the wait: shown once, with the title.
        var follower = BeaconFollower(key: key, mode: .anonymous, voterID: 7, now: .zero)
        var screen = FollowScreen(first: nil, wait: .seconds(3), status: follower.status)
        var lines: [String] = []
        follower.hear(try state(2), at: .milliseconds(100))
        lines += screen.update(&follower, at: .milliseconds(100), parse: parse).map(\.line)
        for i in 0..<chunks.count {
            follower.hear(try page(i), at: .milliseconds(200 + i * 100))
            lines += screen.update(&follower, at: .milliseconds(200 + i * 100), parse: parse).map(\.line)
        }
        follower.hear(try state(2), at: .seconds(5))
        lines += screen.update(&follower, at: .seconds(5), parse: parse).map(\.line)
        XCTAssertEqual(lines, ["question 2 single 2 Capital of France?"])
    }

    func testALetterQuestionsPromptNamesItsOptions() {
        let q = BeaconFollower.Question(beacon: BeaconQuestion(number: 1, kind: .single, options: 4))
        XCTAssertTrue(FollowReport.status(.open(q), question: q).sentence.hasSuffix("Type your answer: one letter, A to D."))
    }
}
