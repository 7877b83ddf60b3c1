import ClickerSim
import ClickerTransport
import XCTest

final class AirTests: XCTestCase {
    func testLoneAdvertiserIsHeardOncePerEvent() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 3))
        let stream = air.central().advertisements(companyID: companyID)
        let p = air.addPeripheral(rssi: -60)
        try await p.advertise(payload(1))
        let other = air.addPeripheral(rssi: -60)
        try await other.advertise(AdvertisingPayload(companyID: 0x004C, data: [1, 2, 3]))
        air.run(until: at(10))
        let reports = try await drain(air, stream)
        // One PDU per event on the scanner's channel; events every 100 ms + 0–10 ms: ≈ 95 in 10 s,
        // a few lost where the scanner changes channel mid-PDU.
        XCTAssertGreaterThan(reports.count, 88)
        XCTAssertLessThanOrEqual(reports.count, 100)
        XCTAssertTrue(reports.allSatisfy { $0.address == p.address && $0.data == payload(1).data && $0.companyID == companyID })
        XCTAssertEqual(reports.map(\.timestamp), reports.map(\.timestamp).sorted())
        let rssis = reports.compactMap(\.rssi)
        XCTAssertTrue(rssis.allSatisfy { (-62 ... -58).contains($0) }, "rssi \(rssis)")
        let gaps = zip(reports.dropFirst(), reports).map { secs($0.timestamp - $1.timestamp) }
        // ≥ interval, minus at most two channel offsets (a + gap each) when the scanner changes channel.
        XCTAssertGreaterThanOrEqual(gaps.min() ?? 0, 0.1 - 2 * 0.000876)
        XCTAssertLessThanOrEqual(gaps.max() ?? 1, 0.2 + 2 * 0.000876 + 0.02)  // at most one event missed
    }

    func testSameSeedSameRunDifferentSeedDifferentRun() async throws {
        func run(seed: UInt64) async throws -> [AdvertisementReport] {
            let air = SimulatedAir(AirConfiguration(seed: seed))
            let stream = air.central().advertisements(companyID: companyID)
            for i in 0..<50 { try await air.addPeripheral().advertise(payload(i, interval: .milliseconds(20))) }
            air.schedule(at: at(0.5)) { ctx in ctx.remove(ctx.now == at(0.5) ? DeviceAddress(rawValue: 0xC0_00_00_00_00_05) : DeviceAddress(rawValue: 0)) }
            air.run(until: at(2))
            return try await drain(air, stream)
        }
        let a = try await run(seed: 11), b = try await run(seed: 11), c = try await run(seed: 12)
        XCTAssertGreaterThan(a.count, 100)
        XCTAssertEqual(a, b)
        XCTAssertNotEqual(a, c)
    }

    func testPayloadChangeTakesEffectAtNextEvent() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 5))
        let stream = air.central().advertisements(companyID: companyID)
        let p = air.addPeripheral()
        try await p.advertise(payload(1))
        let newData = payload(2).data
        air.schedule(at: at(3.2)) { ctx in try? ctx.advertise(p.address, payload(2)) }
        air.run(until: at(6))
        let reports = try await drain(air, stream)
        let old = reports.filter { $0.data == payload(1).data }, new = reports.filter { $0.data == newData }
        XCTAssertEqual(old.count + new.count, reports.count)
        let lastOld = try XCTUnwrap(old.last?.timestamp), firstNew = try XCTUnwrap(new.first?.timestamp)
        XCTAssertLessThan(lastOld, firstNew)
        XCTAssertGreaterThan(firstNew, at(3.2))
        // The event in progress keeps its payload; the next one (≤ 110 ms + one event later) carries the new one.
        XCTAssertLessThan(firstNew, at(3.2 + 0.110 + 0.005))
        XCTAssertGreaterThan(lastOld, at(3.2 - 0.115))
    }

    func testDevicesArriveAndLeave() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 9))
        let stream = air.central().advertisements(companyID: companyID)
        let stays = air.addPeripheral(), leaves = air.addPeripheral()
        try await stays.advertise(payload(1))
        try await leaves.advertise(payload(2))
        let late = DeviceAddress(rawValue: 0x00AA_0100_0017)
        air.schedule(at: at(2)) { ctx in
            ctx.addDevice(address: late, rssi: -50)
            try? ctx.advertise(late, payload(17))
        }
        air.schedule(at: at(5)) { ctx in ctx.remove(leaves.address) }
        air.run(until: at(8))
        XCTAssertFalse(air.devices.contains(leaves.address))
        let reports = try await drain(air, stream)
        let fromLeaver = reports.filter { $0.address == leaves.address }
        let fromLate = reports.filter { $0.address == late }
        XCTAssertGreaterThan(fromLeaver.count, 30)
        XCTAssertLessThanOrEqual(try XCTUnwrap(fromLeaver.last).timestamp, at(5.003))  // a PDU in flight may finish
        XCTAssertGreaterThan(fromLate.count, 40)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(fromLate.first).timestamp, at(2))
        XCTAssertGreaterThan(try XCTUnwrap(reports.filter { $0.address == stays.address }.last).timestamp, at(7.8))
    }

    func testOutOfRangeDeviceIsNotHeardUntilItComesCloser() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 2, sensitivity: -95))
        let stream = air.central().advertisements(companyID: companyID)
        let far = air.addPeripheral(rssi: -100)
        try await far.advertise(payload(1))
        air.schedule(at: at(3)) { ctx in ctx.setRSSI(far.address, -70) }
        air.run(until: at(5))
        let reports = try await drain(air, stream)
        XCTAssertGreaterThan(reports.count, 10)
        XCTAssertGreaterThanOrEqual(try XCTUnwrap(reports.first).timestamp, at(3))
        XCTAssertGreaterThan(air.statistics.outOfRange, 20)
    }

    func testCancellingTheConsumerStopsScanning() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 4))
        let central = air.central()
        let p = air.addPeripheral()
        try await p.advertise(payload(1, interval: .milliseconds(20)))
        var statuses = central.status().makeAsyncIterator()
        let first = await statuses.next()?.state
        XCTAssertEqual(first, .stopped)
        let stream = central.advertisements(companyID: companyID)
        let second = await statuses.next()?.state
        XCTAssertEqual(second, .scanning)
        let consumer = Task {
            var n = 0
            for try await _ in stream { n += 1 }
            return n
        }
        air.run(until: at(1))
        consumer.cancel()
        _ = try await consumer.value
        let third = await statuses.next()?.state
        XCTAssertEqual(third, .stopped)
        let delivered = air.statistics.reportsDelivered
        XCTAssertGreaterThan(delivered, 10)
        air.run(until: at(2))
        XCTAssertEqual(air.statistics.reportsDelivered, delivered, "no reports once nobody listens")
        XCTAssertEqual(air.statistics.pdusListened, air.statistics.pdusReceived)  // nothing counted while off
    }

    func testIntervalOutsideSpecificationIsClampedAndNoted() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 1))
        let stream = air.central().advertisements(companyID: companyID)
        let p = air.addPeripheral()
        var status = p.status().makeAsyncIterator()
        let first = await status.next()?.state
        XCTAssertEqual(first, .stopped)
        try await p.advertise(payload(1, interval: .milliseconds(5)))
        let s = await status.next()
        XCTAssertEqual(s?.state, .advertising)
        XCTAssertNotNil(s?.lastError)
        air.run(until: at(1))
        let reports = try await drain(air, stream)
        XCTAssertLessThanOrEqual(reports.count, 50)  // at most one per 20 ms, not one per 5 ms
        XCTAssertGreaterThan(reports.count, 30)
    }

    func testSeveralScannersOnDifferentChannelsHearMore() async throws {
        func listened(_ scanners: [ScannerConfiguration]) async throws -> (Int, Int) {
            let air = SimulatedAir(AirConfiguration(seed: 8, scanners: scanners))
            let stream = air.central().advertisements(companyID: companyID)
            try await air.addPeripheral().advertise(payload(1))
            air.run(until: at(30))
            let reports = try await drain(air, stream)
            return (air.statistics.pdusListened, reports.count)
        }
        let (one, r1) = try await listened([ScannerConfiguration()])
        let (three, r3) = try await listened((0..<3).map { ScannerConfiguration(firstChannelIndex: $0) })
        XCTAssertEqual(Double(three) / Double(one), 3, accuracy: 0.1)
        XCTAssertEqual(Double(r3) / Double(r1), 3, accuracy: 0.1)
    }

    func testHalfDutyScanningHearsAboutHalf() async throws {
        func heard(window: Duration) async throws -> Int {
            let air = SimulatedAir(AirConfiguration(seed: 8, scanners: [ScannerConfiguration(interval: .milliseconds(100), window: window)]))
            let stream = air.central().advertisements(companyID: companyID)
            try await air.addPeripheral().advertise(payload(1, interval: .milliseconds(30)))
            air.run(until: at(20))
            return try await drain(air, stream).count
        }
        let full = try await heard(window: .milliseconds(100)), half = try await heard(window: .milliseconds(50))
        XCTAssertEqual(Double(half) / Double(full), 0.5, accuracy: 0.05)
    }

    func testThreeHundredVoterRoundInVirtualTime() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 300))
        let stream = air.central().advertisements(companyID: companyID)
        for i in 0..<300 { try await air.addPeripheral().advertise(payload(i)) }
        air.run(until: at(6))
        let reports = try await drain(air, stream)
        let heard = Set(reports.map(\.address))
        // Model: p ≈ 0.117 per event, ≈ 57 events in 6 s: all but ~0.1 % heard.
        XCTAssertGreaterThanOrEqual(heard.count, 297)
        XCTAssertEqual(Set(reports.map { Array($0.data.prefix(2)) }).count, heard.count)
        XCTAssertGreaterThan(air.statistics.collisions, reports.count)  // crowded: most PDUs collide
    }
}
