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
    }

    func testALetterQuestionsPromptNamesItsOptions() {
        let q = BeaconFollower.Question(beacon: BeaconQuestion(number: 1, kind: .single, options: 4))
        XCTAssertTrue(FollowReport.status(.open(q), question: q).sentence.hasSuffix("Type your answer: one letter, A to D."))
    }
}
