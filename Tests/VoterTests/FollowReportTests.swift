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

    func testALetterQuestionsPromptNamesItsOptions() {
        let q = BeaconFollower.Question(beacon: BeaconQuestion(number: 1, kind: .single, options: 4))
        XCTAssertTrue(FollowReport.status(.open(q), question: q).sentence.hasSuffix("Type your answer: one letter, A to D."))
    }
}
