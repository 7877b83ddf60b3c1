@testable import HCI
import XCTest

final class ADStructureTests: XCTestCase {
    func testBuildFlagsAndManufacturerData() throws {
        XCTAssertEqual(try AdvertisingData.build(companyID: 0xFFFF, payload: [1, 2, 3]),
                       [0x02, 0x01, 0x06, 0x06, 0xFF, 0xFF, 0xFF, 1, 2, 3])
        XCTAssertEqual(try AdvertisingData.build(flags: 0x04, companyID: 0x004C, payload: []),
                       [0x02, 0x01, 0x04, 0x03, 0xFF, 0x4C, 0x00])
    }

    func testBuildLimitIs24PayloadBytes() throws {
        XCTAssertEqual(AdvertisingData.maximumManufacturerPayload, 24)
        XCTAssertEqual(try AdvertisingData.build(companyID: 0xFFFF, payload: [UInt8](repeating: 7, count: 24)).count, 31)
        XCTAssertThrowsError(try AdvertisingData.build(companyID: 0xFFFF, payload: [UInt8](repeating: 7, count: 25))) {
            XCTAssertEqual($0 as? HCIError, .advertisingDataTooLong(bytes: 32, maximum: 31))
        }
    }

    func testManufacturerDataFindsTheWantedCompany() throws {
        let ad: [UInt8] = [0x02, 0x01, 0x06] + [0x05, 0xFF, 0x4C, 0x00, 0xAA, 0xBB] + [0x04, 0xFF, 0xFF, 0xFF, 0x42]
        XCTAssertEqual(try AdvertisingData.manufacturerData(ad[...], companyID: 0xFFFF).map(Array.init), [0x42])
        XCTAssertEqual(try AdvertisingData.manufacturerData(ad[...], companyID: 0x004C).map(Array.init), [0xAA, 0xBB])
        XCTAssertNil(try AdvertisingData.manufacturerData(ad[...], companyID: 0x0006))
        XCTAssertEqual(try AdvertisingData.structures(ad[...]).map(\.type), [0x01, 0xFF, 0xFF])
    }

    func testManufacturerDataOnASliceWithNonZeroStart() throws {
        let packet: [UInt8] = [9, 9, 9] + msd(company: 0xFFFF, [5, 6]) + [9]
        let slice = packet[3..<(packet.count - 1)]
        XCTAssertEqual(try AdvertisingData.manufacturerData(slice, companyID: 0xFFFF).map(Array.init), [5, 6])
    }

    func testZeroLengthEndsTheSignificantPart() throws {
        let ad: [UInt8] = [0x02, 0x01, 0x06, 0x00, 0x04, 0xFF, 0xFF, 0xFF, 0x01]
        XCTAssertNil(try AdvertisingData.manufacturerData(ad[...], companyID: 0xFFFF))
        XCTAssertEqual(try AdvertisingData.structures(ad[...]).count, 1)
    }

    func testTooShortManufacturerStructureIsNotAMatch() throws {
        // Length 2: type + one octet, no room for a company identifier.
        let ad: [UInt8] = [0x02, 0xFF, 0xFF, 0x04, 0xFF, 0xFF, 0xFF, 0x09]
        XCTAssertEqual(try AdvertisingData.manufacturerData(ad[...], companyID: 0xFFFF).map(Array.init), [0x09])
    }

    func testOverrunningStructureThrows() {
        let ad: [UInt8] = [0x02, 0x01, 0x06, 0x09, 0xFF, 0xFF, 0xFF]
        XCTAssertThrowsError(try AdvertisingData.manufacturerData(ad[...], companyID: 0xFFFF)) {
            XCTAssertEqual($0 as? HCIParseError, .malformedADStructure(offset: 3))
        }
        XCTAssertThrowsError(try AdvertisingData.structures(ad[...]))
    }
}
