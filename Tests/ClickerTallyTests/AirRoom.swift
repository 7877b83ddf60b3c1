import ClickerSim
import ClickerTransport
import ClickerWire

/// `n` voters on a new simulated air, each advertising a distinct ballot-sized payload (its index in
/// the first two bytes) every `ms`, and one scanner at 100 % duty. Keep `scanning` alive while the air
/// runs; `air.statistics.pdusReceived` counts what the scanner heard.
struct AirRoom {
    let air: SimulatedAir
    let scanning: AsyncThrowingStream<AdvertisementReport, any Error>

    init(voters n: Int, intervalMs ms: Int, seed: UInt64) async throws {
        air = SimulatedAir(AirConfiguration(seed: seed))
        scanning = air.central().advertisements(companyID: BallotFormat.companyID)
        for i in 0..<n {
            var data = [UInt8](repeating: 0, count: BallotFormat.advertisementLength)
            data[0] = UInt8(i & 0xFF)
            data[1] = UInt8(i >> 8)
            try await air.addPeripheral().advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: data,
                                                                       interval: .milliseconds(ms)))
        }
    }
}
