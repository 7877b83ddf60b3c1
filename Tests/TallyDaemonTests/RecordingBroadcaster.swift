import ClickerTransport
import Synchronization
@testable import TallyDaemon

/// A central that scans what the test gives it and records what it is asked to broadcast.
final class RecordingBroadcaster: CentralTransport, BroadcasterTransport {
    let capabilities: BroadcastCapabilities
    init(capabilities: BroadcastCapabilities = .legacy) { self.capabilities = capabilities }
    let (stream, ads) = AsyncThrowingStream<AdvertisementReport, any Error>.makeStream()
    private let log = Mutex<(payloads: [BroadcastPayload], events: [String])>(([], []))
    /// A notice after each payload it is given to broadcast, and after it is told to stop.
    let broadcasts = ChangeFeed()
    var payloads: [BroadcastPayload] { log.withLock { $0.payloads } }
    var events: [String] { log.withLock { $0.events } }

    func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> { stream }
    func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                            timeout: Duration) async throws -> [UInt8] {
        throw TransportError.unsupported("no GATT")
    }
    func status() -> AsyncStream<RadioStatus> { AsyncStream { $0.yield(RadioStatus(adapter: "test", state: .scanning)) } }
    func broadcastCapabilities() async throws -> BroadcastCapabilities { capabilities }
    func broadcast(_ payload: BroadcastPayload) async throws {
        log.withLock { $0.payloads.append(payload); $0.events.append("broadcast") }
        broadcasts.signal()
    }
    func stopBroadcasting() async throws {
        log.withLock { $0.events.append("stop") }
        broadcasts.signal()
    }
}
