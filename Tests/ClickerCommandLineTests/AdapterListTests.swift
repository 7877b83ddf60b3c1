import ClickerCommandLine
import XCTest

/// `clicker-tally --adapter`: one adapter or several, separated by commas.
final class AdapterListTests: XCTestCase {
    func parsed(_ text: String) throws -> [String] { try AdapterList.parse(text) }

    func refusal(_ text: String) -> String {
        do {
            let list = try AdapterList.parse(text)
            XCTFail("'\(text)' was taken as \(list)")
            return ""
        } catch {
            return "\(error)"
        }
    }

    func testNamesAndAddressesInTheOrderGiven() throws {
        XCTAssertEqual(try parsed("hci0"), ["hci0"])
        XCTAssertEqual(try parsed("hci1,hci0"), ["hci1", "hci0"])
        XCTAssertEqual(try parsed("hci0, hci12"), ["hci0", "hci12"], "a space after the comma is allowed")
        XCTAssertEqual(try parsed("00:1A:7D:DA:71:13,hci1"), ["00:1A:7D:DA:71:13", "hci1"])
    }

    func testAnAdapterGivenTwiceIsRefused() {
        XCTAssertEqual(refusal("hci0,hci1,hci0"), "--adapter: hci0 is given twice; name each adapter once")
        XCTAssertEqual(refusal("00:1a:7d:da:71:13,00:1A:7D:DA:71:13"),
                       "--adapter: 00:1A:7D:DA:71:13 is given twice; name each adapter once", "an address in either case")
    }

    func testAnEmptyItemOrABadNameIsRefused() {
        XCTAssertEqual(refusal("hci0,,hci1"),
                       "--adapter: an empty adapter name in 'hci0,,hci1'; give names separated by commas, like hci0,hci1")
        XCTAssertTrue(refusal("hci0,").contains("an empty adapter name"))
        for bad in ["wlan0", "hci", "hci01", "hcix", "hci-1", "00:1A:7D:DA:71", "hci0;hci1"] {
            XCTAssertTrue(refusal(bad).contains("is not an adapter; give a name like hci0"), bad)
        }
        XCTAssertEqual(refusal("hci0,usb"),
                       "--adapter: 'usb' is not an adapter; give a name like hci0 or, on BlueZ, an address like "
                       + "00:1A:7D:DA:71:13 (clicker-tally doctor lists them)")
    }
}
