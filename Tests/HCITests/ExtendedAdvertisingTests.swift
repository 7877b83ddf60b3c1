import struct ClickerTransport.SplitMix64
import ClickerTransport
@testable import HCI
import XCTest

/// The extended advertising commands byte by byte (Core Specification v5.4 Vol 4 Part E §7.8.53–65),
/// the one-per-controller mode decision, and extended reports in pieces.
final class ExtendedAdvertisingTests: XCTestCase {
    // MARK: Commands

    func testExtendedCommandBytes() throws {
        XCTAssertEqual(HCICommand.leReadLocalSupportedFeatures.packet, [0x01, 0x03, 0x20, 0x00])
        XCTAssertEqual(HCICommand.leReadMaximumAdvertisingDataLength.packet, [0x01, 0x3A, 0x20, 0x00])
        let p = ExtendedAdvertisingParameters(properties: 0x0000, intervalMin: 0xA0, intervalMax: 0xA0)
        XCTAssertEqual(try HCICommand.leSetExtendedAdvertisingParameters(p).packet, [
            0x01, 0x36, 0x20, 0x19,
            0x00,                                // Advertising_Handle
            0x00, 0x00,                          // Advertising_Event_Properties: extended, non-connectable, non-scannable
            0xA0, 0x00, 0x00,                    // Primary_Advertising_Interval_Min (3 octets)
            0xA0, 0x00, 0x00,                    // Primary_Advertising_Interval_Max
            0x07,                                // Primary_Advertising_Channel_Map
            0x00,                                // Own_Address_Type public
            0x00, 0, 0, 0, 0, 0, 0,              // Peer_Address_Type, Peer_Address
            0x00,                                // Advertising_Filter_Policy
            0x7F,                                // Advertising_TX_Power: no preference
            0x01,                                // Primary_Advertising_PHY LE 1M
            0x00,                                // Secondary_Advertising_Max_Skip
            0x01,                                // Secondary_Advertising_PHY LE 1M
            0x00,                                // Advertising_SID
            0x00,                                // Scan_Request_Notification_Enable
        ])
        let legacy = ExtendedAdvertisingParameters(handle: 2, properties: ExtendedAdvertisingProperties.legacyNonConnectable,
                                                   intervalMin: 0x4000, intervalMax: 0x4000, channelMap: 0x05,
                                                   ownAddressType: .randomAddress, sid: 3)
        let lp = try HCICommand.leSetExtendedAdvertisingParameters(legacy).parameters
        XCTAssertEqual(Array(lp[0..<10]), [0x02, 0x10, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x00, 0x05])
        XCTAssertEqual(lp[10], 0x01)
        XCTAssertEqual(lp[23], 0x03)
        for bad in [ExtendedAdvertisingParameters(properties: 0, intervalMin: 0x1F, intervalMax: 0xA0),
                    ExtendedAdvertisingParameters(properties: 0, intervalMin: 0xA0, intervalMax: 0x90),
                    ExtendedAdvertisingParameters(properties: 0, intervalMin: 0xA0, intervalMax: 0xA0, channelMap: 0),
                    ExtendedAdvertisingParameters(handle: 0xF0, properties: 0, intervalMin: 0xA0, intervalMax: 0xA0),
                    ExtendedAdvertisingParameters(properties: 0, intervalMin: 0xA0, intervalMax: 0xA0, sid: 0x10)] {
            XCTAssertThrowsError(try HCICommand.leSetExtendedAdvertisingParameters(bad), "\(bad)")
        }

        let data = [UInt8](repeating: 0x5A, count: 251)
        XCTAssertEqual(try HCICommand.leSetExtendedAdvertisingData(handle: 0, data).packet,
                       [0x01, 0x37, 0x20, 0xFF, 0x00, 0x03, 0x01, 0xFB] + data, "complete data, no fragmentation wanted")
        XCTAssertThrowsError(try HCICommand.leSetExtendedAdvertisingData(handle: 0, data + [0])) { error in
            XCTAssertEqual(error as? HCIError, .advertisingDataTooLong(bytes: 252, maximum: 251))
        }
        XCTAssertEqual(HCICommand.leSetExtendedAdvertisingEnable(true, handle: 0).packet,
                       [0x01, 0x39, 0x20, 0x06, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00])
        XCTAssertEqual(HCICommand.leSetExtendedAdvertisingEnable(false, handle: 1).packet,
                       [0x01, 0x39, 0x20, 0x06, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00])
        XCTAssertEqual(HCICommand.leSetExtendedAdvertisingEnable(false, handle: nil).packet, [0x01, 0x39, 0x20, 0x02, 0x00, 0x00])
        let a = try XCTUnwrap(DeviceAddress("12:34:56:78:9A:BC"))
        XCTAssertEqual(HCICommand.leSetAdvertisingSetRandomAddress(handle: 0, a).packet,
                       [0x01, 0x35, 0x20, 0x07, 0x00, 0xBC, 0x9A, 0x78, 0x56, 0x34, 0x12])
        XCTAssertEqual(try HCICommand.leSetExtendedScanParameters(ScanParameters(interval: 0x60, window: 0x30)).packet,
                       [0x01, 0x41, 0x20, 0x08, 0x00, 0x00, 0x01, 0x00, 0x60, 0x00, 0x30, 0x00])
        XCTAssertEqual(try HCICommand.leSetExtendedScanParameters(
            ScanParameters(active: true, interval: 0x4000, window: 0x4000, ownAddressType: .randomAddress)).packet,
                       [0x01, 0x41, 0x20, 0x08, 0x01, 0x00, 0x01, 0x01, 0x00, 0x40, 0x00, 0x40])
        XCTAssertThrowsError(try HCICommand.leSetExtendedScanParameters(ScanParameters(interval: 0x10, window: 0x11)))
        XCTAssertEqual(HCICommand.leSetExtendedScanEnable(true, filterDuplicates: false).packet,
                       [0x01, 0x42, 0x20, 0x06, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00])
        XCTAssertEqual(HCICommand.leSetExtendedScanEnable(false, filterDuplicates: false).packet,
                       [0x01, 0x42, 0x20, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])
    }

    // MARK: Mode decision

    func testModeDecisionFromFeatureBit12AndDataLength() {
        let bit12: [UInt8] = [0, 0x10, 0, 0, 0, 0, 0, 0]
        XCTAssertEqual(HCIAdvertisingMode.decide(leFeatures: nil, maximumDataLength: 1650), .legacy)
        XCTAssertEqual(HCIAdvertisingMode.decide(leFeatures: [], maximumDataLength: 1650), .legacy)
        XCTAssertEqual(HCIAdvertisingMode.decide(leFeatures: [0xFF, 0xEF, 0xFF, 0xFF, 0, 0, 0, 0], maximumDataLength: 1650),
                       .legacy, "every bit but 12")
        XCTAssertEqual(HCIAdvertisingMode.decide(leFeatures: bit12, maximumDataLength: nil), .extended(maximumDataLength: 31),
                       "the feature bit without an answer to the length read: extended commands, 31 octets, as Linux does")
        XCTAssertEqual(HCIAdvertisingMode.extended(maximumDataLength: 31).broadcastCapabilities, .legacy.withFrameTime(slack: .milliseconds(10)),
                       "31 octets: legacy PDUs through the set")
        XCTAssertEqual(HCIAdvertisingMode.decide(leFeatures: bit12, maximumDataLength: 30), .legacy)
        XCTAssertEqual(HCIAdvertisingMode.decide(leFeatures: bit12, maximumDataLength: 31), .extended(maximumDataLength: 31))
        XCTAssertEqual(HCIAdvertisingMode.decide(leFeatures: bit12, maximumDataLength: 1650), .extended(maximumDataLength: 251))
        // The host rotates the frames every interval + 10 ms; a controller before Bluetooth 5 may hold 100 ms.
        XCTAssertEqual(HCIAdvertisingMode.legacy.broadcastCapabilities,
                       BroadcastCapabilities(maxFrameLength: 27, extended: false, frameSlack: .milliseconds(10),
                                             minimumFrameTime: .milliseconds(110)))
        XCTAssertEqual(HCIAdvertisingMode.legacy.broadcastCapabilities.frameTime(interval: .milliseconds(20)), .milliseconds(110))
        XCTAssertEqual(HCIAdvertisingMode.extended(maximumDataLength: 251).broadcastCapabilities.frameTime(interval: .milliseconds(20)),
                       .milliseconds(30))
        // 251 octets of a set, but one report carries 229 to a scanner: a voter behind BlueZ hears frames of 225 whole.
        XCTAssertEqual(HCIAdvertisingMode.extended(maximumDataLength: 251).broadcastCapabilities,
                       BroadcastCapabilities(maxFrameLength: 225, extended: true, frameSlack: .milliseconds(10)))
        XCTAssertEqual(HCIAdvertisingMode.extended(maximumDataLength: 100).broadcastCapabilities.maxFrameLength, 96)
    }

    // MARK: Extended reports in pieces

    /// An extended report of `data` from `address` with data status `status` (0 complete, 1 more, 2 truncated).
    func piece(_ data: [UInt8], status: UInt16, address: [UInt8] = [1, 2, 3, 4, 5, 6], sid: UInt8 = 0) -> ReportModel {
        var r = ReportModel(eventType: status << 5, addressType: 1, address: address, data: data, rssi: UInt8(bitPattern: -40))
        r.sid = sid
        return r
    }

    func extract(_ packet: [UInt8], _ r: inout ExtendedReportReassembler,
                 companies: [UInt16] = [0xFFFF]) throws -> ([AdvertisementReport], ExtractionCounts) {
        var out: [AdvertisementReport] = []
        let counts = try AdvertisementExtractor.extract(packet: packet, companyIDs: companies, timestamp: .zero,
                                                        reassembler: &r, into: &out)
        return (out, counts)
    }

    /// Manufacturer Specific Data without Flags, as the beacon sends it.
    func beaconAD(_ frame: [UInt8]) -> [UInt8] { [UInt8(3 + frame.count), 0xFF, 0xFF, 0xFF] + frame }

    func testA251ByteAdvertisementInTwoReportsIsJoined() throws {
        let frame = (0..<247).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let ad = beaconAD(frame)
        var r = ExtendedReportReassembler()
        let (nothing, first) = try extract(advertisingEvent([piece(Array(ad[..<229]), status: 1)], extended: true), &r)
        XCTAssertEqual(nothing, [])
        XCTAssertEqual(first.fragments, 1)
        XCTAssertEqual(r.openChains, 1)
        let (out, last) = try extract(advertisingEvent([piece(Array(ad[229...]), status: 0)], extended: true), &r)
        XCTAssertEqual(out.map(\.data), [frame])
        XCTAssertEqual(out.first?.address.description, "06:05:04:03:02:01")
        XCTAssertEqual(out.first?.rssi, -40)
        XCTAssertEqual(last.matched, 1)
        XCTAssertEqual(r.openChains, 0)
    }

    func testInterleavedAdvertisersAndSetsAreJoinedSeparately() throws {
        let a = beaconAD([UInt8](repeating: 0xAA, count: 240)), b = beaconAD([UInt8](repeating: 0xBB, count: 240))
        var r = ExtendedReportReassembler()
        let other: [UInt8] = [9, 9, 9, 9, 9, 9]
        _ = try extract(advertisingEvent([piece(Array(a[..<120]), status: 1),
                                          piece(Array(b[..<80]), status: 1, address: other)], extended: true), &r)
        // Same advertiser, another SID: a chain of its own.
        _ = try extract(advertisingEvent([piece(Array(b[..<100]), status: 1, sid: 5)], extended: true), &r)
        XCTAssertEqual(r.openChains, 3)
        let (first, c1) = try extract(advertisingEvent([piece(Array(b[80...]), status: 0, address: other)], extended: true), &r)
        let (second, c2) = try extract(advertisingEvent([piece(Array(a[120...]), status: 0)], extended: true), &r)
        XCTAssertEqual((first + second).map(\.data), [[UInt8](repeating: 0xBB, count: 240), [UInt8](repeating: 0xAA, count: 240)])
        XCTAssertEqual(c1.matched + c2.matched, 2)
        XCTAssertEqual(r.openChains, 1)
    }

    func testTruncatedChainDeliversNothingAndTheNextCompleteReportStandsAlone() throws {
        var r = ExtendedReportReassembler()
        let ad = beaconAD([UInt8](repeating: 1, count: 240))
        _ = try extract(advertisingEvent([piece(Array(ad[..<200]), status: 1)], extended: true), &r)
        let (nothing, counts) = try extract(advertisingEvent([piece(Array(ad[200...]), status: 2)], extended: true), &r)
        XCTAssertEqual(nothing, [])
        XCTAssertEqual(counts.fragments, 1)
        XCTAssertEqual(r.openChains, 0)
        let (out, _) = try extract(advertisingEvent([piece(beaconAD([7, 7]), status: 0)], extended: true), &r)
        XCTAssertEqual(out.map(\.data), [[7, 7]])
    }

    func testChainsAreBounded() throws {
        var r = ExtendedReportReassembler()
        // Longer than 1650 octets: dropped, counted malformed, never grows.
        var malformed = 0
        for _ in 0..<8 {
            let (_, c) = try extract(advertisingEvent([piece([UInt8](repeating: 2, count: 229), status: 1)], extended: true), &r)
            malformed += c.malformed
        }
        XCTAssertEqual(malformed, 1, "the eighth piece takes the chain past 1650 octets")
        XCTAssertEqual(r.openChains, 0)
        // At most 16 chains: the oldest makes room.
        for k in 0..<20 {
            _ = try extract(advertisingEvent([piece([0x03], status: 1, address: [UInt8(k), 0, 0, 0, 0, 0xC0])], extended: true), &r)
        }
        XCTAssertEqual(r.openChains, ExtendedReportReassembler.maximumChains)
        // Chain 0 was evicted: its tail stands alone (an AD length of FF running past the end).
        let (oldest, oldestCounts) = try extract(advertisingEvent([piece([0xFF, 0xFF, 0xFF], status: 0,
                                                                         address: [0, 0, 0, 0, 0, 0xC0])], extended: true), &r)
        XCTAssertEqual(oldest, [])
        XCTAssertEqual(oldestCounts.malformed, 1)
        // Chain 19 was kept: 03 + FF FF FF is Manufacturer Specific Data of 0xFFFF with no payload.
        let (newest, _) = try extract(advertisingEvent([piece([0xFF, 0xFF, 0xFF], status: 0,
                                                              address: [19, 0, 0, 0, 0, 0xC0])], extended: true), &r)
        XCTAssertEqual(newest.map(\.data), [[]])
    }

    func testDataLengthPastTheExtendedMaximumIsRejected() {
        var r = ExtendedReportReassembler()
        XCTAssertNoThrow(try extract(advertisingEvent([piece([UInt8](repeating: 0, count: 229), status: 0)], extended: true), &r))
        // Data_Length 230 or 252 (past what one report may carry) in a short event: rejected by value,
        // never read past the end.
        for length: UInt8 in [230, 252, 255] {
            var short = advertisingEvent([piece([1, 2, 3], status: 0)], extended: true)
            short[28] = length
            XCTAssertThrowsError(try extract(short, &r)) { error in
                XCTAssertEqual(error as? HCIParseError, .invalidValue(what: "extended advertising Data_Length", value: Int(length)))
            }
            XCTAssertThrowsError(try HCIEvent.parse(packet: short))
        }
    }

    /// Seeded random streams of extended report events (pieces of random advertisers and sets, random
    /// data status, corrupted lengths, truncations): never a trap, every report accounted for, and
    /// every delivery equal to an independent model of the joining.
    func testRandomPieceStreamsMatchAModelAndNeverTrap() throws {
        var g = SplitMix64(seed: 0xBEAC_0417)
        var r = ExtendedReportReassembler()
        var model: [[UInt8]: [UInt8]] = [:]   // address + SID → joined so far
        var delivered = 0, rejectedEvents = 0
        for _ in 0..<5000 {
            var reports: [ReportModel] = []
            var size = 2
            for _ in 0..<Int.random(in: 1...3, using: &g) {
                let address: [UInt8] = [UInt8.random(in: 0...3, using: &g), 0, 0, 0, 0, 0xC0]
                var data: [UInt8]
                if Bool.random(using: &g) {
                    data = beaconAD((0..<Int.random(in: 0...100, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) })
                } else {
                    data = (0..<Int.random(in: 0...120, using: &g)).map { _ in UInt8.random(in: 0...255, using: &g) }
                }
                let status = UInt16([0, 0, 1, 1, 2, 3].randomElement(using: &g) ?? 0)
                let report = piece(data, status: status, address: address, sid: UInt8.random(in: 0...1, using: &g))
                if size + report.extendedBytes().count > 255 { break }
                size += report.extendedBytes().count
                reports.append(report)
            }
            if reports.isEmpty { continue }
            var packet = advertisingEvent(reports, extended: true)
            let corrupt = Int.random(in: 0..<8, using: &g)
            if corrupt == 0 { packet[Int.random(in: 3..<packet.count, using: &g)] = UInt8.random(in: 0...255, using: &g) }
            if corrupt == 1 { packet.removeLast(Int.random(in: 1...(packet.count - 3), using: &g)); packet[2] = UInt8(packet.count - 3) }
            let valid = corrupt > 1
            var out: [AdvertisementReport] = []
            do {
                let counts = try AdvertisementExtractor.extract(packet: packet, companyIDs: [0xFFFF], timestamp: .zero,
                                                                reassembler: &r, into: &out)
                XCTAssertEqual(counts.matched + counts.ignored + counts.malformed + counts.fragments, Int(packet[4]))
                if valid {
                    var expected: [[UInt8]] = []
                    for rep in reports {
                        let key = rep.address + [rep.sid]
                        switch rep.eventType >> 5 & 3 {
                        case 1:
                            let joined = (model[key] ?? []) + rep.data
                            model[key] = joined.count <= ExtendedReportReassembler.maximumLength ? joined : nil
                        case 0:
                            let prior = model.removeValue(forKey: key)
                            let whole = (prior ?? []) + rep.data
                            if prior == nil || whole.count <= ExtendedReportReassembler.maximumLength,
                               case .found(let d) = reference(whole) { expected.append(d) }
                        default: model[key] = nil
                        }
                    }
                    XCTAssertEqual(out.map(\.data), expected)
                    delivered += out.count
                } else {
                    model = [:]          // a corrupted event that decodes leaves the model unknowable: start again
                    r = ExtendedReportReassembler()
                }
            } catch {
                XCTAssertEqual(out, [], "a rejected event delivered reports")
                rejectedEvents += 1
                if valid { XCTFail("a valid event was rejected: \(error)") }
            }
            XCTAssertLessThanOrEqual(r.openChains, ExtendedReportReassembler.maximumChains)
        }
        XCTAssertGreaterThan(delivered, 500)
        XCTAssertGreaterThan(rejectedEvents, 100)
    }

    enum Reference: Equatable { case found([UInt8]), absent, malformed }

    func reference(_ d: [UInt8]) -> Reference {
        var i = 0
        while i < d.count {
            let len = Int(d[i])
            if len == 0 { return .absent }
            if i + 1 + len > d.count { return .malformed }
            if d[i + 1] == 0xFF && len >= 3 && d[i + 2] == 0xFF && d[i + 3] == 0xFF { return .found(Array(d[(i + 4)..<(i + 1 + len)])) }
            i += 1 + len
        }
        return .absent
    }
}
