import ClickerStore
import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
@testable import TallyDaemon
import TerminalView
import Voter
import XCTest

/// Version 4 in the daemon (docs/PROTOCOL.md §2, §11.2, §11.11): a poll whose join code commits to
/// its beacon key signs its extended frames, off the actor that takes the reports; a voter takes the
/// key and follows; the key is kept with the poll for `--resume` and dropped when it closes.
final class SignedBeaconDaemonTests: XCTestCase {
    func testAPollWhoseJoinCodeCommitsToAKeySignsItsExtendedFrames() async throws {
        let (code, signer) = try PollController.unusedAnchoredJoinCode(store: nil)
        XCTAssertTrue(BeaconAnchor.matches(signer.publicKey, code))
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.beaconSigner = signer
        let radio = RecordingBroadcaster(capabilities: .extended)
        let clock = TestClock()
        let controller = try PollController(options: options, store: nil, clock: PollClock(clock))
        let run = Task { try await controller.run(central: radio) }
        let out = await controller.pass(clock, .seconds(1)) { radio.payloads.count >= 1 }
        XCTAssertTrue(out, "the beacon went out")
        let said = await controller.viewModel().radio.beacon
        XCTAssertEqual(said, .extended, "the view says signed")
        let key = BeaconKey(pollSecret(code))
        let frames = radio.payloads.flatMap(\.frames)
        XCTAssertFalse(frames.isEmpty)
        for f in frames {
            let e = try BeaconCodec.envelope(f, key: key).get()
            XCTAssertTrue(e.isSigned, "every extended frame is signed")
            XCTAssertTrue(e.verify(signer.publicKey))
            XCTAssertLessThanOrEqual(f.count, BeaconFormat.extendedBudgetWithFlags)
        }
        // A voter of the join code takes the key (one anchor check) and the question.
        var follower = BeaconFollower(key: key, mode: .anonymous, voterID: 1, now: .zero)
        for f in frames { follower.hear(f, at: .seconds(1)) }
        XCTAssertEqual(follower.admission.publicKey, signer.publicKey)
        XCTAssertEqual(follower.status, .open(.init(beacon: BeaconQuestion(number: 1, kind: .single, options: 4))))
        // Its own signed STATE heard by its scanner is no forgery; a classmate's signed STATE is.
        let own = try XCTUnwrap(frames.first { $0[1] == BeaconFrameKind.state.typeByte(signed: true) })
        await controller.ingest(AdvertisementReport(address: DeviceAddress(rawValue: 1), rssi: -50, companyID: BallotFormat.companyID,
                                                    data: own, timestamp: RadioInstant(nanoseconds: 1_000_000)))
        var forged = await controller.beaconForgeries
        XCTAssertEqual(forged, 0)
        let classmate = try XCTUnwrap(BeaconSigner(seed: [UInt8](repeating: 9, count: 32)))
        let forgery = try BeaconCodec.seal(.state(BeaconState(voteID: code.voteID, counter: 5, mode: .anonymous, poll: .closed,
                                                              interval: .stop, hiddenKey: key.hide(signer.publicKey))),
                                           key: key, signer: classmate)
        await controller.ingest(AdvertisementReport(address: DeviceAddress(rawValue: 2), rssi: -50, companyID: BallotFormat.companyID,
                                                    data: forgery, timestamp: RadioInstant(nanoseconds: 2_000_000)))
        forged = await controller.beaconForgeries
        XCTAssertEqual(forged, 1)
        run.cancel()
        _ = try? await run.value
    }

    /// The tally's own signed STATE frames, heard again by its scanner, are known by their bytes: the actor
    /// that takes the reports verifies no signature for them (it verified each before the signed frames were
    /// remembered); a classmate's signed STATE is still verified there and counted as a forgery.
    func testItsOwnSignedFramesHeardAgainCostTheReportPathNoSignatureCheck() async throws {
        let (code, signer) = try PollController.unusedAnchoredJoinCode(store: nil)
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.beaconSigner = signer
        let radio = RecordingBroadcaster(capabilities: .extended)
        let clock = TestClock()
        let controller = try PollController(options: options, store: nil, clock: PollClock(clock))
        let run = Task { try await controller.run(central: radio) }
        let out = await controller.pass(clock, .seconds(5)) { radio.payloads.count >= 2 }
        XCTAssertTrue(out, "two payloads out")
        let own = radio.payloads.flatMap(\.frames).filter { $0[1] == BeaconFrameKind.state.typeByte(signed: true) }
        XCTAssertGreaterThanOrEqual(own.count, 2)
        for (i, f) in own.enumerated() {
            await controller.ingest(AdvertisementReport(address: DeviceAddress(rawValue: 1), rssi: -50, companyID: BallotFormat.companyID,
                                                        data: f, timestamp: RadioInstant(nanoseconds: UInt64(i + 1) * 1_000_000)))
        }
        var checks = await controller.beaconSignatureChecks
        var forged = await controller.beaconForgeries
        XCTAssertEqual(checks, 0, "its own frames were verified on the report path")
        XCTAssertEqual(forged, 0)
        let key = BeaconKey(pollSecret(code))
        let classmate = try XCTUnwrap(BeaconSigner(seed: [UInt8](repeating: 7, count: 32)))
        let forgery = try BeaconCodec.seal(.state(BeaconState(voteID: code.voteID, counter: 5, mode: .anonymous, poll: .closed,
                                                              interval: .stop, hiddenKey: key.hide(signer.publicKey))),
                                           key: key, signer: classmate)
        await controller.ingest(AdvertisementReport(address: DeviceAddress(rawValue: 2), rssi: -50, companyID: BallotFormat.companyID,
                                                    data: forgery, timestamp: RadioInstant(nanoseconds: 900_000_000)))
        checks = await controller.beaconSignatureChecks
        forged = await controller.beaconForgeries
        XCTAssertEqual(checks, 1)
        XCTAssertEqual(forged, 1)
        run.cancel()
        _ = try? await run.value
    }

    /// A join code given by hand commits to no key: extended frames go out tagged, and the view says so.
    func testAJoinCodeGivenByHandSendsTaggedFramesAndSaysSo() async throws {
        let code = try JoinCode(parsing: "4821-K7QXM-3PF9A")
        let radio = RecordingBroadcaster(capabilities: .extended)
        let clock = TestClock()
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil,
                                            clock: PollClock(clock))
        let run = Task { try await controller.run(central: radio) }
        let out = await controller.pass(clock, .seconds(1)) { radio.payloads.count >= 1 }
        XCTAssertTrue(out, "the beacon went out")
        let said = await controller.viewModel().radio.beacon
        XCTAssertEqual(said, .extendedUnsigned, "the view says unsigned")
        let key = BeaconKey(pollSecret(code))
        for f in radio.payloads.flatMap(\.frames) { XCTAssertFalse(try BeaconCodec.envelope(f, key: key).get().isSigned) }
        run.cancel()
        _ = try? await run.value
    }

    /// The seed is stored with the poll, so `--resume` signs with the same key, and dropped when the
    /// poll closes.
    func testAResumedPollSignsWithTheSameKeyAndAClosedOneForgetsIt() async throws {
        let dir = NSTemporaryDirectory() + "clicker-signed-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let store = try ClickerStore(path: dir + "/clicker.sqlite")
        let (code, signer) = try PollController.unusedAnchoredJoinCode(store: store)
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.beaconSigner = signer
        let first = try PollController(options: options, store: store)
        let firstID = await first.pollID
        let id = try XCTUnwrap(firstID)
        XCTAssertEqual(try store.resume()?.poll.beaconSeed, Data(signer.seed))
        let resumed = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: store,
                                         start: .resume(maxAge: .seconds(3600)))
        let again = await resumed.options.beaconSigner
        XCTAssertEqual(again, signer)
        try store.closePoll(id)
        XCTAssertNil(try store.poll(id)?.beaconSeed)
    }
}
