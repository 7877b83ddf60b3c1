import ClickerTransport
import ClickerWire
import Logging
import Synchronization
import Voter
import XCTest

/// A radio whose listening fails (its air host went away) or delivers the frames the test sends;
/// logs what it is asked, with its name.
final class FailingRadio: PeripheralTransport, ListenerTransport {
    let name: String
    let log: EventLog
    let fails: Bool
    init(_ name: String, log: EventLog, fails: Bool) {
        self.name = name
        self.log = log
        self.fails = fails
    }
    func advertise(_ payload: AdvertisingPayload) async throws { log.add("\(name) advertise \(payload.data)") }
    func stopAdvertising() async throws { log.add("\(name) stop") }
    func publish(service: UUID128, characteristic: UUID128, value: [UInt8]) async throws { log.add("\(name) publish \(value)") }
    func shutdown() async { log.add("\(name) shutdown") }
    func status() -> AsyncStream<RadioStatus> { AsyncStream { $0.finish() } }
    func listen(companyID: UInt16, dutyCycle: ScanDutyCycle) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        log.add("\(name) listen")
        let fails = self.fails
        return AsyncThrowingStream { c in
            if fails { c.finish(throwing: TransportError.radioUnavailable("the air host is gone")) } else { c.finish() }
        }
    }
}

final class ReopeningRadioTests: XCTestCase {
    let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    func listenOnce(_ radio: ReopeningRadio) async -> (any Error)? {
        do {
            for try await _ in radio.listen(companyID: BallotFormat.companyID, dutyCycle: .continuous) {}
            return nil
        } catch { return error }
    }

    /// Listening fails: the next listen opens a new radio, which gets the GATT value and the
    /// advertisement back before it listens; a radio that cannot be opened yet fails that listen and
    /// the one after tries again.
    func testAFailedListenOpensANewRadioWithTheBallotOnIt() async throws {
        let log = EventLog()
        let opened = Mutex(0)
        let radio = ReopeningRadio(FailingRadio("old", log: log, fails: true), logger: quiet) {
            let n = opened.withLock { $0 += 1; return $0 }
            if n == 1 { throw TransportError.radioUnavailable("no simulated air") }
            return FailingRadio("new", log: log, fails: false)
        }
        try await radio.publish(service: BallotFormat.serviceUUID, characteristic: BallotFormat.ballotCharacteristicUUID, value: [1])
        try await radio.publish(service: BallotFormat.serviceUUID, characteristic: BallotFormat.ballotCharacteristicUUID, value: [2])
        try await radio.advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: [7], interval: .milliseconds(100),
                                                     connectable: true))
        let failed = await listenOnce(radio)
        XCTAssertEqual(failed as? TransportError, .radioUnavailable("the air host is gone"))
        let notYet = await listenOnce(radio)
        XCTAssertEqual(notYet as? TransportError, .radioUnavailable("no simulated air"))
        let fine = await listenOnce(radio)
        XCTAssertNil(fine)
        XCTAssertEqual(log.all, ["old publish [1]", "old publish [2]", "old advertise [7]", "old listen",
                                 "old shutdown",
                                 "new publish [2]", "new advertise [7]", "new listen"])
    }

    /// Tries to listen again back off while they fail: 1, 1, 2, 4, 8, 8 s.
    func testListeningAgainBacksOff() {
        XCTAssertEqual((0...5).map { BeaconFollowService.relistenDelay(after: $0) },
                       [.seconds(1), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8)])
    }
}
