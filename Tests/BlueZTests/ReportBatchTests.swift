@testable import BlueZ
import ClickerTransport
import XCTest

/// The central's batch path without a bus: signal batches handed straight to the engine, as the bus's
/// dispatch thread hands them over, and what its consumers receive.
final class ReportBatchTests: XCTestCase {
    var centrals: [BlueZCentral] = []

    override func tearDown() async throws {
        for c in centrals { await c.shutdown() }
        centrals = []
    }

    /// A central whose bus never answers: it keeps retrying (every minute) and never ends its streams,
    /// so the test alone feeds the engine.
    func makeCentral(bufferLimit: Int = 1 << 18) -> BlueZCentral {
        let c = BlueZCentral(options: BlueZCentralOptions(
            bus: .address("unix:path=/nonexistent/clicker-test-bus"), discoveryRestartInterval: nil,
            staleDeviceTimeout: nil, retryInterval: .seconds(60), waitForRadio: true, reportBufferLimit: bufferLimit))
        centrals.append(c)
        return c
    }

    static func advert(_ i: Int, company: UInt16 = 0xFFFF) -> BlueZSignal {
        var a = Advert(address: DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(i % 50)), rssi: Int16(-40 - i % 50),
                       timestamp: RadioInstant(nanoseconds: UInt64(i)))
        a.addManufacturer(company, [UInt8(i >> 8), UInt8(i & 0xFF)])
        return .advert(a)
    }

    /// The number a report carries (its data), to check order.
    static func number(_ r: AdvertisementReport) -> Int { Int(r.data[0]) << 8 | Int(r.data[1]) }

    /// 500 advertisements in one signal batch, mixed with signals that make no report (another company,
    /// RSSI only): the batch consumer receives exactly the 500, in order, in one batch; a single-report
    /// subscriber alongside receives the same 500 in the same order.
    func testABatchOfSignalsIsHandedOverAtOnceExactlyAndInOrder() async throws {
        let central = makeCentral()
        let singles = central.advertisements(companyID: 0xFFFF)
        var batches = central.advertisementBatches(companyID: 0xFFFF).makeAsyncIterator()
        var signals: [BlueZSignal] = []
        for i in 0..<500 {
            signals.append(Self.advert(i))
            if i % 7 == 0 { signals.append(Self.advert(9000 + i, company: 0x004C)) }
            if i % 11 == 0 {
                signals.append(.advert(Advert(address: DeviceAddress(rawValue: 7), rssi: -70, timestamp: .zero)))
            }
        }
        central.engine.handle(signals)

        let batch = try await batches.next()
        XCTAssertEqual(batch?.map(Self.number), Array(0..<500), "one batch, every report, in order")
        XCTAssertEqual(batch?[3].rssi, -43)
        XCTAssertEqual(batch?[3].address, DeviceAddress(rawValue: 0xC000_0000_0003))
        XCTAssertEqual(Set(batch?.map(\.companyID) ?? []), [0xFFFF])
        var received: [Int] = []
        for try await r in singles {
            received.append(Self.number(r))
            if received.count == 500 { break }
        }
        XCTAssertEqual(received, Array(0..<500))
        XCTAssertEqual(central.statistics.reports, 1000, "500 reports to each of the two subscribers")
        XCTAssertEqual(central.statistics.droppedReports, 0)
    }

    /// Batches that arrive while the consumer is busy are joined in order; beyond the buffer limit the
    /// oldest reports are dropped and counted, never silently.
    func testBatchesQueuedForABusyConsumerKeepOrderAndCountDrops() async throws {
        let central = makeCentral(bufferLimit: 16)
        var batches = central.advertisementBatches(companyID: 0xFFFF).makeAsyncIterator()
        central.engine.handle((0..<10).map { Self.advert($0) })
        central.engine.handle((10..<20).map { Self.advert($0) })
        let first = try await batches.next()
        XCTAssertEqual(first?.map(Self.number), Array(4..<20), "the newest 16, oldest first")
        XCTAssertEqual(central.statistics.droppedReports, 4)

        central.engine.handle((20..<25).map { Self.advert($0) })
        let second = try await batches.next()
        XCTAssertEqual(second?.map(Self.number), Array(20..<25))
        XCTAssertEqual(central.statistics.droppedReports, 4)
        XCTAssertEqual(central.statistics.reports, 25)
    }

    /// The queue hands over what it holds before it ends, and before the failure it ends with.
    func testQueuedReportsPrecedeTheEndAndTheFailure() async throws {
        struct Gone: Error {}
        func reports(_ r: Range<Int>) -> [AdvertisementReport] {
            r.map { AdvertisementReport(address: DeviceAddress(rawValue: UInt64($0)), rssi: nil, companyID: 1, data: [UInt8($0)],
                                        timestamp: .zero) }
        }
        let queue = ReportQueue(limit: 100)
        let terminated = expectation(description: "onTermination")
        queue.onTermination { terminated.fulfill() }
        queue.append(contentsOf: reports(0..<3))
        queue.append(contentsOf: reports(3..<5))
        queue.finish(throwing: Gone())
        var it = queue.batches.makeAsyncIterator()
        let batch = try await it.next()
        XCTAssertEqual(batch?.map(\.data), (0..<5).map { [UInt8($0)] })
        do {
            _ = try await it.next()
            XCTFail("the failure was not delivered")
        } catch is Gone {}
        let after = try await it.next()
        XCTAssertNil(after)
        await fulfillment(of: [terminated], timeout: 5)

        let plain = ReportQueue(limit: 100)
        plain.append(contentsOf: reports(0..<2))
        plain.finish()
        var p = plain.batches.makeAsyncIterator()
        let left = try await p.next()
        XCTAssertEqual(left?.count, 2)
        let end = try await p.next()
        XCTAssertNil(end)
    }

    /// A consumer that stops (its task cancelled) unsubscribes: the central stops handing it reports.
    func testCancelledBatchConsumerUnsubscribes() async throws {
        let central = makeCentral()
        let batches = central.advertisementBatches(companyID: 0xFFFF)
        let consumer = Task {
            var n = 0
            for try await b in batches { n += b.count }
            return n
        }
        central.engine.handle((0..<3).map { Self.advert($0) })
        while central.statistics.reports < 3 { await Task.yield() }
        consumer.cancel()
        _ = try await consumer.value
        while central.engine.state.withLock({ !$0.subscribers.isEmpty }) { await Task.yield() }
        central.engine.handle((3..<6).map { Self.advert($0) })
        XCTAssertEqual(central.statistics.reports, 3)
    }
}
