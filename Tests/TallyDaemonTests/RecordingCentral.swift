import ClickerTransport
import Foundation
import Synchronization
import TallyDaemon

/// A central for tests: advertisements come from the test, and every GATT read is recorded and then
/// held until its task is cancelled (a device that never answers), or refused as unsupported (a radio
/// without GATT, like raw HCI).
final class RecordingCentral: CentralTransport {
    let gattSupported: Bool
    private let reads = Mutex<[DeviceAddress]>([])
    private let started: AsyncStream<DeviceAddress>.Continuation
    /// One element per read started, in order.
    let readsStarted: AsyncStream<DeviceAddress>
    private let ads: AsyncThrowingStream<AdvertisementReport, any Error>
    let adsContinuation: AsyncThrowingStream<AdvertisementReport, any Error>.Continuation

    init(gattSupported: Bool = true) {
        self.gattSupported = gattSupported
        (readsStarted, started) = AsyncStream.makeStream()
        (ads, adsContinuation) = AsyncThrowingStream.makeStream()
    }

    /// The devices read so far (each read is a connection on a real radio).
    var readDevices: [DeviceAddress] { reads.withLock { $0 } }

    func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> { ads }

    func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                            timeout: Duration) async throws -> [UInt8] {
        reads.withLock { $0.append(device) }
        started.yield(device)
        guard gattSupported else { throw TransportError.unsupported("no GATT client on this radio") }
        let never = AsyncStream<Never> { _ in }
        for await _ in never {}  // ends when the task is cancelled
        throw CancellationError()
    }

    /// Waits until `controller` runs on this central (it has seen the radio scanning).
    func running(_ controller: PollController) async {
        while await controller.radio.state != .scanning { await Task.yield() }
    }

    func status() -> AsyncStream<RadioStatus> {
        AsyncStream { $0.yield(RadioStatus(adapter: "test", state: .scanning)) }
    }
}
