import struct ClickerTransport.SplitMix64
import ClickerTransport
@testable import HCI
import XCTest

/// Seeded property tests: random and mutated packets never trap, and yield either a decoded
/// event or an `HCIParseError`; random valid events decode to exactly what was encoded.
final class HCIParsePropertyTests: XCTestCase {
    func randomReport(_ g: inout SplitMix64, extended: Bool) -> ReportModel {
        let length = Int.random(in: 0...(extended ? 60 : 31), using: &g)
        var data = (0..<length).map { _ in UInt8.random(in: 0...255, using: &g) }
        if length >= 7 && Bool.random(using: &g) {   // often a well-formed MSD for the wanted company
            let payload = Int.random(in: 0...(length - 7), using: &g)
            data = msd(company: Bool.random(using: &g) ? 0xFFFF : 0x004C,
                       (0..<payload).map { _ in UInt8.random(in: 0...255, using: &g) })
        }
        var r = ReportModel(eventType: UInt16.random(in: 0...(extended ? 0x7F : 4), using: &g),
                            addressType: UInt8.random(in: 0...3, using: &g),
                            address: (0..<6).map { _ in UInt8.random(in: 0...255, using: &g) },
                            data: data, rssi: UInt8.random(in: 0...255, using: &g))
        if extended {
            r.primaryPHY = UInt8.random(in: 0...255, using: &g)
            r.secondaryPHY = UInt8.random(in: 0...255, using: &g)
            r.sid = UInt8.random(in: 0...255, using: &g)
            r.txPower = UInt8.random(in: 0...255, using: &g)
            r.periodic = UInt16.random(in: 0...0xFFFF, using: &g)
            r.directType = UInt8.random(in: 0...255, using: &g)
            r.direct = (0..<6).map { _ in UInt8.random(in: 0...255, using: &g) }
        }
        return r
    }

    func randomValidEvent(_ g: inout SplitMix64) -> (packet: [UInt8], reports: [ReportModel], extended: Bool) {
        let extended = Bool.random(using: &g)
        var reports: [ReportModel] = []
        var size = 2
        for _ in 0..<Int.random(in: 1...6, using: &g) {
            let r = randomReport(&g, extended: extended)
            let bytes = (extended ? r.extendedBytes() : r.legacyBytes()).count
            if size + bytes > 255 { break }
            size += bytes
            reports.append(r)
        }
        if reports.isEmpty { reports.append(ReportModel(eventType: 0, addressType: 0, address: [1, 2, 3, 4, 5, 6], data: [], rssi: 0)) }
        return (advertisingEvent(reports, extended: extended), reports, extended)
    }

    enum Reference: Equatable { case found([UInt8]), absent, malformed }

    /// Independent reading of the AD rules: walk [len][type][data], stop at len 0, first
    /// Manufacturer Specific Data (type 0xFF, ≥ 2 octets of company ID) for `company` wins.
    func referenceManufacturerData(_ d: [UInt8], company: UInt16) -> Reference {
        var i = 0
        while i < d.count {
            let len = Int(d[i])
            if len == 0 { return .absent }
            if i + 1 + len > d.count { return .malformed }
            if d[i + 1] == 0xFF && len >= 3 && UInt16(d[i + 2]) | UInt16(d[i + 3]) << 8 == company {
                return .found(Array(d[(i + 4)..<(i + 1 + len)]))
            }
            i += 1 + len
        }
        return .absent
    }

    func testRandomValidEventsRoundTrip() throws {
        var g = SplitMix64(seed: 0xC11C_4E42)
        for _ in 0..<2000 {
            let (packet, models, extended) = randomValidEvent(&g)
            let event = try HCIEvent.parse(packet: packet)
            let reports: [LEAdvertisingReport]
            switch (event, extended) {
            case (.leAdvertisingReport(let r), false), (.leExtendedAdvertisingReport(let r), true): reports = r
            default: return XCTFail("wrong event kind \(event)")
            }
            XCTAssertEqual(reports.count, models.count)
            for (r, m) in zip(reports, models) {
                XCTAssertEqual(r.eventType, m.eventType)
                XCTAssertEqual(r.addressType, m.addressType)
                XCTAssertEqual(r.address, m.deviceAddress)
                XCTAssertEqual(Array(r.data), m.data)
                XCTAssertEqual(r.rssi, m.rssi == 127 ? nil : Int8(bitPattern: m.rssi))
                if extended {
                    XCTAssertEqual(r.extended?.txPower, m.txPower == 127 ? nil : Int8(bitPattern: m.txPower))
                    XCTAssertEqual(r.extended?.periodicAdvertisingInterval, m.periodic)
                    XCTAssertEqual(r.extended?.directAddress,
                                   DeviceAddress(m.direct[5], m.direct[4], m.direct[3], m.direct[2], m.direct[1], m.direct[0]))
                }
            }
            // The extractor agrees with a reference built on the generic AD walk and a model of the
            // chains of extended pieces (keyed by address type, address and SID; joined within the packet).
            var out: [AdvertisementReport] = []
            let counts = try extract(packet: packet, companyID: 0xFFFF, timestamp: .zero, into: &out)
            var expected: [[UInt8]] = []
            var malformed = 0
            var fragments = 0
            var chains: [String: [UInt8]] = [:]
            for r in reports {
                var data = Array(r.data)
                let key = "\(r.addressType) \(r.address) \(r.extended?.advertisingSID ?? 0)"
                switch r.dataStatus {
                case .complete:
                    if let chain = chains.removeValue(forKey: key) { data = chain + data }
                case .incompleteMoreToCome:
                    chains[key, default: []] += data
                    fragments += 1
                    continue
                case .incompleteTruncated, .reserved:
                    chains[key] = nil
                    fragments += 1
                    continue
                }
                switch referenceManufacturerData(data, company: 0xFFFF) {
                case .malformed: malformed += 1
                case .found(let payload): expected.append(payload)
                case .absent: break
                }
            }
            XCTAssertEqual(out.map(\.data), expected)
            XCTAssertEqual(counts.matched, expected.count)
            XCTAssertEqual(counts.fragments, fragments)
            XCTAssertEqual(counts.malformed, malformed)
            XCTAssertEqual(counts.matched + counts.ignored + counts.malformed + counts.fragments, reports.count)
        }
    }

    func testMutatedEventsNeverTrap() {
        var g = SplitMix64(seed: 0x5EED_0001)
        var decoded = 0
        var rejected = 0
        for _ in 0..<10_000 {
            var (packet, _, _) = randomValidEvent(&g)
            switch Int.random(in: 0..<6, using: &g) {
            case 0:   // flip random bytes
                for _ in 0..<Int.random(in: 1...4, using: &g) {
                    packet[Int.random(in: 0..<packet.count, using: &g)] = UInt8.random(in: 0...255, using: &g)
                }
            case 1:   // truncate
                packet.removeLast(Int.random(in: 1...packet.count, using: &g))
            case 2:   // extend
                packet += (0..<Int.random(in: 1...8, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) }
            case 3:   // truncate but keep the header length consistent
                packet.removeLast(Int.random(in: 1...(packet.count - 3), using: &g))
                packet[2] = UInt8(packet.count - 3)
            case 4:   // corrupt a report's Data_Length (legacy at 13; extended at 28)
                let at = packet[3] == 0x0D ? 28 : 13
                if at < packet.count { packet[at] = UInt8.random(in: 0...255, using: &g) }
            default:  // corrupt Num_Reports
                packet[4] = UInt8.random(in: 0...255, using: &g)
            }
            do {
                _ = try HCIEvent.parse(packet: packet)
                decoded += 1
            } catch {
                rejected += 1
            }
            var out: [AdvertisementReport] = []
            if HCIEvent.isAdvertisingReportEvent(packet) {
                let before = out.count
                do {
                    _ = try extract(packet: packet, companyID: 0xFFFF, timestamp: .zero, into: &out)
                } catch {
                    XCTAssertEqual(out.count, before)
                }
            }
        }
        // Both outcomes occur: the mutations are neither all harmless nor all fatal.
        XCTAssertGreaterThan(decoded, 500)
        XCTAssertGreaterThan(rejected, 500)
    }

    func testRandomBytesNeverTrap() {
        var g = SplitMix64(seed: 0xBAD_F00D)
        var kinds: Set<String> = []
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...64, using: &g)
            var packet = (0..<length).map { _ in UInt8.random(in: 0...255, using: &g) }
            if length > 3 && Bool.random(using: &g) {   // make it look like an event more often
                packet[0] = 0x04
                packet[1] = [0x0E, 0x0F, 0x10, 0x3E].randomElement(using: &g) ?? 0x3E
                packet[2] = UInt8(length - 3)
                if packet[1] == 0x3E { packet[3] = Bool.random(using: &g) ? 0x02 : 0x0D }
            }
            do {
                _ = try HCIEvent.parse(packet: packet)
                kinds.insert("ok")
            } catch {
                kinds.insert(String(describing: error).components(separatedBy: " ").prefix(3).joined(separator: " "))
            }
            if HCIEvent.isAdvertisingReportEvent(packet) {
                var out: [AdvertisementReport] = []
                if (try? extract(packet: packet, companyID: 0xFFFF, timestamp: .zero, into: &out)) == nil {
                    XCTAssertTrue(out.isEmpty, "a rejected event delivered reports")
                }
            }
        }
        XCTAssertTrue(kinds.contains("ok"))
        XCTAssertGreaterThan(kinds.count, 4, "\(kinds)")
    }
}
