@testable import BlueZ
import ClickerTransport
@testable import DBus
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
                                                       "Paired": .boolean(false), "Alias": .string("00-AA-01-00-00-01"),
                                                       "ManufacturerData": .dictionary(key: .uint16, value: .variant, [])],
                                "org.freedesktop.DBus.Introspectable": [:], "org.freedesktop.DBus.Properties": [:]])
        XCTAssertEqual(m.devicePath(adapter: adapter, address: DeviceAddress("00:AA:01:00:00:01")!), dev)
        XCTAssertEqual(m.properties(dev, "org.bluez.Device1"), ["Address": .string("00:AA:01:00:00:01"), "Paired": .boolean(false)],
                       "only the device properties the backends read, variants unwrapped")
        XCTAssertEqual(m.objects[dev].map { Set($0.keys) }, ["org.bluez.Device1"], "freedesktop interfaces are not mirrored")
        m.propertiesChanged(dev, "org.bluez.Device1", ["ServicesResolved": .variant(.boolean(true)), "RSSI": .int16(-50)], ["Paired"])
        XCTAssertEqual(m.bool(dev, "org.bluez.Device1", "ServicesResolved"), true)
        XCTAssertNil(m.properties(dev, "org.bluez.Device1")?["RSSI"], "changes to properties nobody reads are not kept")
        XCTAssertNil(m.properties(dev, "org.bluez.Device1")?["Paired"], "invalidated")
        m.interfacesAdded("/org/bluez/hci0/dev_00_AA_01_00_00_02", ["org.freedesktop.DBus.Properties": [:]])
        XCTAssertNil(m.objects["/org/bluez/hci0/dev_00_AA_01_00_00_02"], "no object for interfaces that are not kept")
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

    /// GetManagedObjects decoded straight into the mirror keeps exactly what building it from the
    /// decoded dictionary keeps, through real libdbus marshalling.
    func testDecodingAReplyKeepsWhatTheMirrorKeeps() throws {
        let managed: [DBusObjectPath: [String: [String: DBusValue]]] = [
            "/org/bluez/hci0": ["org.bluez.Adapter1": ["Address": .string("00:01:02:03:04:05"), "Powered": .boolean(true),
                                                       "Name": .string("laptop")],
                                "org.bluez.LEAdvertisingManager1": ["SupportedInstances": .byte(4)],
                                "org.freedesktop.DBus.Properties": [:]],
            "/org/bluez/hci0/dev_C0_00_00_00_00_01": [
                "org.bluez.Device1": ["Address": .string("C0:00:00:00:00:01"), "AddressType": .string("random"),
                                      "Alias": .string("C0-00-00-00-00-01"), "Paired": .boolean(false),
                                      "Connected": .boolean(false), "RSSI": .int16(-60),
                                      "UUIDs": .array("s", []), "ServicesResolved": .boolean(false),
                                      "ManufacturerData": .dictionary(key: "q", value: "v", [
                                          DBusDictEntry(.uint16(0xFFFF), .variant(.bytes([1, 2, 3])))])],
                "org.freedesktop.DBus.Introspectable": [:]],
            "/org/bluez": ["org.bluez.AgentManager1": [:]],
            "/org/bluez/hci0/dev_C0_00_00_00_00_02": ["org.freedesktop.DBus.Properties": [:]],
        ]
        let message = try DBusMessage.methodCall(destination: nil, path: "/", interface: "org.example.T", member: "Reply",
                                                 arguments: [managed.dbusValue])
        let decoded = try message.decode(ObjectMirror.self)
        XCTAssertEqual(decoded.objects, ObjectMirror(managedObjects: managed).objects)
        XCTAssertEqual(Set(decoded.objects.keys), ["/org/bluez/hci0", "/org/bluez/hci0/dev_C0_00_00_00_00_01", "/org/bluez"])
        XCTAssertEqual(decoded.properties("/org/bluez/hci0/dev_C0_00_00_00_00_01", "org.bluez.Device1"),
                       ["Address": .string("C0:00:00:00:00:01"), "Paired": .boolean(false), "Connected": .boolean(false),
                        "ServicesResolved": .boolean(false)])
        XCTAssertEqual(decoded.properties("/org/bluez/hci0", "org.bluez.Adapter1")?.count, 3, "adapters are kept whole")
        XCTAssertNotNil(decoded.properties("/org/bluez/hci0", "org.bluez.LEAdvertisingManager1"))
    }

    /// The parent→child indices (device → services → characteristics) follow every add and remove, in a
    /// mirror built from signals and in one decoded from a GetManagedObjects reply.
    func testGATTIndicesFollowTheTree() throws {
        let dev: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_00_00_01"
        let other: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_00_00_02"
        let sPath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_00_00_01/service0001"
        let cPath: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_00_00_01/service0001/char0002"
        let service = UUID128("6e400001-b5a3-f393-e0a9-e50e24dcca9e")!
        let char = UUID128("6e400002-b5a3-f393-e0a9-e50e24dcca9e")!
        let managed: [DBusObjectPath: [String: [String: DBusValue]]] = [
            dev: ["org.bluez.Device1": ["Address": .string("00:AA:01:00:00:01")]],
            other: ["org.bluez.Device1": ["Address": .string("00:AA:01:00:00:02")]],
            sPath: ["org.bluez.GattService1": ["UUID": .string(service.description), "Device": .objectPath(dev)]],
            cPath: ["org.bluez.GattCharacteristic1": ["UUID": .string(char.description), "Service": .objectPath(sPath)]],
        ]
        let message = try DBusMessage.methodCall(destination: nil, path: "/", interface: "org.example.T", member: "Reply",
                                                 arguments: [managed.dbusValue])
        for var m in [ObjectMirror(managedObjects: managed), try message.decode(ObjectMirror.self)] {
            XCTAssertEqual(m.servicesOfDevice, [dev: [sPath]])
            XCTAssertEqual(m.characteristicsOfService, [sPath: [cPath]])
            XCTAssertEqual(m.characteristicPath(device: dev, service: service, characteristic: char), cPath)
            XCTAssertNil(m.characteristicPath(device: other, service: service, characteristic: char), "another device's")
            m.interfacesRemoved(cPath, ["org.bluez.GattCharacteristic1"])
            XCTAssertEqual(m.characteristicsOfService, [:])
            XCTAssertNil(m.characteristicPath(device: dev, service: service, characteristic: char))
            m.interfacesAdded(cPath, managed[cPath]!)
            XCTAssertEqual(m.characteristicPath(device: dev, service: service, characteristic: char), cPath)
            m.removeSubtree(dev)
            XCTAssertEqual(m.servicesOfDevice, [:])
            XCTAssertEqual(m.characteristicsOfService, [:])
            XCTAssertNil(m.characteristicPath(device: dev, service: service, characteristic: char))
        }
    }

    /// A device whose path does not encode its address is found by its Address property, through an
    /// index, not a scan; devices whose path does encode it are not indexed at all.
    func testDevicesAtUnusualPathsAreIndexedByAddress() {
        let odd: DBusObjectPath = "/org/bluez/hci0/peer7"
        let address = DeviceAddress("00:AA:01:00:00:07")!
        var m = ObjectMirror()
        m.interfacesAdded("/org/bluez/hci0/dev_00_AA_01_00_00_01", ["org.bluez.Device1": ["Address": .string("00:AA:01:00:00:01")]])
        XCTAssertEqual(m.devicesByAddress, [:])
        m.interfacesAdded(odd, ["org.bluez.Device1": ["Address": .string(address.description)]])
        XCTAssertEqual(m.devicePath(adapter: "/org/bluez/hci0", address: address), odd)
        XCTAssertNil(m.devicePath(adapter: "/org/bluez/hci1", address: address), "below another adapter")
        m.interfacesRemoved(odd, ["org.bluez.Device1"])
        XCTAssertNil(m.devicePath(adapter: "/org/bluez/hci0", address: address))
        XCTAssertEqual(m.devicesByAddress, [:])
    }
}
