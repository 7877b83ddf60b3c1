import ClickerSim
import ClickerTransport
import XCTest

/// Listening across the air socket: the tally's process hosts the air and broadcasts; a voter's process
/// listens through `RemotePeripheral`.
final class SocketListenTests: XCTestCase {
    let beaconCompany: UInt16 = 0x0A0A
    let duty = ScanDutyCycle(window: .milliseconds(30), interval: .milliseconds(100))
    let frames: [[UInt8]] = [[1, 1, 1], [2, 2], [3]]

    /// The host's air runs on the virtual clock; the socket carries, in order, exactly the reports that
    /// the same air in one process delivers to the same device (same seed, same steps).
    func testSocketCarriesExactlyWhatTheAirHears() async throws {
        let address = DeviceAddress(rawValue: 0x00AA_0100_0B0B)
        let config = AirConfiguration(seed: 91)

        // In one process.
        let twin = SimulatedAir(config)
        let twinStream = twin.addPeripheral(address: address, rssi: -58).listen(companyID: beaconCompany, dutyCycle: duty)
        try await twin.central().broadcast(BroadcastPayload(companyID: beaconCompany, frames: frames, interval: .milliseconds(30)))
        twin.run(until: at(5))
        let expected = try await drain(twin, twinStream)

        // Across the socket. The host closes after the run: the stream then yields what the socket carried
        // and ends, so that a report lost on the way fails the comparison instead of waiting forever.
        let air = SimulatedAir(config)
        let path = tempSocketPath("listen")
        let host = try air.host(path: path)
        let voter = try await SimulatedAir.connect(path: path, address: address, rssi: -58)
        let stream = try await voter.startListening(companyID: beaconCompany, dutyCycle: duty)
        try await air.central().broadcast(BroadcastPayload(companyID: beaconCompany, frames: frames, interval: .milliseconds(30)))
        air.run(until: at(5))
        await host.shutdown()
        var received: [AdvertisementReport] = []
        do {
            for try await r in stream { received.append(r) }
            XCTFail("the stream ended without an error when the host closed")
        } catch let e as TransportError {
            guard case .radioUnavailable = e else { return XCTFail("unexpected \(e)") }
        }
        XCTAssertEqual(air.statistics.listenerReportsDelivered, expected.count)
        XCTAssertGreaterThan(expected.count, 30)  // 5 s at ≈ 35 ms, heard ≈ 29 % of the time: ≈ 40
        XCTAssertEqual(received, expected)
        XCTAssertEqual(Set(received.map(\.data)), Set(frames))
        XCTAssertTrue(received.allSatisfy { $0.address == config.broadcast.centralAddress && $0.companyID == beaconCompany })
    }

    /// A listening stream dropped by its consumer stops the remote receiver: its stop reaches the host
    /// before the reply to the peripheral's next request.
    func testDroppedStreamStopsTheRemoteReceiver() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 93))
        let path = tempSocketPath("listen-stop")
        let host = try air.host(path: path)
        defer { host.close() }
        let voter = try await SimulatedAir.connect(path: path, rssi: -58)
        try await air.central().broadcast(BroadcastPayload(companyID: beaconCompany, frames: frames, interval: .milliseconds(30)))
        do {
            let stream = try await voter.startListening(companyID: beaconCompany, dutyCycle: duty)
            air.run(until: at(3))
            _ = stream
        }
        try await voter.stopAdvertising()  // any acknowledged request: the stop went out before it
        let delivered = air.statistics.listenerReportsDelivered
        XCTAssertGreaterThan(delivered, 10)
        air.run(until: at(8))
        XCTAssertEqual(air.statistics.listenerReportsDelivered, delivered, "reports after the listener stopped")
        await voter.shutdown()
    }

    /// A voter whose host went away sees its listening stream end with an error it can show.
    func testHostGoingAwayEndsTheListeningStream() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 92))
        let path = tempSocketPath("listen-gone")
        let host = try air.host(path: path)
        let voter = try await SimulatedAir.connect(path: path)
        let stream = try await voter.startListening(companyID: beaconCompany, dutyCycle: duty)
        await host.shutdown()
        do {
            for try await _ in stream {}
            XCTFail("the stream ended without an error")
        } catch let e as TransportError {
            guard case .radioUnavailable = e else { return XCTFail("unexpected \(e)") }
        }
    }

    /// Listening requests spoken by hand: malformed ones are refused and counted, a peer cannot send the
    /// host's own `report`, and a well-formed one makes the host push `report` frames to that peer.
    func testMalformedListeningRequestsAreRefused() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 94))
        let path = tempSocketPath("listen-raw")
        let host = try air.host(path: path)
        defer { host.close() }
        let raw = try RawClient(path: path)
        raw.frame(0x06, id: 1, [0, 0, 0, 1, 0x0A, 0x0A] + be32(30_000) + be32(100_000))
        XCTAssertEqual(raw.reply()?.code, 3)  // listen before hello
        raw.frame(0x01, id: 2, [0, 1] + [UInt8](repeating: 0, count: 7) + [0x42] + [0x7F, 0xFF])
        XCTAssertEqual(raw.reply()?.code, 0)
        raw.frame(0x06, id: 3, [0, 0, 0, 1, 0x0A, 0x0A] + be32(30_000))  // no interval
        XCTAssertEqual(raw.reply()?.code, 2)
        raw.frame(0x06, id: 4, [0, 0, 0, 1, 0x0A, 0x0A] + be32(30_000) + be32(100_000) + [9])  // trailing byte
        XCTAssertEqual(raw.reply()?.code, 2)
        raw.frame(0x82, id: 5, [0, 0, 0, 1])  // the host's own frame type
        XCTAssertEqual(raw.reply()?.code, 5)
        raw.frame(0x07, id: 6, [0, 0])  // short stop
        XCTAssertEqual(raw.reply()?.code, 2)
        XCTAssertEqual(host.statistics.framesRejected, 5)
        // Well-formed: stream 1 listens at full duty; the reports come tagged with stream 1.
        raw.frame(0x06, id: 7, [0, 0, 0, 1, 0x0A, 0x0A] + be32(100_000) + be32(100_000))
        XCTAssertEqual(raw.reply()?.code, 0)
        raw.frame(0x06, id: 8, [0, 0, 0, 1, 0x0A, 0x0A] + be32(100_000) + be32(100_000))
        XCTAssertEqual(raw.reply()?.code, 2)  // stream 1 already listens
        try await air.central().broadcast(BroadcastPayload(companyID: beaconCompany, frames: [[0xAB]], interval: .milliseconds(50)))
        air.run(until: at(0.2))
        XCTAssertGreaterThan(air.statistics.listenerReportsDelivered, 0)
        let report = try XCTUnwrap(raw.reply())  // (stream as the "id", first byte of the company as the "code")
        XCTAssertEqual(report.id, 1)
        XCTAssertEqual(report.code, 0x0A)
    }
}
