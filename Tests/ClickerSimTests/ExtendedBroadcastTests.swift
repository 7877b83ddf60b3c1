import ClickerSim
import ClickerTransport
import XCTest

/// The central's extended broadcast (`BroadcastConfiguration.extended`): a short ADV_EXT_IND on each
/// primary channel, then the frame in one AUX_ADV_IND on a secondary channel that no ballot touches.
/// Times are computed here from the PDU layouts, apart from the simulator.
final class ExtendedBroadcastTests: XCTestCase {
    let beacon: UInt16 = 0x0A0A
    let ind = 0.000136  // ADV_EXT_IND: 17 bytes at 1 Mb/s
    let gap = 0.0005  // AirConfiguration's default interChannelGap
    let a = 0.000376  // a ballot's PDU, 31 bytes of AD
    /// AUX_ADV_IND with `n` bytes of manufacturer data: 20 + 4 + n bytes at 8 µs.
    func aux(_ n: Int) -> Double { Double(24 + n) * 0.000008 }
    let full = ScanDutyCycle(window: .milliseconds(100), interval: .milliseconds(100))

    func exact(extended: Bool = true, channel: UInt8 = 37, seed: UInt64 = 3) -> SimulatedAir {
        SimulatedAir(AirConfiguration(seed: seed, scanners: [ScannerConfiguration(channels: [channel])],
                                      maxAdvertisingDelay: .zero, firstEventPhase: .immediate,
                                      broadcast: BroadcastConfiguration(broadcastingScanner: nil, listenChannels: [channel],
                                                                        extended: extended)))
    }

    /// A 247-byte frame arrives whole, when its AUX_ADV_IND ends: three indications and two gaps, the
    /// 300 µs AuxPtr offset, then 271 bytes of air; 248 bytes are refused, and the capabilities say 247.
    func testAFrameOf247BytesArrivesAfterTheIndicationsAndItsAuxiliaryPacket() async throws {
        let air = exact()
        let central = air.central()
        let capabilities = try await central.broadcastCapabilities()
        XCTAssertEqual(capabilities, BroadcastCapabilities(maxFrameLength: 247, extended: true))
        let heard = air.addPeripheral(rssi: -60).listen(companyID: beacon, dutyCycle: full)
        let frame = (0..<247).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try await central.broadcast(BroadcastPayload(companyID: beacon, frames: [frame], interval: .milliseconds(100)))
        air.run(until: at(1.05))
        air.finishAdvertisementStreams()
        var times: [Double] = []
        for try await r in heard {
            XCTAssertEqual(r.data, frame)
            times.append(r.timestamp.seconds)
        }
        let offset = 3 * ind + 2 * gap + 0.0003 + aux(247)
        XCTAssertEqual(times.count, 11)
        for (k, t) in times.enumerated() { XCTAssertEqual(t, Double(k) * 0.1 + offset, accuracy: 1e-9) }
        XCTAssertEqual(air.statistics.broadcastIndicationsHeard, 11)
        do {
            try await central.broadcast(BroadcastPayload(companyID: beacon, frames: [[UInt8](repeating: 0, count: 248)]))
            XCTFail("a 248-byte frame was accepted")
        } catch TransportError.unsupported {}
        // The legacy air refuses what the extended one takes.
        let legacy = exact(extended: false).central()
        do {
            try await legacy.broadcast(BroadcastPayload(companyID: beacon, frames: [frame]))
            XCTFail("legacy broadcast of 247 bytes accepted")
        } catch TransportError.unsupported {}
    }

    /// Only the 136 µs indication competes with ballots: a ballot starting 200 µs after the broadcast's
    /// event overlaps a legacy broadcast PDU (376 µs) on every channel and both are lost, but clears the
    /// indication, and both get through.
    func testOnlyTheShortIndicationCollidesWithBallots() async throws {
        func run(extended: Bool) async throws -> (ballots: Int, beacons: Int) {
            let air = exact(extended: extended)
            let central = air.central()
            let ballots = central.advertisements(companyID: companyID)
            let beacons = air.addPeripheral(rssi: -60).listen(companyID: beacon, dutyCycle: full)
            try await central.broadcast(BroadcastPayload(companyID: beacon, frames: [[UInt8](repeating: 1, count: 27)],
                                                         interval: .milliseconds(100)))
            air.run(until: at(0.0002))
            try await air.addPeripheral(rssi: -60).advertise(payload(1, interval: .milliseconds(100)))
            air.run(until: at(9.99))
            air.finishAdvertisementStreams()
            var nb = 0, nl = 0
            for try await _ in ballots { nb += 1 }
            for try await _ in beacons { nl += 1 }
            return (nb, nl)
        }
        let legacy = try await run(extended: false)
        XCTAssertEqual(legacy.ballots, 0)
        XCTAssertEqual(legacy.beacons, 0)
        let extended = try await run(extended: true)
        XCTAssertEqual(extended.ballots, 100)
        XCTAssertEqual(extended.beacons, 100)
    }

    /// A listener that hears the indication but transmits during the auxiliary packet misses the frame;
    /// a silent neighbour hears every one.
    func testAListenerTransmittingDuringTheAuxiliaryPacketMissesTheFrame() async throws {
        let air = exact(channel: 38)
        let central = air.central()
        let talker = air.addPeripheral(rssi: -60), silent = air.addPeripheral(rssi: -60)
        let talkerHears = talker.listen(companyID: beacon, dutyCycle: full)
        let silentHears = silent.listen(companyID: beacon, dutyCycle: full)
        try await central.broadcast(BroadcastPayload(companyID: beacon, frames: [[UInt8](repeating: 2, count: 100)],
                                                     interval: .milliseconds(100)))
        // The indication on 38 is on air at [636, 772) µs; the auxiliary packet (100 bytes) at [1708, 2700) µs. The
        // talker's PDUs at [1500, 1876), [2376, 2752), [3252, 3628) µs: the first two overlap the latter.
        air.run(until: at(0.0015))
        try await talker.advertise(payload(1, interval: .milliseconds(100)))
        air.run(until: at(9.99))
        air.finishAdvertisementStreams()
        var t = 0, s = 0
        for try await _ in talkerHears { t += 1 }
        for try await _ in silentHears { s += 1 }
        XCTAssertEqual(t, 0, "a device heard an auxiliary packet while transmitting")
        XCTAssertEqual(s, 100)
        let stats = air.statistics
        XCTAssertEqual(stats.broadcastIndicationsHeard, 200)
        XCTAssertEqual(stats.broadcastAuxiliaryMissedWhileTransmitting, 100)
        XCTAssertEqual(stats.broadcastPDUsHeard, 100)
    }

    /// The broadcasting controller is deaf while its own PDUs are in the air, the auxiliary packet
    /// included: a ballot on channel 37 at [1800, 2176) µs overlaps no indication but the auxiliary
    /// packet at [1708, 2700) µs, and is lost to the scanner on that controller, heard by a second
    /// controller's. A ballot at [200, 576) µs falls between the indications: lost only when the
    /// controller suspends its scan for the whole event.
    func testTheCentralIsDeafDuringItsIndicationsAndItsAuxiliaryPacket() async throws {
        func heard(ballotAt start: Double, scanner: Int?, deafness: BroadcastDeafness = .packets) async throws -> Int {
            let air = SimulatedAir(AirConfiguration(
                seed: 4, scanners: [ScannerConfiguration(channels: [37])], maxAdvertisingDelay: .zero, firstEventPhase: .immediate,
                broadcast: BroadcastConfiguration(broadcastingScanner: scanner, deafness: deafness, extended: true)))
            let central = air.central()
            let ballots = central.advertisements(companyID: companyID)
            try await central.broadcast(BroadcastPayload(companyID: beacon, frames: [[UInt8](repeating: 4, count: 100)],
                                                         interval: .milliseconds(100)))
            air.run(until: at(start))
            try await air.addPeripheral(rssi: -60).advertise(payload(1, interval: .milliseconds(100)))
            air.run(until: at(9.99))
            return try await drain(air, ballots).count
        }
        let duringAuxiliary = try await heard(ballotAt: 0.0018, scanner: 0)
        XCTAssertEqual(duringAuxiliary, 0, "a ballot during the auxiliary packet was heard by the broadcasting controller")
        let secondController = try await heard(ballotAt: 0.0018, scanner: nil)
        XCTAssertEqual(secondController, 100)
        let betweenIndications = try await heard(ballotAt: 0.0002, scanner: 0)
        XCTAssertEqual(betweenIndications, 100)
        let wholeEvent = try await heard(ballotAt: 0.0002, scanner: 0, deafness: .wholeEvent)
        XCTAssertEqual(wholeEvent, 0)
    }

    /// Among N ballots at interval I a listener hears a broadcast event when nothing overlaps the PDU on its
    /// channel: about e^(−N(a + b)/Ī), b the broadcast PDU's airtime. With the extended broadcast b is the
    /// indication's 136 µs instead of the legacy 376 µs: 0.614 against 0.489 for 100 ballots at 100 ms.
    /// Two advertisers' relative phase drifts only by their advDelays (a few ms an event), so one run's
    /// collision pattern persists for minutes: the fraction is taken over 8 seeds.
    func testInALoadedRoomTheExtendedFrameIsHeardAsTheModelSays() async throws {
        func fraction(extended: Bool) async throws -> Double {
            var heard = 0, events = 0
            for seed: UInt64 in 21...28 {
                let air = SimulatedAir(AirConfiguration(seed: seed, broadcast: BroadcastConfiguration(
                    broadcastingScanner: nil, listenChannels: [37], extended: extended)))
                let central = air.central()
                let listener = air.addPeripheral(rssi: -60).listen(companyID: beacon, dutyCycle: full)
                for i in 0..<100 { try await air.addPeripheral(rssi: -60).advertise(payload(i, interval: .milliseconds(100))) }
                try await central.broadcast(BroadcastPayload(companyID: beacon, frames: [[UInt8](repeating: 3, count: 27)],
                                                             interval: .milliseconds(100)))
                air.run(until: at(30))
                air.finishAdvertisementStreams()
                for try await _ in listener { heard += 1 }
                events += air.statistics.broadcastPDUsListened
            }
            return Double(heard) / Double(events)
        }
        let meanInterval = 0.105
        let legacyModel = exp(-100 * (a + a) / meanInterval), extendedModel = exp(-100 * (a + ind) / meanInterval)
        let legacy = try await fraction(extended: false), extended = try await fraction(extended: true)
        XCTAssertEqual(legacy, legacyModel, accuracy: 0.02, "legacy heard \(legacy), model \(legacyModel)")
        XCTAssertEqual(extended, extendedModel, accuracy: 0.02, "extended heard \(extended), model \(extendedModel)")
    }
}
