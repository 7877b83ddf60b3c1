@testable import BlueZ
import ClickerTransport
import DBus
import XCTest

/// Pure parts of the central: device paths and the object mirror.
final class ObjectMirrorTests: XCTestCase {
    func testDevicePathAddressParsing() {
        XCTAssertEqual(DevicePath.address(of: "/org/bluez/hci0/dev_00_AA_01_00_00_0F"), DeviceAddress("00:AA:01:00:00:0F"))
        XCTAssertEqual(DevicePath.address(of: "/org/bluez/hci1/dev_c0_ff_ee_00_11_22"), DeviceAddress("C0:FF:EE:00:11:22"))
        for bad in ["", "/", "/org/bluez/hci0", "/org/bluez/hci0/dev_00_AA_01_00_00", "/org/bluez/hci0/dev_00_AA_01_00_00_0G",
                    "/org/bluez/hci0/dev_00_AA_01_00_00_0F/service0001", "/org/bluez/hci0/dev_00-AA-01-00-00-0F",
                    "/org/bluez/hci0/xev_00_AA_01_00_00_0F"] {
            XCTAssertNil(DevicePath.address(of: bad), bad)
        }
        let a = DeviceAddress("12:34:56:78:9A:BC")!
        XCTAssertEqual(DevicePath.path(adapter: "/org/bluez/hci0", address: a)?.rawValue, "/org/bluez/hci0/dev_12_34_56_78_9A_BC")
    }

    func testMirrorFollowsAddsRemovesAndChanges() {
        let adapter: DBusObjectPath = "/org/bluez/hci0"
        let dev: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_00_00_01"
        var m = ObjectMirror(managedObjects: [
            adapter: ["org.bluez.Adapter1": ["Address": .string("00:01:02:03:04:05"), "Powered": .boolean(true)]],
        ])
        XCTAssertEqual(m.adapters().map(\.name), ["hci0"])
        XCTAssertEqual(m.adapters().first?.powered, true)
        m.interfacesAdded(dev, ["org.bluez.Device1": ["Address": .variant(.string("00:AA:01:00:00:01")), "RSSI": .int16(-40),
                                                       "ManufacturerData": .dictionary(key: .uint16, value: .variant, [])]])
        XCTAssertEqual(m.devicePath(adapter: adapter, address: DeviceAddress("00:AA:01:00:00:01")!), dev)
        XCTAssertNil(m.properties(dev, "org.bluez.Device1")?["ManufacturerData"], "advertising blobs are not mirrored")
        XCTAssertEqual(m.properties(dev, "org.bluez.Device1")?["Address"], .string("00:AA:01:00:00:01"), "variants unwrapped")
        m.propertiesChanged(dev, "org.bluez.Device1", ["ServicesResolved": .variant(.boolean(true))], ["RSSI"])
        XCTAssertEqual(m.bool(dev, "org.bluez.Device1", "ServicesResolved"), true)
        XCTAssertNil(m.properties(dev, "org.bluez.Device1")?["RSSI"])
        m.propertiesChanged("/org/bluez/hci0/dev_unknown", "org.bluez.Device1", ["Connected": .boolean(true)], [])
        XCTAssertEqual(m.count, 2, "changes to unknown objects are ignored")

        let service = UUID128("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!
        let char = UUID128("6e400002-b5a3-f393-e0a9-e50e24dcca9e")!
        let sPath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_00_00_01/service0001"
        let cPath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_00_00_01/service0001/char0002"
        m.interfacesAdded(sPath, ["org.bluez.GattService1": ["UUID": .string(service.description.uppercased())]])
        m.interfacesAdded(cPath, ["org.bluez.GattCharacteristic1": ["UUID": .string(char.description), "Service": .objectPath(sPath)]])
        XCTAssertEqual(m.characteristicPath(device: dev, service: service, characteristic: char), cPath)
        XCTAssertNil(m.characteristicPath(device: dev, service: char, characteristic: char))

        m.interfacesRemoved(dev, ["org.bluez.Device1"])
        XCTAssertNil(m.properties(dev, "org.bluez.Device1"))
        m.removeSubtree(adapter)
        XCTAssertEqual(m.count, 0)
    }
}
