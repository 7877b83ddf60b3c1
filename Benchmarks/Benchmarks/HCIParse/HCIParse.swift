// HCI advertising-report parsing throughput: LE Advertising Report events (1…N reports each,
// Flags + Manufacturer Specific Data 0xFFFF with a 22-byte ballot payload, as on air) decoded
// into `AdvertisementReport`s for company 0xFFFF. One benchmark iteration = one report, so the
// throughput metric reads directly as reports per second (on one core: the benchmark is single-threaded).
import Benchmark
import ClickerTransport
import HCI

/// An LE Meta / LE Advertising Report event with `count` reports from distinct addresses.
func advertisingReportEvent(count: Int, seed: Int) -> [UInt8] {
    var params: [UInt8] = [0x02, UInt8(count)]
    for i in 0..<count {
        let n = seed &* 31 &+ i
        let payload: [UInt8] = [0xCB] + (1..<22).map { UInt8(truncatingIfNeeded: n &* 7 &+ $0) }
        let ad: [UInt8] = [0x02, 0x01, 0x06, 0x17, 0xFF, 0xFF, 0xFF] + payload
        params += [0x03, 0x01]                                                           // ADV_NONCONN_IND, random
        params += [UInt8(truncatingIfNeeded: n), UInt8(truncatingIfNeeded: n >> 8), 0x00, 0x01, 0xAA, 0xC0]
        params += [UInt8(ad.count)] + ad
        params.append(UInt8(bitPattern: Int8(-40 - (n % 50))))                            // RSSI
    }
    return [0x04, 0x3E, UInt8(params.count)] + params
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        scalingFactor: .mega,
        maxDuration: .seconds(3),
        maxIterations: 20)

    // 1 report per event is what most controllers send; up to 6 fit a 255-byte event with our 29-byte data.
    for reportsPerEvent in [1, 3, 6] {
        let events = (0..<64).map { advertisingReportEvent(count: reportsPerEvent, seed: $0) }
        Benchmark("LE Advertising Report → AdvertisementReport (\(reportsPerEvent) per event)") { benchmark in
            var out: [AdvertisementReport] = []
            out.reserveCapacity(8)
            let timestamp = RadioInstant(nanoseconds: 1)
            var delivered = 0
            var reassembler = ExtendedReportReassembler()
            let eventCount = benchmark.scaledIterations.count / reportsPerEvent
            benchmark.startMeasurement()
            for i in 0..<eventCount {
                out.removeAll(keepingCapacity: true)
                let counts = try AdvertisementExtractor.extract(packet: events[i & 63], companyIDs: [0xFFFF], timestamp: timestamp,
                                                                reassembler: &reassembler, into: &out)
                delivered &+= counts.matched
                blackHole(out)
            }
            benchmark.stopMeasurement()
            precondition(delivered == eventCount * reportsPerEvent, "every report must be delivered")
        }
    }

    // Full decode to HCIEvent (all fields), for comparison with the hot path.
    let events = (0..<64).map { advertisingReportEvent(count: 1, seed: $0) }
    Benchmark("HCIEvent.parse (1 report per event)") { benchmark in
        for i in benchmark.scaledIterations {
            blackHole(try HCIEvent.parse(packet: events[i & 63]))
        }
    }
}
