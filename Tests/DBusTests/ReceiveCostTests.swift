import XCTest
import Synchronization
import DBus
import DBusTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Measures the CPU cost of receiving BlueZ-shaped PropertiesChanged signals through the batched fast
/// path. Asserts only correctness (every signal arrives, decoded right); the cost is printed.
final class ReceiveCostTests: XCTestCase {
    func testPerSignalReceiveCost() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let rx = try await DBusConnection.connect(.address(bus.address))
        let tx = try await DBusConnection.connect(.address(bus.address))
        defer { rx.close(); tx.close() }
        let stats = DBusSubscriptionStats()
        let batches = try await rx.signalBatches(matching: .propertiesChanged(interface: "org.bluez.Device1"),
                                                 maxBatch: 512, bufferLimit: 1 << 20, stats: stats, decode: decodeAdvReport)
        let devices = 200
        let total = Int(getenvInt("DBUS_RECEIVE_COST_SIGNALS") ?? 20_000)
        let paths = try (0..<devices).map { i in
            try DBusObjectPath(String(format: "/org/bluez/hci0/dev_AA_BB_CC_DD_%02X_%02X", i >> 8, i & 255))
        }

        let consumer = Task.detached { () -> (Int, UInt64, [UInt64: Int]) in
            var n = 0
            var cpu: UInt64 = 0
            var counts: [UInt64: Int] = [:]
            for await batch in batches {
                let t0 = dbusThreadCPUNanos()
                for r in batch {
                    counts[r.address, default: 0] += 1
                }
                n += batch.count
                cpu += dbusThreadCPUNanos() - t0
                if n >= total { break }
            }
            return (n, cpu, counts)
        }

        let cpu0 = try XCTUnwrap(rx.dispatchThreadCPUNanoseconds)
        for i in 0..<total {
            let payload = (0..<24).map { UInt8(truncatingIfNeeded: $0 &+ i) }
            try tx.emitSignal(path: paths[i % devices], interface: "org.freedesktop.DBus.Properties", name: "PropertiesChanged",
                              arguments: [.string("org.bluez.Device1"),
                                          .stringVariantDictionary(["RSSI": .int16(Int16(-40 - i % 50)),
                                                                    "ManufacturerData": .uint16VariantDictionary([0xFFFF: .bytes(payload)])]),
                                          .array(.string, [])])
            if i % 5000 == 4999 { try await Task.sleep(for: .milliseconds(1)) }
        }
        let (received, consumerCPU, counts) = await consumer.value
        let cpu1 = try XCTUnwrap(rx.dispatchThreadCPUNanoseconds)
        XCTAssertEqual(received, total)
        XCTAssertEqual(stats.rejected.load(ordering: .relaxed), 0)
        XCTAssertEqual(counts.count, devices)
        XCTAssertTrue(counts.values.allSatisfy { $0 == total / devices })
        let dispatchPer = Double(cpu1 - cpu0) / Double(total)
        let consumerPer = Double(consumerCPU) / Double(total)
        let batchCount = stats.batches.load(ordering: .relaxed)
        print(String(format: "receive cost: dispatch thread %.0f ns/signal, consumer %.0f ns/signal, %d signals in %d batches (%.1f/batch)",
                     dispatchPer, consumerPer, total, batchCount, Double(total) / Double(max(1, batchCount))))
    }
}

func getenvInt(_ name: String) -> Int? {
    getenv(name).flatMap { Int(String(cString: $0)) }
}
