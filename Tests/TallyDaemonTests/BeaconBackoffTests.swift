import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Logging
import Synchronization
@testable import TallyDaemon
import XCTest

/// A beacon whose radio cannot broadcast (bluetoothd gone, a stand-in without LE advertising) costs the
/// tally next to nothing: its tries back off to one every 10 s, the log says so once, and the first
/// payload that goes out again says that too.
final class BeaconBackoffTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // test constant

    func testTheWaitDoublesFromAQuarterSecondToTenSecondsAndResets() {
        var b = BeaconBackoff()
        XCTAssertNil(b.delay)
        var waits: [Duration] = []
        for _ in 0..<9 {
            b.failed()
            waits.append(b.delay ?? .zero)
        }
        XCTAssertEqual(waits, [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8),
                               .seconds(10), .seconds(10), .seconds(10)])
        for _ in 0..<100 { b.failed() }
        XCTAssertEqual(b.delay, .seconds(10))
        b.succeeded()
        XCTAssertNil(b.delay)
    }

    func testARadioThatRefusesIsTriedLessAndLessOftenLoggedOnceAndRecovers() async throws {
        let logged = LogLines()
        let clock = TestClock()
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil,
                                            logger: Logger(label: "test", factory: { _ in logged }), clock: PollClock(clock))
        let radio = RefusingBroadcaster()
        let run = Task { await controller.runBeacon(radio, gap: .milliseconds(100), refresh: .milliseconds(250)) }
        defer { run.cancel() }

        // A minute of the beacon's clock in steps of 25 ms, each once the beacon has acted.
        func pass(_ span: Duration, until done: () -> Bool = { false }) async {
            await controller.pass(clock, span, step: .milliseconds(25), until: done)
        }
        await pass(.seconds(60))
        let tries = radio.tries
        // Without back-off: a try at every 250 ms refresh, 240 a minute. With it: 0, 0.25, 0.75, 1.75, 3.75,
        // 7.75, 15.75 s, then every 10 s: 11 (fewer when the task lags the steps).
        XCTAssertLessThanOrEqual(tries, 12, "the refusing radio was tried \(tries) times in a minute")
        XCTAssertGreaterThanOrEqual(tries, 5, "the beacon gave up trying")
        let warnings = logged.messages.filter { $0.hasPrefix("beacon:") }
        XCTAssertEqual(warnings.count, 1, "the failure is logged once: \(warnings)")
        XCTAssertTrue(warnings.first?.contains("trying again") == true)

        // The radio can broadcast again: a payload goes out within the longest wait, and the log says so.
        radio.refusing.withLock { $0 = false }
        let back = clock.now
        await pass(.seconds(12)) { radio.sent > 0 }
        XCTAssertGreaterThan(radio.sent, 0, "no payload went out after the radio came back")
        XCTAssertLessThanOrEqual(back.duration(to: clock.now), BeaconBackoff.longest + .milliseconds(500))
        XCTAssertTrue(logged.messages.contains("beacon: on the air again"), "recovery logged")
        run.cancel()
        clock.advance(by: .seconds(1))
        _ = await run.value
    }
}

/// A radio whose broadcasts bluetoothd refuses (until told otherwise), as when it is gone.
final class RefusingBroadcaster: CentralTransport, BroadcasterTransport {
    let refusing = Mutex(true)
    private let counts = Mutex((tries: 0, sent: 0))
    var tries: Int { counts.withLock { $0.tries } }
    var sent: Int { counts.withLock { $0.sent } }
    let (stream, ads) = AsyncThrowingStream<AdvertisementReport, any Error>.makeStream()

    func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> { stream }
    func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                            timeout: Duration) async throws -> [UInt8] {
        throw TransportError.unsupported("no GATT")
    }
    func status() -> AsyncStream<RadioStatus> { AsyncStream { $0.yield(RadioStatus(adapter: "test", state: .scanning)) } }
    func broadcastCapabilities() async throws -> BroadcastCapabilities { .legacy }
    func broadcast(_ payload: BroadcastPayload) async throws {
        let refused = refusing.withLock { $0 }
        counts.withLock { c in
            c.tries += 1
            if !refused { c.sent += 1 }
        }
        if refused { throw TransportError.unsupported("bluetoothd is not running") }
    }
    func stopBroadcasting() async throws {}
}

