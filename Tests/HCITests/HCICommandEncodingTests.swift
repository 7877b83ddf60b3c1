import ClickerTransport
@testable import HCI
import XCTest

/// Byte-exact command packets, checked against the layouts of Core Specification v5.4
/// Vol 4 Part E (§5.4.1 packet format: indicator 0x01, opcode LE, length, parameters).
final class HCICommandEncodingTests: XCTestCase {
    func testOpcodeSplitsIntoOGFAndOCF() {
        let cases: [(HCIOpcode, UInt16, UInt8, UInt16)] = [
            (.reset, 0x0C03, 0x03, 0x0003),
            (.setEventMask, 0x0C01, 0x03, 0x0001),
            (.readBDAddr, 0x1009, 0x04, 0x0009),
            (.leSetEventMask, 0x2001, 0x08, 0x0001),
            (.leSetRandomAddress, 0x2005, 0x08, 0x0005),
            (.leSetAdvertisingParameters, 0x2006, 0x08, 0x0006),
            (.leSetAdvertisingData, 0x2008, 0x08, 0x0008),
            (.leSetAdvertisingEnable, 0x200A, 0x08, 0x000A),
            (.leSetScanParameters, 0x200B, 0x08, 0x000B),
            (.leSetScanEnable, 0x200C, 0x08, 0x000C),
        ]
        for (op, raw, ogf, ocf) in cases {
            XCTAssertEqual(op.rawValue, raw, "\(op)")
            XCTAssertEqual(op.ogf, ogf, "\(op)")
            XCTAssertEqual(op.ocf, ocf, "\(op)")
            XCTAssertEqual(HCIOpcode(rawValue: raw), op)
        }
    }

    func testReset() {
        XCTAssertEqual(HCICommand.reset.packet, [0x01, 0x03, 0x0C, 0x00])
    }

    func testReadBDAddr() {
        XCTAssertEqual(HCICommand.readBDAddr.packet, [0x01, 0x09, 0x10, 0x00])
    }

    func testSetEventMaskEnablesLEMetaLittleEndian() {
        // Default mask 0x00001FFFFFFFFFFF plus bit 61 (LE Meta event).
        XCTAssertEqual(HCICommand.setEventMask(HCICommand.eventMaskWithLEMeta).packet,
                       [0x01, 0x01, 0x0C, 0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x1F, 0x00, 0x20])
    }

    func testLESetEventMaskEnablesAdvertisingAndExtendedReports() {
        // Subevents 0x01–0x05 (bits 0–4) and 0x0D (bit 12).
        XCTAssertEqual(HCICommand.leSetEventMask(HCICommand.leEventMaskWithExtendedReports).packet,
                       [0x01, 0x01, 0x20, 0x08, 0x1F, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00])
    }

    func testLESetRandomAddressIsLeastSignificantOctetFirst() throws {
        let a = try XCTUnwrap(DeviceAddress("C1:22:33:44:55:66"))
        XCTAssertEqual(HCICommand.leSetRandomAddress(a).packet,
                       [0x01, 0x05, 0x20, 0x06, 0x66, 0x55, 0x44, 0x33, 0x22, 0xC1])
    }

    func testLESetAdvertisingParametersNonConnectable100ms() throws {
        let p = AdvertisingParameters(intervalMin: 0x00A0, intervalMax: 0x00A0, type: .nonConnectableUndirected)
        XCTAssertEqual(try HCICommand.leSetAdvertisingParameters(p).packet, [
            0x01, 0x06, 0x20, 0x0F,
            0xA0, 0x00,                          // Advertising_Interval_Min
            0xA0, 0x00,                          // Advertising_Interval_Max
            0x03,                                // Advertising_Type ADV_NONCONN_IND
            0x00,                                // Own_Address_Type public
            0x00,                                // Peer_Address_Type
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // Peer_Address
            0x07,                                // Advertising_Channel_Map 37, 38, 39
            0x00,                                // Advertising_Filter_Policy
        ])
    }

    func testLESetAdvertisingParametersOtherValuesLandInTheirFields() throws {
        let p = AdvertisingParameters(intervalMin: 0x0800, intervalMax: 0x1234, type: .scannableUndirected,
                                      ownAddressType: .randomAddress, channelMap: 0x05, filterPolicy: 0x01)
        XCTAssertEqual(try HCICommand.leSetAdvertisingParameters(p).packet, [
            0x01, 0x06, 0x20, 0x0F, 0x00, 0x08, 0x34, 0x12, 0x02, 0x01, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x01,
        ])
        let ind = AdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20, type: .connectableUndirected)
        XCTAssertEqual(try HCICommand.leSetAdvertisingParameters(ind).parameters[4], 0x00)
    }

    func testLESetAdvertisingParametersRejectsWhatTheSpecForbids() {
        let bad: [AdvertisingParameters] = [
            .init(intervalMin: 0x001F, intervalMax: 0x00A0, type: .nonConnectableUndirected),
            .init(intervalMin: 0x00A0, intervalMax: 0x4001, type: .nonConnectableUndirected),
            .init(intervalMin: 0x0100, intervalMax: 0x00A0, type: .nonConnectableUndirected),
            .init(intervalMin: 0x00A0, intervalMax: 0x00A0, type: .nonConnectableUndirected, channelMap: 0x00),
            .init(intervalMin: 0x00A0, intervalMax: 0x00A0, type: .nonConnectableUndirected, channelMap: 0x08),
            .init(intervalMin: 0x00A0, intervalMax: 0x00A0, type: .nonConnectableUndirected, filterPolicy: 4),
        ]
        for p in bad {
            XCTAssertThrowsError(try HCICommand.leSetAdvertisingParameters(p), "\(p)") { error in
                guard case HCIError.invalidParameter = error else { return XCTFail("\(error)") }
            }
        }
    }

    func testLESetAdvertisingDataPadsTo31() throws {
        let data = msd(company: 0xFFFF, [0xAA, 0xBB])
        let packet = try HCICommand.leSetAdvertisingData(data).packet
        XCTAssertEqual(packet.count, 4 + 32)
        XCTAssertEqual(Array(packet[0..<5]), [0x01, 0x08, 0x20, 0x20, UInt8(data.count)])
        XCTAssertEqual(Array(packet[5..<(5 + data.count)]), data)
        XCTAssertEqual(Array(packet[(5 + data.count)...]), [UInt8](repeating: 0, count: 31 - data.count))
        // Exactly 31 octets fits, with no padding.
        let full = [UInt8](repeating: 0x5A, count: 31)
        XCTAssertEqual(try HCICommand.leSetAdvertisingData(full).packet, [0x01, 0x08, 0x20, 0x20, 31] + full)
        XCTAssertThrowsError(try HCICommand.leSetAdvertisingData([UInt8](repeating: 0, count: 32))) { error in
            XCTAssertEqual(error as? HCIError, .advertisingDataTooLong(bytes: 32, maximum: 31))
        }
    }

    func testLESetAdvertisingEnable() {
        XCTAssertEqual(HCICommand.leSetAdvertisingEnable(true).packet, [0x01, 0x0A, 0x20, 0x01, 0x01])
        XCTAssertEqual(HCICommand.leSetAdvertisingEnable(false).packet, [0x01, 0x0A, 0x20, 0x01, 0x00])
    }

    func testLESetScanParameters() throws {
        let passive = ScanParameters(interval: 0x00A0, window: 0x00A0)
        XCTAssertEqual(try HCICommand.leSetScanParameters(passive).packet,
                       [0x01, 0x0B, 0x20, 0x07, 0x00, 0xA0, 0x00, 0xA0, 0x00, 0x00, 0x00])
        let active = ScanParameters(active: true, interval: 0x0800, window: 0x0012, ownAddressType: .randomAddress,
                                    filterPolicy: 0x01)
        XCTAssertEqual(try HCICommand.leSetScanParameters(active).packet,
                       [0x01, 0x0B, 0x20, 0x07, 0x01, 0x00, 0x08, 0x12, 0x00, 0x01, 0x01])
        for bad in [ScanParameters(interval: 0x0003, window: 0x0003), ScanParameters(interval: 0x4001, window: 0x10),
                    ScanParameters(interval: 0x0010, window: 0x0011)] {
            XCTAssertThrowsError(try HCICommand.leSetScanParameters(bad), "\(bad)")
        }
    }

    func testLESetScanEnable() {
        XCTAssertEqual(HCICommand.leSetScanEnable(true, filterDuplicates: false).packet, [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00])
        XCTAssertEqual(HCICommand.leSetScanEnable(true, filterDuplicates: true).packet, [0x01, 0x0C, 0x20, 0x02, 0x01, 0x01])
        XCTAssertEqual(HCICommand.leSetScanEnable(false, filterDuplicates: false).packet, [0x01, 0x0C, 0x20, 0x02, 0x00, 0x00])
    }

    func testTimeSlotConversion() {
        let adv = HCITimeSlots.advertisingIntervalRange
        XCTAssertEqual(HCITimeSlots.slots(.milliseconds(100), clampedTo: adv), 160)
        XCTAssertEqual(HCITimeSlots.slots(.milliseconds(20), clampedTo: adv), 0x20)
        XCTAssertEqual(HCITimeSlots.slots(.milliseconds(1280), clampedTo: adv), 0x800)
        XCTAssertEqual(HCITimeSlots.slots(.milliseconds(10240), clampedTo: adv), 0x4000)
        XCTAssertEqual(HCITimeSlots.slots(.microseconds(100_300), clampedTo: adv), 160)   // rounds down
        XCTAssertEqual(HCITimeSlots.slots(.microseconds(100_400), clampedTo: adv), 161)   // rounds up
        XCTAssertEqual(HCITimeSlots.slots(.milliseconds(5), clampedTo: adv), 0x20)        // clamped
        XCTAssertEqual(HCITimeSlots.slots(.seconds(3600), clampedTo: adv), 0x4000)
        XCTAssertEqual(HCITimeSlots.slots(.seconds(-1), clampedTo: adv), 0x20)
        XCTAssertEqual(HCITimeSlots.slots(.milliseconds(100), clampedTo: HCITimeSlots.scanIntervalRange), 160)
        XCTAssertEqual(HCITimeSlots.duration(slots: 160), .milliseconds(100))
    }
}
