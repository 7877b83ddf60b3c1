import ClickerTransport
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

    /// The receiving walk is `AdvertisementExtractor`'s: one legacy report carrying `ad`.
    func payload(_ ad: [UInt8], company: UInt16 = 0xFFFF) throws -> (data: [UInt8]?, counts: ExtractionCounts) {
        let report = ReportModel(eventType: 0, addressType: 0, address: [1, 2, 3, 4, 5, 6], data: ad, rssi: 0xC4)
        var out: [AdvertisementReport] = []
        let counts = try extract(packet: advertisingEvent([report]), companyID: company,
                                                        timestamp: .zero, into: &out)
        return (out.first?.data, counts)
    }

    func testBuiltDataIsFoundByTheExtractor() throws {
        let ad = try AdvertisingData.build(companyID: 0xFFFF, payload: Array(0..<22))
        XCTAssertEqual(try payload(ad).data, Array(0..<22))
    }

    func testExtractorFindsTheWantedCompany() throws {
        let ad: [UInt8] = [0x02, 0x01, 0x06] + [0x05, 0xFF, 0x4C, 0x00, 0xAA, 0xBB] + [0x04, 0xFF, 0xFF, 0xFF, 0x42]
        XCTAssertEqual(try payload(ad).data, [0x42])
        XCTAssertEqual(try payload(ad, company: 0x004C).data, [0xAA, 0xBB])
        let none = try payload(ad, company: 0x0006)
        XCTAssertNil(none.data)
        XCTAssertEqual(none.counts.ignored, 1)
    }

    func testZeroLengthEndsTheSignificantPart() throws {
        let ad: [UInt8] = [0x02, 0x01, 0x06, 0x00, 0x04, 0xFF, 0xFF, 0xFF, 0x01]
        let r = try payload(ad)
        XCTAssertNil(r.data)
        XCTAssertEqual(r.counts.ignored, 1)
        XCTAssertEqual(r.counts.malformed, 0)
    }

    func testTooShortManufacturerStructureIsNotAMatch() throws {
        // Length 2: type + one octet, no room for a company identifier.
        let ad: [UInt8] = [0x02, 0xFF, 0xFF, 0x04, 0xFF, 0xFF, 0xFF, 0x09]
        XCTAssertEqual(try payload(ad).data, [0x09])
    }

    func testOverrunningStructureIsCountedMalformed() throws {
        let ad: [UInt8] = [0x02, 0x01, 0x06, 0x09, 0xFF, 0xFF, 0xFF]
        let r = try payload(ad)
        XCTAssertNil(r.data)
        XCTAssertEqual(r.counts.malformed, 1)
        XCTAssertEqual(r.counts.ignored, 0)
    }
}
