import ClickerLedger
import ClickerTestSupport
import ClickerTransport
import Logging
import Receivers
import Synchronization
import TallyDaemon
import XCTest

/// A radio that records what it is asked to broadcast, and when on the test's clock.
final class RelayRadio: BroadcasterTransport, Sendable {
    enum Call: Sendable, Equatable {
        case broadcast(BroadcastPayload)
        case stop
    }

    let capabilities: BroadcastCapabilities
    let clock: TestClock?
    let calls: AsyncStream<Call>
    private let continuation: AsyncStream<Call>.Continuation
    private let log = Mutex<[(Call, TestClock.Instant?)]>([])

    init(_ capabilities: BroadcastCapabilities = .legacy, clock: TestClock? = nil) {
        self.capabilities = capabilities
        self.clock = clock
        (calls, continuation) = AsyncStream.makeStream()
    }

    var recorded: [(Call, TestClock.Instant?)] { log.withLock { $0 } }

    /// Ends the stream of calls (a test's guard against waiting for ever).
    func giveUp() { continuation.finish() }

    func broadcastCapabilities() async throws -> BroadcastCapabilities { capabilities }
    func broadcast(_ payload: BroadcastPayload) async throws { record(.broadcast(payload)) }
    func stopBroadcasting() async throws { record(.stop) }

    private func record(_ call: Call) {
        log.withLock { $0.append((call, clock?.now)) }
        continuation.yield(call)
    }
}

/// ``BeaconRelay`` on a test clock: what a receiver broadcasts of the tally's beacon, and when it stops.
final class BeaconRelayTests: XCTestCase {
    let frames: [[UInt8]] = [[0xCB, 0x4B] + [UInt8](repeating: 1, count: 22), [0xCB, 0x4C] + [UInt8](repeating: 2, count: 13)]

    func payload(_ n: UInt8) -> BroadcastPayload {
        BroadcastPayload(companyID: 0xFFFF, frames: frames.map { $0 + [n] }, interval: .milliseconds(100))
    }

    func reading(_ payload: BroadcastPayload?, serial: Int64, age: Duration = .zero) -> LedgerBeaconFeed.Reading {
        .beacon(LedgerBeacon(payload: payload, serial: serial, age: age))
    }

    /// Runs a relay on `radio` over readings the test yields; returns the continuation and the relay's task.
    func relay(_ radio: RelayRadio, clock: TestClock, mode: BeaconMode = .whenPossible)
        -> (AsyncStream<LedgerBeaconFeed.Reading>.Continuation, Task<BeaconRelay.Summary, Never>) {
        let (readings, continuation) = AsyncStream<LedgerBeaconFeed.Reading>.makeStream()
        let task = Task { await BeaconRelay(radio: radio, mode: mode, logger: Logger(label: "test")).run(readings, clock: clock) }
        return (continuation, task)
    }

    func next(_ calls: inout AsyncStream<RelayRadio.Call>.Iterator) async -> RelayRadio.Call? { await calls.next() }

    func testEachNewBeaconGoesOutAsItIsAndAnUnrenewedOneStopsAfterFiveSeconds() async throws {
        let clock = TestClock()
        let radio = RelayRadio(clock: clock)
        var calls = radio.calls.makeAsyncIterator()
        let (readings, task) = relay(radio, clock: clock)
        for n in UInt8(1)...50 {
            readings.yield(reading(payload(n), serial: Int64(n)))
            let call = await next(&calls)
            XCTAssertEqual(call, .broadcast(payload(n)))
        }
        // Renewed no more: four ticks later it still goes out, the fifth stops it.
        let start = clock.now
        for _ in 1...4 {
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(1))
        }
        await clock.waitForSleeper(until: start.advanced(by: .seconds(5)))
        XCTAssertFalse(radio.recorded.contains { $0.0 == .stop }, "stopped before its five seconds")
        clock.advance(by: .seconds(1))
        let stopped = await next(&calls)
        XCTAssertEqual(stopped, .stop)
        XCTAssertEqual(radio.recorded.last?.1, start.advanced(by: .seconds(5)))

        // A new one goes out again; the tally's stop stops it at once.
        readings.yield(reading(payload(60), serial: 60))
        let again = await next(&calls)
        XCTAssertEqual(again, .broadcast(payload(60)))
        readings.yield(reading(nil, serial: 61))
        let stop = await next(&calls)
        XCTAssertEqual(stop, .stop)
        readings.finish()
        let summary = await task.value
        XCTAssertEqual(summary, BeaconRelay.Summary(broadcast: 51, refused: 0, stops: 2))
    }

    func testABeaconAlreadyOldGoesOutOnlyForWhatIsLeftOfItsFiveSeconds() async throws {
        let clock = TestClock()
        let radio = RelayRadio(clock: clock)
        var calls = radio.calls.makeAsyncIterator()
        let (readings, task) = relay(radio, clock: clock)
        readings.yield(reading(payload(1), serial: 1, age: .seconds(7)))
        readings.yield(reading(payload(2), serial: 2, age: .milliseconds(4_200)))
        let first = await next(&calls)
        XCTAssertEqual(first, .broadcast(payload(2)), "a beacon 7 s old does not go out")
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        let stopped = await next(&calls)
        XCTAssertEqual(stopped, .stop, "0.8 s were left of it")
        readings.finish()
        _ = await task.value
    }

    func testFramesLongerThanTheRadioTakesAreNotBroadcast() async throws {
        let clock = TestClock()
        let radio = RelayRadio(.legacy, clock: clock)
        var calls = radio.calls.makeAsyncIterator()
        let (readings, task) = relay(radio, clock: clock)
        let signed = BroadcastPayload(companyID: 0xFFFF, frames: [[0xCB, 0x43] + [UInt8](repeating: 0, count: 130)])
        for serial in Int64(1)...20 { readings.yield(reading(signed, serial: serial)) }
        readings.yield(reading(payload(3), serial: 21))
        let call = await next(&calls)
        XCTAssertEqual(call, .broadcast(payload(3)), "the 132-byte frames never reached the legacy radio")
        readings.finish()
        let summary = await task.value
        XCTAssertEqual(summary.broadcast, 1)
    }

    func testARadioThatCannotBroadcastWhileItScansRelaysNothingUnlessToldToTry() async throws {
        let clock = TestClock()
        let bt4 = BroadcastCapabilities(maxFrameLength: 27, extended: false, whileScanning: false)
        let radio = RelayRadio(bt4, clock: clock)
        let (readings, task) = relay(radio, clock: clock)
        readings.yield(reading(payload(1), serial: 1))
        let summary = await task.value
        XCTAssertEqual(summary, BeaconRelay.Summary())
        XCTAssertTrue(radio.recorded.isEmpty)

        // `--beacon`: tried anyway; `--no-beacon`: nothing, whatever the radio.
        let tried = RelayRadio(bt4, clock: clock)
        var calls = tried.calls.makeAsyncIterator()
        let (more, trying) = relay(tried, clock: clock, mode: .always)
        more.yield(reading(payload(2), serial: 2))
        let call = await calls.next()
        XCTAssertEqual(call, .broadcast(payload(2)))
        more.finish()
        _ = await trying.value
        let off = RelayRadio(.extended, clock: clock)
        let (none, offTask) = relay(off, clock: clock, mode: .off)
        none.yield(reading(payload(3), serial: 3))
        none.finish()
        let offSummary = await offTask.value
        XCTAssertEqual(offSummary, BeaconRelay.Summary())
        XCTAssertTrue(off.recorded.isEmpty)
    }
}
