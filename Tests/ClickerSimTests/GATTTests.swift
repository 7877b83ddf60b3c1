import ClickerSim
import ClickerTransport
import XCTest

final class GATTTests: XCTestCase {
    func testReadReturnsPublishedValueAfterRealisticDelay() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 21))
        let central = air.central()
        let p = air.addPeripheral()
        try await p.advertise(payload(1))
        try await p.publish(service: service, characteristic: ballot, value: [1, 2, 3, 4])
        air.run(until: at(1))
        let read = Task { try await central.readCharacteristic(device: p.address, service: service, characteristic: ballot, timeout: .seconds(5)) }
        await waitForPendingReads(air, 1)
        await air.advance(until: at(3), quantum: .milliseconds(5))
        let value = try await read.value
        XCTAssertEqual(value, [1, 2, 3, 4])
        let s = air.statistics
        XCTAssertEqual(s.connectionsEstablished, 1)
        XCTAssertEqual(s.readsSucceeded, 1)
        XCTAssertEqual(air.pendingReads, 0)
    }

    func testReadTimingIsConnectPlusExchange() async throws {
        // Deterministic timing via a script: read issued at t = 1 s, completion observed by the result's arrival.
        let air = SimulatedAir(AirConfiguration(seed: 22))
        let central = air.central()
        let p = air.addPeripheral()
        try await p.advertise(payload(1))
        try await p.publish(service: service, characteristic: ballot, value: [9])
        air.run(until: at(1))
        let read = Task { try await central.readCharacteristic(device: p.address, service: service, characteristic: ballot, timeout: .seconds(5)) }
        await waitForPendingReads(air, 1)
        // Exchange alone takes 1.25 ms + 4 × 30 ms: nothing can come back before.
        air.run(until: at(1.12))
        XCTAssertEqual(air.pendingReads, 1)
        // Connection needs the next connectable PDU on the scanner's channel (≤ ~115 ms away), then the exchange.
        air.run(until: at(1.25))
        XCTAssertEqual(air.pendingReads, 0)
        let v = try await read.value
        XCTAssertEqual(v, [9])
    }

    func testReadFailures() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 23))
        let central = air.central()
        let p = air.addPeripheral()
        try await p.advertise(payload(1))
        try await p.publish(service: service, characteristic: ballot, value: [1])

        // Unknown device: fails at once.
        do {
            _ = try await central.readCharacteristic(device: DeviceAddress(rawValue: 0x1234), service: service, characteristic: ballot, timeout: .seconds(1))
            XCTFail("read from an absent device succeeded")
        } catch let e as TransportError { XCTAssertEqual(e, .notConnected(DeviceAddress(rawValue: 0x1234))) }

        // Characteristic not served.
        let other = UUID128(high: 1, low: 2)
        let missing = Task { try await central.readCharacteristic(device: p.address, service: service, characteristic: other, timeout: .seconds(2)) }
        await waitForPendingReads(air, 1)
        air.run(until: at(1))
        do { _ = try await missing.value; XCTFail("read of a missing characteristic succeeded") } catch let e as TransportError {
            XCTAssertEqual(e, .characteristicNotFound(other))
        }

        // Device leaves during the read.
        let leaving = Task { try await central.readCharacteristic(device: p.address, service: service, characteristic: ballot, timeout: .seconds(2)) }
        await waitForPendingReads(air, 1)
        air.schedule(after: .milliseconds(1)) { ctx in ctx.remove(p.address) }
        air.run(until: at(2))
        do { _ = try await leaving.value; XCTFail("read from a departed device succeeded") } catch let e as TransportError {
            XCTAssertEqual(e, .notConnected(p.address))
        }

        // Non-connectable advertiser (or one out of range): the initiator never hears a connectable PDU.
        let beacon = air.addPeripheral()
        try await beacon.advertise(payload(2, connectable: false))
        try await beacon.publish(service: service, characteristic: ballot, value: [2])
        let timesOut = Task { try await central.readCharacteristic(device: beacon.address, service: service, characteristic: ballot, timeout: .milliseconds(700)) }
        await waitForPendingReads(air, 1)
        let issued = air.now
        air.run(until: issued + .milliseconds(699))
        XCTAssertEqual(air.pendingReads, 1)
        air.run(until: issued + .milliseconds(700))
        do { _ = try await timesOut.value; XCTFail("read timed in") } catch let e as TransportError {
            guard case .timeout = e else { return XCTFail("expected timeout, got \(e)") }
        }
        XCTAssertEqual(air.statistics.readsFailed, 4)
    }

    func testConcurrentConnectionsAreBounded() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 24, connections: ConnectionConfiguration(maxConcurrent: 2)))
        let central = air.central()
        var addresses: [DeviceAddress] = []
        for i in 0..<8 {
            let p = air.addPeripheral()
            try await p.advertise(payload(i))
            try await p.publish(service: service, characteristic: ballot, value: [UInt8(i)])
            addresses.append(p.address)
        }
        let reads = addresses.map { a in
            Task { try await central.readCharacteristic(device: a, service: service, characteristic: ballot, timeout: .seconds(10)) }
        }
        await waitForPendingReads(air, 8)
        // Two at a time, each ≥ 121 ms of exchange: eight need at least four rounds.
        air.run(until: at(0.45))
        XCTAssertGreaterThan(air.pendingReads, 0)
        air.run(until: at(5))
        for (i, r) in reads.enumerated() {
            let v = try await r.value
            XCTAssertEqual(v, [UInt8(i)])
        }
        XCTAssertEqual(air.statistics.peakConnections, 2)
    }

    func testCancelledReadFreesItsSlot() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 25, connections: ConnectionConfiguration(maxConcurrent: 1)))
        let central = air.central()
        let silent = air.addPeripheral()  // present but never advertises: the read would wait
        try await silent.publish(service: service, characteristic: ballot, value: [0])
        let p = air.addPeripheral()
        try await p.advertise(payload(1))
        try await p.publish(service: service, characteristic: ballot, value: [7])
        let stuck = Task { try await central.readCharacteristic(device: silent.address, service: service, characteristic: ballot, timeout: .seconds(60)) }
        await waitForPendingReads(air, 1)
        let good = Task { try await central.readCharacteristic(device: p.address, service: service, characteristic: ballot, timeout: .seconds(60)) }
        await waitForPendingReads(air, 2)
        air.run(until: at(2))
        XCTAssertEqual(air.pendingReads, 2, "the second read waits for the only slot")
        stuck.cancel()
        do { _ = try await stuck.value; XCTFail("cancelled read succeeded") } catch { XCTAssertTrue(error is CancellationError) }
        air.run(until: at(4))
        let v = try await good.value
        XCTAssertEqual(v, [7])
    }
}
