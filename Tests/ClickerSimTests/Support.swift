import ClickerSim
import ClickerTransport
import XCTest

let companyID: UInt16 = 0xFFFF
let service = UUID128("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!
let ballot = UUID128("6e400002-b5a3-f393-e0a9-e50e24dcca9e")!

/// A full legacy PDU: 24 bytes of manufacturer data + company ID + flags = 31 bytes of AD, 376 µs.
func payload(_ i: Int, interval: Duration = .milliseconds(100), connectable: Bool = true,
             bytes: Int = 24) -> AdvertisingPayload {
    var data = [UInt8](repeating: 0xA5, count: bytes)
    for k in 0..<min(4, bytes) { data[k] = UInt8(truncatingIfNeeded: i >> (8 * k)) }
    return AdvertisingPayload(companyID: companyID, data: data, interval: interval, connectable: connectable)
}

func at(_ seconds: Double) -> RadioInstant { RadioInstant(nanoseconds: UInt64(seconds * 1e9)) }

/// Finishes the air's streams and returns everything `stream` buffered.
func drain(_ air: SimulatedAir, _ stream: AsyncThrowingStream<AdvertisementReport, any Error>) async throws
    -> [AdvertisementReport] {
    air.finishAdvertisementStreams()
    var out: [AdvertisementReport] = []
    for try await r in stream { out.append(r) }
    return out
}

/// Waits (in real time, by yielding) until the air has `n` reads pending.
func waitForPendingReads(_ air: SimulatedAir, _ n: Int, file: StaticString = #filePath, line: UInt = #line) async {
    for _ in 0..<100_000 {
        if air.pendingReads >= n { return }
        await Task.yield()
    }
    XCTFail("never saw \(n) pending reads", file: file, line: line)
}

func secs(_ d: Duration) -> Double {
    let (s, atto) = d.components
    return Double(s) + Double(atto) * 1e-18
}
