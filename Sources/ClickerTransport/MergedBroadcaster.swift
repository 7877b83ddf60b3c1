import Synchronization

/// A ``MergedCentral`` whose radios broadcast too: the same payload goes out on every radio that can
/// broadcast while it scans, so that students near any of them hear the beacon.
///
/// What it can broadcast (``broadcastCapabilities()``) is what all those radios can: the shortest
/// frame, extended only when all are, the longest frame time. A radio that cannot broadcast while it
/// scans (a Bluetooth 4 controller) is left out while another can; when none can, all of them are
/// used and the capabilities say so (the tally then leaves the beacon off unless told otherwise).
/// A radio that refuses a payload does not stop the others: the payload counts as sent when one radio
/// took it, and the status names the radio that refused. The frames-taken feed is the first
/// broadcasting radio's.
public final class MergedBroadcastingCentral: CentralTransport, BroadcasterTransport {
    public let merged: MergedCentral
    /// The broadcasting radios: their index among the members, and the radio.
    let broadcasters: [(index: Int, radio: any BroadcasterTransport)]
    /// The broadcasters chosen (indices into `broadcasters`) and what they can, once asked.
    private let chosen = Mutex<(indices: [Int], capabilities: BroadcastCapabilities)?>(nil)

    public init(_ merged: MergedCentral) {
        self.merged = merged
        broadcasters = merged.members.enumerated().compactMap { i, m in
            (m.central as? any BroadcasterTransport).map { (i, $0) }
        }
    }

    // MARK: CentralTransport

    public func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        merged.advertisements(companyID: companyID)
    }

    public func advertisementBatches(companyID: UInt16) -> AdvertisementBatches {
        merged.advertisementBatches(companyID: companyID)
    }

    public func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                                   timeout: Duration) async throws -> [UInt8] {
        try await merged.readCharacteristic(device: device, service: service, characteristic: characteristic,
                                            timeout: timeout)
    }

    public func status() -> AsyncStream<RadioStatus> { merged.status() }

    // MARK: BroadcasterTransport

    /// Asks every broadcasting radio; a radio that cannot say (not ready) is left out of the beacon.
    /// Throws the first radio's error when none can say.
    public func broadcastCapabilities() async throws -> BroadcastCapabilities {
        if let c = chosen.withLock({ $0 }) { return c.capabilities }
        var answers: [(Int, BroadcastCapabilities)] = []
        var failure: (any Error)?
        for (k, b) in broadcasters.enumerated() {
            do { answers.append((k, try await b.radio.broadcastCapabilities())) } catch {
                if failure == nil { failure = error }
                merged.core.broadcastFailed(b.index, error)
            }
        }
        guard !answers.isEmpty else { throw failure ?? TransportError.unsupported("no adapter can broadcast") }
        let scanning = answers.filter { $0.1.whileScanning }
        let use = scanning.isEmpty ? answers : scanning
        let caps = use.map(\.1)
        let c = BroadcastCapabilities(
            maxFrameLength: caps.map(\.maxFrameLength).min() ?? BroadcastCapabilities.legacy.maxFrameLength,
            extended: caps.allSatisfy(\.extended), whileScanning: !scanning.isEmpty,
            frameSlack: caps.map(\.frameSlack).max() ?? .zero,
            minimumFrameTime: caps.map(\.minimumFrameTime).max() ?? .zero)
        chosen.withLock { $0 = (use.map(\.0), c) }
        return c
    }

    /// Sends `payload` on every chosen radio at once. Throws the first radio's error only when none took it.
    public func broadcast(_ payload: BroadcastPayload) async throws {
        let targets = try await targets()
        let failures = await withTaskGroup(of: (Int, (any Error)?).self) { group in
            for b in targets {
                group.addTask {
                    do { try await b.radio.broadcast(payload); return (b.index, nil) } catch { return (b.index, error) }
                }
            }
            var out: [(Int, (any Error)?)] = []
            for await r in group { out.append(r) }
            return out
        }
        for (i, e) in failures { merged.core.broadcastFailed(i, e) }
        let refused = failures.compactMap { f in f.1.map { (f.0, $0) } }.sorted { $0.0 < $1.0 }
        if refused.count == failures.count, let first = refused.first { throw first.1 }
    }

    /// Stops every broadcasting radio. Throws the first radio's error only when every radio failed.
    public func stopBroadcasting() async throws {
        var failure: (any Error)?
        var stopped = 0
        for b in broadcasters {
            do { try await b.radio.stopBroadcasting(); stopped += 1 } catch { if failure == nil { failure = error } }
        }
        if stopped == 0, let failure { throw failure }
    }

    public func framesTaken() -> AsyncStream<FrameTaken> {
        let first = chosen.withLock { $0?.indices.first } ?? 0
        guard broadcasters.indices.contains(first) else { return AsyncStream { $0.finish() } }
        return broadcasters[first].radio.framesTaken()
    }

    /// The radios a payload goes to: those chosen by ``broadcastCapabilities()`` (asked now if it was not).
    private func targets() async throws -> [(index: Int, radio: any BroadcasterTransport)] {
        if chosen.withLock({ $0 }) == nil { _ = try await broadcastCapabilities() }
        let indices = chosen.withLock { $0?.indices } ?? []
        return indices.map { broadcasters[$0] }
    }
}
