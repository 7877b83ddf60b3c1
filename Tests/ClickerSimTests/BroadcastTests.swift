import ClickerSim
import ClickerTransport
import XCTest

/// The central's broadcast and the peripherals' listening, against numbers computed apart from the simulator.
final class BroadcastTests: XCTestCase {
    /// A full legacy non-connectable frame: 27 bytes of data + the 4-byte MSD header = 31 bytes of AD, 376 µs.
    func frame(_ tag: UInt8) -> [UInt8] { [tag] + [UInt8](repeating: 0xBE, count: 26) }
    let a = 0.000376  // airtime of a 31-byte-AD PDU, s
    let gap = 0.0005  // AirConfiguration's default interChannelGap, s

    /// Listening devices started at staggered instants hear a fraction (W − a)/T of the broadcast events,
    /// and hear the first one after the time the geometry of scan windows and broadcast PDUs predicts.
    ///
    /// The geometry: during scan interval j the listener sits on channel c_j = j mod 3 for the window
    /// [jT, jT + W). An event at phase φ puts the PDU for channel c at φ + o_c (o_c = c(a + gap)); that PDU
    /// is heard when it lies wholly inside a window on channel c. Per channel that is a set of phases of
    /// measure W − a per scan cycle of 3T, so over a uniform phase p = (W − a)/T.
    ///
    /// The first hearing is not geometric: with T = 10 ms and a broadcast every 100 ms + advDelay
    /// U(0, 10 ms), the next event's phase φ' = (φ + δ) mod T is uniform, but its channel is the last one
    /// plus 1, or plus 2 when φ + δ wraps, and the listener's chances differ by channel (a PDU on 39 comes
    /// 2(a + gap) into the event). `expectedFirstHearing` solves that Markov chain on (channel, phase).
    func testListenerHearsItsDutyCycleOfTheBroadcastAfterTheExpectedTime() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 41))
        let central = air.central()
        try await central.broadcast(BroadcastPayload(companyID: companyID, frames: [frame(1)], interval: .milliseconds(100)))
        let duty = ScanDutyCycle(window: .milliseconds(3), interval: .milliseconds(10))
        let n = 900
        var starts: [Double] = [], streams: [AsyncThrowingStream<AdvertisementReport, any Error>] = []
        for k in 0..<n {
            // Staggered by more than an event interval: each listener meets its own run of events (listeners
            // starting between the same two events would share their advDelays, and their samples).
            let start = 0.5 + Double(k) * 0.1137
            air.run(until: at(start))
            starts.append(start)
            streams.append(air.addPeripheral(rssi: -60).listen(companyID: companyID, dutyCycle: duty))
        }
        let end = starts.last! + 8
        air.run(until: at(end))
        air.finishAdvertisementStreams()
        var firsts: [Double] = [], heard = 0
        for (k, s) in streams.enumerated() {
            var first: Double?
            for try await r in s {
                XCTAssertEqual(r.address, air.configuration.broadcast.centralAddress)
                XCTAssertEqual(r.data, frame(1))
                XCTAssertGreaterThanOrEqual(r.timestamp.seconds, starts[k])
                if first == nil { first = r.timestamp.seconds - starts[k] }
                heard += 1
            }
            firsts.append(try XCTUnwrap(first, "listener \(k) never heard the broadcast"))
        }
        let w = 0.003, t = 0.010, meanX = 0.105, meanX2 = (0.010 * 0.010) / 12 + meanX * meanX
        let p = (w - a) / t
        // Rate: heard reports over the events each listener's span held.
        let listenedSeconds = starts.map { end - $0 }.reduce(0, +)
        let rate = Double(heard) / (listenedSeconds / meanX)
        XCTAssertEqual(rate, p, accuracy: 0.03 * p, "heard \(rate) of the events, model \(p)")
        // First hearing, against the chain, and against the naive geometric guess it must beat.
        let expected = expectedFirstHearing(window: w, interval: t)
        let geometric = meanX2 / (2 * meanX) + (1 / p - 1) * meanX + (2 * a + gap)
        let mean = firsts.reduce(0, +) / Double(n)
        XCTAssertEqual(mean, expected, accuracy: 0.08 * expected, "mean first hearing \(mean) s, model \(expected) s (geometric \(geometric) s)")
        let s = air.statistics
        XCTAssertEqual(s.broadcastPDUsHeard, heard)
        XCTAssertEqual(s.broadcastCollisions + s.broadcastMissedWhileTransmitting + s.broadcastOutOfRange, 0)
    }

    /// The central's scanner is deaf while its broadcast's PDUs are in the air: a peripheral's PDU of airtime
    /// a_v is lost when it overlaps one of the three broadcast PDUs (airtime a_b), a fraction
    /// 3(a_b + a_v) / Ī of them, Ī the broadcast's mean event interval (interval + 5 ms mean advDelay).
    /// Measured twice: against the scanner's own count of what it listened to, and as reports lost
    /// against the same room without a broadcast.
    func testBroadcastCostsTheCentralItsAirtimeShare() async throws {
        func run(broadcast: Bool, deafness: BroadcastDeafness = .packets) async throws -> (reports: Int, stats: AirStatistics) {
            let air = SimulatedAir(AirConfiguration(seed: 77, broadcast: BroadcastConfiguration(deafness: deafness)))
            let central = air.central()
            let stream = central.advertisements(companyID: companyID)
            try await air.addPeripheral(rssi: -60).advertise(payload(1, interval: .milliseconds(20)))
            if broadcast {
                try await central.broadcast(BroadcastPayload(companyID: 0x0A0A, frames: [frame(1)], interval: .milliseconds(20)))
            }
            air.run(until: at(900))
            return (try await drain(air, stream).count, air.statistics)
        }
        let quiet = try await run(broadcast: false), loud = try await run(broadcast: true)
        let share = 3 * (a + a) / 0.025
        let missed = Double(loud.stats.missedWhileBroadcasting) / Double(loud.stats.pdusListened)
        XCTAssertEqual(missed, share, accuracy: 0.005, "scanner missed \(missed) of what it listened to; model \(share)")
        let drop = 1 - Double(loud.reports) / Double(quiet.reports)
        XCTAssertEqual(drop, share, accuracy: 0.01, "reports dropped by \(drop); model \(share)")
        XCTAssertEqual(quiet.stats.missedWhileBroadcasting, 0)
        XCTAssertGreaterThan(loud.stats.broadcastPDUs, 3 * 35_000)
        // A controller that suspends the scan for the whole event pays the gaps too: (3a_b + 2gap + a_v) / Ī.
        let whole = try await run(broadcast: true, deafness: .wholeEvent)
        let wholeShare = (3 * a + 2 * gap + a) / 0.025
        let wholeMissed = Double(whole.stats.missedWhileBroadcasting) / Double(whole.stats.pdusListened)
        XCTAssertEqual(wholeMissed, wholeShare, accuracy: 0.005, "whole-event deafness \(wholeMissed); model \(wholeShare)")
    }

    /// No advDelay and synchronized starts make the timing exact: the broadcast and a ballot start at the same
    /// instant, their PDUs overlap on every channel, and both are lost; 50 ms apart, both get through.
    /// The broadcasting controller is not the scanning one here, so the ballots are lost to collisions alone.
    func testBroadcastAndBallotOverlappingOnAChannelAreBothLost() async throws {
        func run(broadcastDelay: Double) async throws -> (ballots: Int, beacons: Int, stats: AirStatistics) {
            let air = SimulatedAir(AirConfiguration(
                seed: 5, scanners: [ScannerConfiguration(channels: [37])], maxAdvertisingDelay: .zero,
                firstEventPhase: .immediate, broadcast: BroadcastConfiguration(broadcastingScanner: nil, listenChannels: [37])))
            let central = air.central()
            let ballots = central.advertisements(companyID: companyID)
            let listener = air.addPeripheral(rssi: -60)
            let beacons = listener.listen(companyID: 0x0A0A, dutyCycle: ScanDutyCycle(window: .milliseconds(100), interval: .milliseconds(100)))
            try await air.addPeripheral(rssi: -60).advertise(payload(1, interval: .milliseconds(100)))
            air.run(until: at(broadcastDelay))
            try await central.broadcast(BroadcastPayload(companyID: 0x0A0A, frames: [frame(1)], interval: .milliseconds(100)))
            air.run(until: at(10))
            air.finishAdvertisementStreams()
            var nb = 0, nl = 0
            for try await _ in ballots { nb += 1 }
            for try await _ in beacons { nl += 1 }
            return (nb, nl, air.statistics)
        }
        let overlapping = try await run(broadcastDelay: 0)
        XCTAssertEqual(overlapping.ballots, 0, "a ballot overlapping the broadcast on its channel was heard")
        XCTAssertEqual(overlapping.beacons, 0, "a broadcast PDU overlapping a ballot on its channel was heard")
        XCTAssertEqual(overlapping.stats.collisions, 100)
        XCTAssertEqual(overlapping.stats.broadcastCollisions, 100)
        let apart = try await run(broadcastDelay: 0.05)
        XCTAssertEqual(apart.ballots, 100)
        XCTAssertEqual(apart.beacons, 100)
        XCTAssertEqual(apart.stats.collisions + apart.stats.broadcastCollisions, 0)
    }

    /// A device does not hear while it transmits: its own PDU on channel 37 overlaps in time the broadcast's
    /// PDU on channel 38 (no collision: different channels), which a device listening on 38 then misses,
    /// while a silent neighbour on 38 hears every one.
    func testListenerTransmittingDoesNotHear() async throws {
        let air = SimulatedAir(AirConfiguration(
            seed: 6, maxAdvertisingDelay: .zero, firstEventPhase: .immediate,
            broadcast: BroadcastConfiguration(listenChannels: [38])))
        let central = air.central()
        let full = ScanDutyCycle(window: .milliseconds(100), interval: .milliseconds(100))
        let talker = air.addPeripheral(rssi: -60), silent = air.addPeripheral(rssi: -60)
        let talkerHears = talker.listen(companyID: 0x0A0A, dutyCycle: full)
        let silentHears = silent.listen(companyID: 0x0A0A, dutyCycle: full)
        // Broadcast PDUs at 0, 876, 1752 µs into each event; the talker's at 1000, 1876, 2752 µs: its
        // channel-37 PDU [1000, 1376) overlaps the broadcast's channel-38 PDU [876, 1252).
        try await central.broadcast(BroadcastPayload(companyID: 0x0A0A, frames: [frame(1)], interval: .milliseconds(100)))
        air.run(until: at(0.001))
        try await talker.advertise(payload(1, interval: .milliseconds(100)))
        air.run(until: at(10))
        air.finishAdvertisementStreams()
        var t = 0, s = 0
        for try await _ in talkerHears { t += 1 }
        for try await _ in silentHears { s += 1 }
        XCTAssertEqual(t, 0, "a device heard while it was transmitting")
        XCTAssertEqual(s, 100)
        XCTAssertEqual(air.statistics.broadcastMissedWhileTransmitting, 100)
        XCTAssertEqual(air.statistics.broadcastCollisions, 0)
    }

    /// With `listenBuffer`, a listener whose reader lags keeps only the newest frames (the real-time air
    /// of `clicker-tally` uses 8, so that a lagging `--simulate` room cannot queue frames without bound);
    /// without it, every frame waits.
    func testAListenBufferKeepsOnlyTheNewestFramesForALaggingReader() async throws {
        for limit in [4, nil] as [Int?] {
            let air = SimulatedAir(AirConfiguration(
                seed: 6, maxAdvertisingDelay: .zero, firstEventPhase: .immediate,
                broadcast: BroadcastConfiguration(listenChannels: [38], listenBuffer: limit)))
            let full = ScanDutyCycle(window: .milliseconds(100), interval: .milliseconds(100))
            let heard = air.addPeripheral(rssi: -60).listen(companyID: 0x0A0A, dutyCycle: full)
            try await air.central().broadcast(BroadcastPayload(companyID: 0x0A0A, frames: (1...10).map(frame),
                                                               interval: .milliseconds(100)))
            air.run(until: at(2))   // 20 events, none read yet
            air.finishAdvertisementStreams()
            var tags: [UInt8] = []
            for try await r in heard { tags.append(r.data[0]) }
            if let limit {
                XCTAssertEqual(tags.count, limit, "\(tags)")
                XCTAssertEqual(tags.last, 10, "the newest kept")
            } else {
                XCTAssertEqual(tags.count, 20)
            }
        }
    }

    /// The frames go out one per event, in order, round and round; a replacement starts with its first frame
    /// at the next event.
    func testFramesRotateOnePerEvent() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 8, broadcast: BroadcastConfiguration(listenChannels: [37])))
        let central = air.central()
        let heard = air.addPeripheral(rssi: -50).listen(companyID: 0x0A0A,
                                                       dutyCycle: ScanDutyCycle(window: .seconds(1), interval: .seconds(1)))
        try await central.broadcast(BroadcastPayload(companyID: 0x0A0A, frames: [frame(1), frame(2), frame(3)],
                                                     interval: .milliseconds(20)))
        air.run(until: at(1))
        let firstEvents = air.statistics.broadcastEvents
        try await central.broadcast(BroadcastPayload(companyID: 0x0A0A, frames: [frame(7), [8]], interval: .milliseconds(20)))
        air.run(until: at(2))
        air.finishAdvertisementStreams()
        var tags: [UInt8] = []
        for try await r in heard { tags.append(r.data[0]) }
        let events = air.statistics.broadcastEvents  // the last one may still be in the air at t = 2 s
        XCTAssertTrue(tags.count == events || tags.count == events - 1, "\(tags.count) frames heard in \(events) events")
        let before = Array(tags.prefix(firstEvents)), after = Array(tags.dropFirst(firstEvents))
        XCTAssertEqual(before, (0..<firstEvents).map { UInt8($0 % 3 + 1) })
        XCTAssertEqual(after, (0..<after.count).map { $0 % 2 == 0 ? 7 : 8 })
        XCTAssertGreaterThan(after.count, 30)
        // Frames that do not fit legacy non-connectable advertising, and no frames at all, are refused.
        for bad in [[[UInt8](repeating: 0, count: 28)], []] {
            do {
                try await central.broadcast(BroadcastPayload(companyID: 0x0A0A, frames: bad))
                XCTFail("broadcast of \(bad.map(\.count)) accepted")
            } catch let e as TransportError {
                guard case .unsupported = e else { return XCTFail("unexpected \(e)") }
            }
        }
        let capabilities = try await central.broadcastCapabilities()
        XCTAssertEqual(capabilities, .legacy)
        try await central.stopBroadcasting()
        let stopped = air.statistics.broadcastEvents
        air.run(until: at(3))
        XCTAssertEqual(air.statistics.broadcastEvents, stopped, "events after stopBroadcasting")
    }

    /// Intervals BLE does not allow are clamped, and the radio's status says so.
    func testIntervalsOutsideWhatBLEAllowsAreClampedAndNoted() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 9, broadcast: BroadcastConfiguration(listenChannels: [37])))
        let central = air.central()
        var centralStatus = central.status().makeAsyncIterator()
        _ = await centralStatus.next()
        try await central.broadcast(BroadcastPayload(companyID: 0x0A0A, frames: [frame(1)], interval: .milliseconds(5)))
        let noted = await centralStatus.next()
        XCTAssertNotNil(noted?.lastError, "a 5 ms broadcast interval was not noted")
        let device = air.addPeripheral(rssi: -60)
        var deviceStatus = device.status().makeAsyncIterator()
        _ = await deviceStatus.next()
        let heard = device.listen(companyID: 0x0A0A, dutyCycle: ScanDutyCycle(window: .milliseconds(1), interval: .milliseconds(1)))
        let listening = await deviceStatus.next()
        XCTAssertEqual(listening?.state, .scanning)
        XCTAssertNotNil(listening?.lastError, "a 1 ms scan interval was not noted")
        air.run(until: at(2))
        air.finishAdvertisementStreams()
        var n = 0
        for try await _ in heard { n += 1 }
        // At most one event per 20 ms (not per 5 ms); the receiver listens all the time (2.5 ms of 2.5 ms)
        // on 37, but a PDU that crosses a scan interval's end is lost: about (2.5 − 0.376)/2.5 of them heard.
        XCTAssertLessThanOrEqual(air.statistics.broadcastEvents, 100)
        XCTAssertGreaterThan(air.statistics.broadcastEvents, 75)
        XCTAssertEqual(Double(n) / Double(air.statistics.broadcastEvents), (2.5 - 0.376) / 2.5, accuracy: 0.1)
        try await central.broadcast(BroadcastPayload(companyID: 0x0A0A, frames: [frame(1)], interval: .milliseconds(20)))
        let cleared = await centralStatus.next()
        XCTAssertNil(cleared?.lastError)
    }

    /// The configuration's listening duty cycle overrides what the listeners ask for.
    func testConfiguredDutyCycleOverridesTheRequest() async throws {
        func heardFraction(override: ScanDutyCycle?) async throws -> Double {
            let air = SimulatedAir(AirConfiguration(seed: 10, broadcast: BroadcastConfiguration(listenDutyCycle: override)))
            try await air.central().broadcast(BroadcastPayload(companyID: 0x0A0A, frames: [frame(1)], interval: .milliseconds(100)))
            let heard = air.addPeripheral(rssi: -60).listen(companyID: 0x0A0A,
                                                           dutyCycle: ScanDutyCycle(window: .milliseconds(10), interval: .milliseconds(10)))
            air.run(until: at(200))
            let n = try await drain(air, heard).count
            return Double(n) / Double(air.statistics.broadcastEvents)
        }
        let asked = try await heardFraction(override: nil)
        let overridden = try await heardFraction(override: ScanDutyCycle(window: .milliseconds(3), interval: .milliseconds(10)))
        XCTAssertGreaterThan(asked, 0.9)  // full duty: all but PDUs crossing an interval's end
        XCTAssertEqual(overridden, (3 - 0.376) / 10, accuracy: 0.03)
    }

    /// Expected time from the start of listening (window `window` every `interval`, channels 37, 38, 39 in
    /// turn, the first at the start) to the end of the first broadcast PDU heard, for a broadcast every
    /// 100 ms + U(0, 10 ms) whose events are at a uniformly random phase to the start. Phases on a 50 µs
    /// grid; value iteration on V(channel, phase) = expected time from an event to the end of the first
    /// PDU heard.
    func expectedFirstHearing(window w: Double, interval t: Double) -> Double {
        let step = 0.00005, steps = Int((t / step).rounded()), base = 0.100, jitter = 0.010
        let jitterSteps = Int((jitter / step).rounded())
        // When an event at phase φ in an interval on channel index ci is heard: the heard PDU's end, from the event's start.
        func heard(_ ci: Int, _ phi: Double) -> Double? {
            for c in 0..<3 {
                let u = phi + Double(c) * (a + gap)
                let j = (u / t).rounded(.down)
                guard (ci + Int(j)) % 3 == c, u - j * t + a <= w + 1e-12 else { continue }
                return Double(c) * (a + gap) + a
            }
            return nil
        }
        let intervalsPerBase = Int((base / t).rounded())
        var v = [[Double]](repeating: [Double](repeating: 0, count: steps), count: 3)
        for _ in 0..<150 {
            var next = v
            for ci in 0..<3 {
                for k in 0..<steps {
                    if let end = heard(ci, Double(k) * step) { next[ci][k] = end; continue }
                    var sum = 0.0
                    for d in 0...jitterSteps {  // trapezoid over δ
                        let weight = (d == 0 || d == jitterSteps) ? 0.5 : 1.0
                        let total = k + d, wraps = total / steps
                        sum += weight * (base + Double(d) * step + v[(ci + intervalsPerBase + wraps) % 3][total % steps])
                    }
                    next[ci][k] = sum / Double(jitterSteps)
                }
            }
            v = next
        }
        // The first event's delay R after the start: the renewal residual, density P(X > r)/E[X].
        let meanX = base + jitter / 2
        var expected = 0.0, mass = 0.0
        for k in 0..<Int(((base + jitter) / step).rounded()) {
            let r = (Double(k) + 0.5) * step
            let density = (r < base ? 1 : max(0, 1 - (r - base) / jitter)) / meanX
            let j = Int((r / t).rounded(.down)), phase = Int(((r - Double(j) * t) / step).rounded(.down)) % steps
            expected += density * step * (r + v[j % 3][phase])
            mass += density * step
        }
        return expected / mass
    }
}
