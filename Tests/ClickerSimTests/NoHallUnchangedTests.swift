import ClickerSim
import ClickerTransport
import XCTest

/// Without a hall the air behaves exactly as before receivers and path loss existed: a seeded run that
/// exercises scanning, capture, random loss, RSSI noise, the broadcast with its deafness, listeners, an
/// attacker and GATT reads gives the fingerprint recorded from the simulator before the hall was added.
final class NoHallUnchangedTests: XCTestCase {
    /// FNV-1a over every byte fed to it.
    struct FNV {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        mutating func add(_ bytes: some Sequence<UInt8>) { for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01B3 } }
        mutating func add(_ x: UInt64) { add((0..<8).map { UInt8(truncatingIfNeeded: x >> (8 * $0)) }) }
        mutating func add(_ r: AdvertisementReport) {
            add(r.address.rawValue); add(UInt64(bitPattern: Int64(r.rssi ?? 127))); add(r.timestamp.nanoseconds); add(r.data)
        }
    }

    func fingerprint() async throws -> (UInt64, AirStatistics) {
        let air = SimulatedAir(AirConfiguration(seed: 2024, captureThreshold: 6, lossProbability: 0.05))
        let central = air.central()
        let scanned = central.advertisements(companyID: companyID)
        try await central.broadcast(BroadcastPayload(companyID: companyID, frames: [[1] + [UInt8](repeating: 0xBE, count: 26)],
                                                     interval: .milliseconds(30)))
        var listens: [AsyncThrowingStream<AdvertisementReport, any Error>] = []
        var peripherals: [SimulatedPeripheral] = []
        for i in 0..<200 {
            let p = air.addPeripheral()
            try await p.advertise(payload(i, interval: .milliseconds(100)))
            try await p.publish(service: service, characteristic: ballot, value: [UInt8(i)])
            if i % 4 == 0 { listens.append(p.listen(companyID: companyID, dutyCycle: .continuous)) }
            peripherals.append(p)
        }
        let attacker = air.addAttacker(rssi: -40)
        try await attacker.advertise(AdvertisingPayload(companyID: companyID, data: [7, 7, 7], interval: .milliseconds(50),
                                                        connectable: false))
        listens.append(attacker.listen(companyID: companyID, dutyCycle: .continuous))
        var reads: [Task<[UInt8]?, Never>] = []
        for i in 0..<6 {  // one at a time, so that they queue in this order
            let address = peripherals[i * 30].address
            reads.append(Task { try? await central.readCharacteristic(device: address, service: service, characteristic: ballot,
                                                                      timeout: .seconds(2)) })
            await waitForPendingReads(air, i + 1)
        }
        await air.advance(until: at(3), quantum: .milliseconds(50))
        var f = FNV()
        for r in reads { f.add(await r.value ?? [0xFF]) }
        for r in try await drain(air, scanned) { f.add(r) }
        for l in listens { for try await r in l { f.add(r) } }
        let s = air.statistics
        for x in [s.pdusListened, s.pdusReceived, s.collisions, s.captures, s.randomLosses, s.outOfRange, s.reportsDelivered,
                  s.connectionsEstablished, s.readsSucceeded, s.broadcastPDUs, s.missedWhileBroadcasting,
                  s.broadcastPDUsHeard, s.broadcastCollisions, s.broadcastCaptures, s.attackerPDUsHeard,
                  s.listenerReportsDelivered] {
            f.add(UInt64(x))
        }
        return (f.h, s)
    }

    func testWithoutAHallASeededRunIsThatOfTheSimulatorBeforeHalls() async throws {
        let (h, s) = try await fingerprint()
        // The run exercised what it is meant to.
        XCTAssertGreaterThan(s.captures, 0)
        XCTAssertGreaterThan(s.collisions, 0)
        XCTAssertGreaterThan(s.randomLosses, 0)
        XCTAssertGreaterThan(s.broadcastPDUsHeard, 0)
        XCTAssertGreaterThan(s.attackerPDUsHeard, 0)
        XCTAssertGreaterThan(s.readsSucceeded, 0)
        XCTAssertEqual(String(h, radix: 16), "3ff662defa1126f", "recorded from the simulator of commit 408e60b")
    }
}
