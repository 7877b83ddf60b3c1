import ClickerTransport
@testable import HCI
import XCTest

/// Decoding of Command Complete, Command Status, Hardware Error and LE Meta subevents 0x02 and
/// 0x0D (Core Specification v5.4 Vol 4 Part E §7.7.14, §7.7.15, §7.7.16, §7.7.65.2, §7.7.65.13).
final class HCIEventParsingTests: XCTestCase {
    let ours = ReportModel(eventType: 0x03, addressType: 0x01, address: [0x01, 0x00, 0x00, 0x01, 0xAA, 0xC0],
                           data: msd(company: 0xFFFF, [0xDE, 0xAD]), rssi: UInt8(bitPattern: -60))

    func testCommandComplete() throws {
        let event = try HCIEvent.parse(packet: [0x04, 0x0E, 0x04, 0x01, 0x06, 0x20, 0x00])
        XCTAssertEqual(event, .commandComplete(CommandComplete(numHCICommandPackets: 1,
                                                               opcode: .leSetAdvertisingParameters,
                                                               returnParameters: [0x00])))
        guard case .commandComplete(let cc) = event else { return XCTFail() }
        XCTAssertEqual(cc.status, 0)
    }

    func testCommandCompleteWithReturnParameters() throws {
        let packet: [UInt8] = [0x04, 0x0E, 0x0A, 0x02, 0x09, 0x10, 0x00, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01]
        guard case .commandComplete(let cc) = try HCIEvent.parse(packet: packet) else { return XCTFail() }
        XCTAssertEqual(cc.opcode, .readBDAddr)
        XCTAssertEqual(cc.numHCICommandPackets, 2)
        XCTAssertEqual(cc.returnParameters, [0x00, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01])
    }

    func testCommandCompleteFailureStatus() throws {
        guard case .commandComplete(let cc) = try HCIEvent.parse(packet: [0x04, 0x0E, 0x04, 0x01, 0x0C, 0x20, 0x0C])
        else { return XCTFail() }
        XCTAssertEqual(cc.opcode, .leSetScanEnable)
        XCTAssertEqual(cc.status, 0x0C)
    }

    func testCommandStatus() throws {
        XCTAssertEqual(try HCIEvent.parse(packet: [0x04, 0x0F, 0x04, 0x12, 0x01, 0x0D, 0x20]),
                       .commandStatus(CommandStatus(status: 0x12, numHCICommandPackets: 1,
                                                    opcode: HCIOpcode(rawValue: 0x200D))))
    }

    func testHardwareErrorAndOtherEvents() throws {
        XCTAssertEqual(try HCIEvent.parse(packet: [0x04, 0x10, 0x01, 0x33]), .hardwareError(code: 0x33))
        XCTAssertEqual(try HCIEvent.parse(packet: [0x04, 0x05, 0x04, 0x00, 0x40, 0x00, 0x13]),
                       .other(code: 0x05, parameters: [0x00, 0x40, 0x00, 0x13]))
        XCTAssertEqual(try HCIEvent.parse(packet: [0x04, 0x3E, 0x03, 0x14, 0xAB, 0xCD]),
                       .leMeta(subevent: 0x14, parameters: [0xAB, 0xCD]))
    }

    func testLegacyAdvertisingReportSingle() throws {
        let packet = advertisingEvent([ours])
        // Hand-checked layout: 04 3E len 02 01 | type addrtype addr[6] len data rssi
        XCTAssertEqual(Array(packet[0..<13]), [0x04, 0x3E, UInt8(packet.count - 3), 0x02, 0x01, 0x03, 0x01,
                                               0x01, 0x00, 0x00, 0x01, 0xAA, 0xC0])
        guard case .leAdvertisingReport(let reports) = try HCIEvent.parse(packet: packet) else { return XCTFail() }
        XCTAssertEqual(reports.count, 1)
        let r = reports[0]
        XCTAssertEqual(r.eventType, 0x03)
        XCTAssertEqual(r.addressType, 0x01)
        XCTAssertEqual(r.address.description, "C0:AA:01:00:00:01")
        XCTAssertEqual(r.rssi, -60)
        XCTAssertEqual(Array(r.data), msd(company: 0xFFFF, [0xDE, 0xAD]))
        XCTAssertNil(r.extended)
        XCTAssertEqual(r.dataStatus, .complete)
    }

    func testLegacyAdvertisingReportSeveralWithRSSIUnavailable() throws {
        var second = ours
        second.address = [6, 5, 4, 3, 2, 1]
        second.rssi = 127
        second.data = []
        var third = ours
        third.eventType = 0x04
        third.rssi = 0x14   // +20 dBm
        guard case .leAdvertisingReport(let reports) = try HCIEvent.parse(packet: advertisingEvent([ours, second, third]))
        else { return XCTFail() }
        XCTAssertEqual(reports.map(\.address.description), ["C0:AA:01:00:00:01", "01:02:03:04:05:06", "C0:AA:01:00:00:01"])
        XCTAssertEqual(reports.map(\.rssi), [-60, nil, 20])
        XCTAssertEqual(reports.map(\.data.count), [ours.data.count, 0, ours.data.count])
        XCTAssertEqual(reports[2].eventType, 0x04)
    }

    func testExtendedAdvertisingReport() throws {
        var r = ours
        r.eventType = 0x0010 | 0x0003   // legacy bit + connectable/scannable
        r.primaryPHY = 0x01
        r.secondaryPHY = 0x02
        r.sid = 0x05
        r.txPower = UInt8(bitPattern: -8)
        r.periodic = 0x1234
        r.directType = 0x01
        r.direct = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66]
        var noPower = ours
        noPower.txPower = 0x7F
        noPower.rssi = 0x7F
        let packet = advertisingEvent([r, noPower], extended: true)
        XCTAssertEqual(packet[3], 0x0D)
        guard case .leExtendedAdvertisingReport(let reports) = try HCIEvent.parse(packet: packet) else { return XCTFail() }
        XCTAssertEqual(reports.count, 2)
        let e = try XCTUnwrap(reports[0].extended)
        XCTAssertEqual(reports[0].eventType, 0x0013)
        XCTAssertEqual(reports[0].address.description, "C0:AA:01:00:00:01")
        XCTAssertEqual(reports[0].rssi, -60)
        XCTAssertEqual(Array(reports[0].data), ours.data)
        XCTAssertEqual(e.primaryPHY, 1)
        XCTAssertEqual(e.secondaryPHY, 2)
        XCTAssertEqual(e.advertisingSID, 5)
        XCTAssertEqual(e.txPower, -8)
        XCTAssertEqual(e.periodicAdvertisingInterval, 0x1234)
        XCTAssertEqual(e.directAddressType, 1)
        XCTAssertEqual(e.directAddress.description, "66:55:44:33:22:11")
        XCTAssertNil(reports[1].rssi)
        XCTAssertNil(reports[1].extended?.txPower)
    }

    func testExtendedDataStatus() throws {
        var more = ours
        more.eventType = 0x0020
        var truncated = ours
        truncated.eventType = 0x0040
        guard case .leExtendedAdvertisingReport(let reports) = try HCIEvent.parse(
            packet: advertisingEvent([ours, more, truncated], extended: true)) else { return XCTFail() }
        XCTAssertEqual(reports.map(\.dataStatus), [.complete, .incompleteMoreToCome, .incompleteTruncated])
    }

    func testTypedErrorsForMalformedPackets() {
        let valid = advertisingEvent([ours])
        func expect(_ packet: [UInt8], _ expected: HCIParseError, line: UInt = #line) {
            XCTAssertThrowsError(try HCIEvent.parse(packet: packet), line: line) {
                XCTAssertEqual($0 as? HCIParseError, expected, line: line)
            }
        }
        expect([], .empty)
        expect([0x02, 0x00, 0x00, 0x00], .notAnEvent(packetType: 0x02))
        expect([0x04, 0x0E], .truncated(what: "event header", offset: 1))
        expect([0x04, 0x0E, 0x04, 0x01, 0x06], .truncated(what: "event parameters", offset: 4))
        expect([0x04, 0x0E, 0x02, 0x01, 0x06, 0x20], .lengthMismatch(declared: 2, actual: 3))
        expect([0x04, 0x0E, 0x02, 0x01, 0x06], .truncated(what: "Command Complete header", offset: 2))
        expect([0x04, 0x0F, 0x03, 0x00, 0x01, 0x0D], .truncated(what: "Command Status", offset: 2))
        expect([0x04, 0x0F, 0x05, 0x00, 0x01, 0x0D, 0x20, 0x00], .trailingBytes(count: 1))
        expect([0x04, 0x10, 0x00], .truncated(what: "Hardware Error", offset: 2))
        expect([0x04, 0x3E, 0x00], .truncated(what: "LE Meta subevent code", offset: 2))
        expect([0x04, 0x3E, 0x01, 0x02], .truncated(what: "Num_Reports", offset: 3))
        expect([0x04, 0x3E, 0x02, 0x02, 0x00], .invalidValue(what: "Num_Reports", value: 0))
        // Two reports announced, one present.
        var twoClaimed = valid
        twoClaimed[4] = 2
        expect(twoClaimed, .truncated(what: "advertising report", offset: valid.count - 1))
        // Data_Length larger than the data present.
        var longData = valid
        longData[13] = UInt8(ours.data.count + 1)
        expect(longData, .truncated(what: "advertising data", offset: 13))
        // Legacy Data_Length over 31.
        let big = ReportModel(eventType: 0, addressType: 0, address: [1, 2, 3, 4, 5, 6],
                              data: [UInt8](repeating: 0, count: 32), rssi: 0)
        expect(advertisingEvent([big]), .invalidValue(what: "legacy advertising Data_Length", value: 32))
        // Bytes after the last report, inside the declared length.
        var trailing = valid
        trailing.append(0x00)
        trailing[2] += 1
        expect(trailing, .trailingBytes(count: 1))
    }

    func testEveryPrefixOfAValidEventFailsCleanly() {
        for extended in [false, true] {
            let packet = advertisingEvent([ours, ours], extended: extended)
            XCTAssertNoThrow(try HCIEvent.parse(packet: packet))
            for n in 0..<packet.count {
                XCTAssertThrowsError(try HCIEvent.parse(packet: Array(packet[0..<n])), "prefix \(n)")
                // Same prefix with a header length that agrees with it: still an error.
                if n >= 3 {
                    var fixed = Array(packet[0..<n])
                    fixed[2] = UInt8(n - 3)
                    XCTAssertThrowsError(try HCIEvent.parse(packet: fixed), "consistent prefix \(n)")
                }
            }
        }
    }

    func testExtractorDeliversOnlyTheWantedCompany() throws {
        var other = ours
        other.data = msd(company: 0x004C, [1, 2, 3])
        var noMSD = ours
        noMSD.data = [0x02, 0x01, 0x06]
        var malformed = ours
        malformed.data = [0x02, 0x01, 0x06, 0x09, 0xFF, 0xFF]
        var second = ours
        second.address = [0x10, 0x20, 0x30, 0x40, 0x50, 0x60]
        second.data = msd(company: 0xFFFF, [7])
        let packet = advertisingEvent([ours, other, noMSD, malformed, second])
        var out: [AdvertisementReport] = []
        let t = RadioInstant(nanoseconds: 42)
        let counts = try extract(packet: packet, companyID: 0xFFFF, timestamp: t, into: &out)
        XCTAssertEqual(counts.matched, 2)
        XCTAssertEqual(counts.ignored, 2)
        XCTAssertEqual(counts.malformed, 1)
        XCTAssertEqual(out, [
            AdvertisementReport(address: ours.deviceAddress, rssi: -60, companyID: 0xFFFF, data: [0xDE, 0xAD], timestamp: t),
            AdvertisementReport(address: second.deviceAddress, rssi: -60, companyID: 0xFFFF, data: [7], timestamp: t),
        ])
    }

    func testExtractorDropsFragmentsAndAppendsNothingForABrokenEvent() throws {
        var fragment = ours
        fragment.eventType = 0x0020
        var out: [AdvertisementReport] = []
        let counts = try extract(packet: advertisingEvent([fragment, ours], extended: true),
                                                        companyID: 0xFFFF, timestamp: .zero, into: &out)
        XCTAssertEqual(counts.fragments, 1)
        XCTAssertEqual(counts.matched, 1)
        XCTAssertEqual(out.count, 1)

        var broken = advertisingEvent([ours, ours])
        broken.removeLast()
        broken[2] -= 1
        XCTAssertThrowsError(try extract(packet: broken, companyID: 0xFFFF, timestamp: .zero, into: &out))
        XCTAssertEqual(out.count, 1, "a malformed event must not deliver its first reports")
    }

    func testIsAdvertisingReportEvent() {
        XCTAssertTrue(HCIEvent.isAdvertisingReportEvent(advertisingEvent([ours])))
        XCTAssertTrue(HCIEvent.isAdvertisingReportEvent(advertisingEvent([ours], extended: true)))
        XCTAssertFalse(HCIEvent.isAdvertisingReportEvent([0x04, 0x0E, 0x04, 0x01, 0x06, 0x20, 0x00]))
        XCTAssertFalse(HCIEvent.isAdvertisingReportEvent([0x04, 0x3E, 0x01]))
        XCTAssertFalse(HCIEvent.isAdvertisingReportEvent([0x04, 0x3E, 0x01, 0x01]))
    }
}
