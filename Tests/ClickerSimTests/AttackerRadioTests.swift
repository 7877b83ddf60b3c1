import ClickerSim
import ClickerTransport
import XCTest

/// The attacker's radio (`SimulatedAir.addAttacker`, `connectAttacker`): it hears the central's broadcast
/// and the peripherals' advertisements, and listeners hear what it transmits, at its real airtime.
final class AttackerRadioTests: XCTestCase {
    let beacon: [UInt8] = [0x01] + [UInt8](repeating: 0xB0, count: 23)
    let ballot: [UInt8] = [0x02] + [UInt8](repeating: 0xBA, count: 20)
    let forged: [UInt8] = [0x03] + [UInt8](repeating: 0xF0, count: 23)

    /// 10 s of a tally broadcasting every 30 ms, a voter advertising every 100 ms, and an attacker sending
    /// its frame every 20 ms (about 455 events at advDelay's mean 5 ms): the attacker records both
    /// others, and a follower hears the forged frame at that rate, minus its one channel in three
    /// of a continuous scan. Without an attacker a listener hears no peripheral (the old air).
    func testAttackerHearsBroadcastAndBallotsAndFollowersHearItsFrames() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 17))
        let continuous = ScanDutyCycle(window: .milliseconds(100), interval: .milliseconds(100))
        let scanner = air.central().advertisements(companyID: companyID)
        try await air.central().broadcast(BroadcastPayload(companyID: companyID, frames: [beacon], interval: .milliseconds(30)))
        let voter = air.addPeripheral(rssi: -60)
        try await voter.advertise(AdvertisingPayload(companyID: companyID, data: ballot, interval: .milliseconds(100)))
        let follower = air.addPeripheral(rssi: -60).listen(companyID: companyID, dutyCycle: continuous)
        let bystander = air.addPeripheral(rssi: -60).listen(companyID: companyID, dutyCycle: continuous)
        air.run(until: at(1))
        let attacker = air.addAttacker(rssi: -50)
        let recording = attacker.listen(companyID: companyID, dutyCycle: continuous)
        try await attacker.advertise(AdvertisingPayload(companyID: companyID, data: forged, interval: .milliseconds(20),
                                                        connectable: false))
        air.run(until: at(11))
        air.finishAdvertisementStreams()

        let recorded = try await drain(air, recording)
        let heardBeacon = recorded.filter { $0.address == air.configuration.broadcast.centralAddress && $0.data == beacon }
        let heardBallot = recorded.filter { $0.address == voter.address && $0.data == ballot }
        XCTAssertGreaterThan(heardBeacon.count, 150, "10 s of a 30 ms broadcast, one channel in three")
        XCTAssertGreaterThan(heardBallot.count, 40, "10 s of a 100 ms ballot, one channel in three")
        XCTAssertFalse(recorded.contains { $0.data == forged }, "the attacker does not hear itself")

        let followed = try await drain(air, follower)
        let forgeries = followed.filter { $0.data == forged }
        XCTAssertFalse(followed.contains { $0.data == ballot }, "a follower hears no voter's ballot")
        XCTAssertTrue(forgeries.allSatisfy { $0.address == attacker.address && $0.timestamp >= at(1) })
        // ≈ 455 events, each heard on the follower's channel of the moment unless a PDU overlapped it.
        XCTAssertGreaterThan(forgeries.count, 300)
        XCTAssertLessThan(forgeries.count, 500)
        XCTAssertGreaterThan(air.statistics.attackerPDUsHeard, 600, "two followers")
        let other = try await drain(air, bystander)
        XCTAssertGreaterThan(other.filter { $0.data == forged }.count, 300)
        // The central's scanners hear the forged frames too (the tally can see a forgery).
        let scanned = try await drain(air, scanner)
        XCTAssertGreaterThan(scanned.filter { $0.data == forged }.count, 100)
    }

    /// Across the socket: an attacker that joined the hosted air records the broadcast and a voter's
    /// ballot, and a listener in another "process" hears its frames.
    func testAttackerJoinsTheSocketAir() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 23))
        let path = tempSocketPath("attacker")
        let host = try air.host(path: path)
        let continuous = ScanDutyCycle(window: .milliseconds(100), interval: .milliseconds(100))
        try await air.central().broadcast(BroadcastPayload(companyID: companyID, frames: [beacon], interval: .milliseconds(30)))
        let voter = air.addPeripheral(rssi: -60)
        try await voter.advertise(AdvertisingPayload(companyID: companyID, data: ballot, interval: .milliseconds(100)))
        let follower = try await SimulatedAir.connect(path: path, rssi: -60)
        let followed = try await follower.startListening(companyID: companyID, dutyCycle: continuous)
        let attacker = try await SimulatedAir.connectAttacker(path: path, rssi: -50)
        let recording = try await attacker.startListening(companyID: companyID, dutyCycle: continuous)
        try await attacker.advertise(AdvertisingPayload(companyID: companyID, data: forged, interval: .milliseconds(20),
                                                        connectable: false))
        air.run(until: at(5))
        await host.shutdown()
        var recorded: [AdvertisementReport] = [], heard: [AdvertisementReport] = []
        do { for try await r in recording { recorded.append(r) } } catch {}
        do { for try await r in followed { heard.append(r) } } catch {}
        XCTAssertTrue(recorded.contains { $0.data == beacon })
        XCTAssertTrue(recorded.contains { $0.address == voter.address && $0.data == ballot })
        XCTAssertGreaterThan(heard.filter { $0.data == forged && $0.address == attacker.address }.count, 100)
    }
}
