import CBluetooth
import ClickerTransport
@testable import HCI
import XCTest
#if canImport(Glibc)
import Glibc
#endif

final class HCIErrorAndSocketTests: XCTestCase {
    func testAdapterNames() throws {
        XCTAssertEqual(try HCIError.adapterIndex("hci0"), 0)
        XCTAssertEqual(try HCIError.adapterIndex("hci1"), 1)
        XCTAssertEqual(try HCIError.adapterIndex("hci12"), 12)
        XCTAssertEqual(try HCIError.adapterIndex("3"), 3)
        for bad in ["", "hci", "hcix", "hci-1", "hci1 ", "bluetooth0", "hci65535", "hci99999", "hci١"] {
            XCTAssertThrowsError(try HCIError.adapterIndex(bad), bad) {
                XCTAssertEqual($0 as? HCIError, .invalidAdapterName(bad))
            }
        }
    }

    func testPermissionErrorNamesCapabilityAndCommand() {
        let e = HCIError.forBind(errno: EPERM, adapter: "hci1", program: "clicker-vote", bluetoothdRunning: false)
        XCTAssertEqual(e, .permissionDenied(capability: "CAP_NET_ADMIN",
                                            fix: "sudo setcap cap_net_raw,cap_net_admin+ep $(command -v clicker-vote), after making the binary 0750 root:clicker-hci"
            + " so that only that group can run it (docs/GUIDE.md: Raw HCI: capabilities for one group only)"))
        XCTAssertTrue(e.description.contains("CAP_NET_ADMIN"))
        XCTAssertTrue(e.description.contains("sudo setcap cap_net_raw,cap_net_admin+ep $(command -v clicker-vote), after making the binary 0750 root:clicker-hci"
            + " so that only that group can run it (docs/GUIDE.md: Raw HCI: capabilities for one group only)"))
        XCTAssertEqual(HCIError.forBind(errno: EACCES, adapter: "hci0", program: "clicker-tally", bluetoothdRunning: false),
                       .permissionDenied(capability: "CAP_NET_ADMIN",
                                         fix: "sudo setcap cap_net_raw,cap_net_admin+ep $(command -v clicker-tally), after making the binary 0750 root:clicker-hci"
            + " so that only that group can run it (docs/GUIDE.md: Raw HCI: capabilities for one group only)"))
        XCTAssertEqual(HCIError.forSocket(errno: EPERM, program: "clicker-tally"),
                       .permissionDenied(capability: "CAP_NET_RAW",
                                         fix: "sudo setcap cap_net_raw,cap_net_admin+ep $(command -v clicker-tally), after making the binary 0750 root:clicker-hci"
            + " so that only that group can run it (docs/GUIDE.md: Raw HCI: capabilities for one group only)"))
    }

    func testBusyAdapterRefusesAndExplainsHowToHandItOver() {
        let e = HCIError.forBind(errno: EBUSY, adapter: "hci1", program: "clicker-vote", bluetoothdRunning: true)
        XCTAssertEqual(e, .adapterBusy(adapter: "hci1", bluetoothdRunning: true))
        XCTAssertTrue(e.description.contains("bluetoothd"))
        XCTAssertTrue(e.description.contains("btmgmt --index 1 power off"))
        XCTAssertTrue(e.description.contains("hciconfig hci1 down"))
        XCTAssertTrue(e.description.contains("--radio bluez"))
        let quiet = HCIError.forBind(errno: EBUSY, adapter: "hci0", program: "x", bluetoothdRunning: false)
        XCTAssertFalse(quiet.description.contains("bluetoothd (running)"))
        XCTAssertTrue(quiet.description.hasPrefix("hci0 is up, so the kernel manages it"), quiet.description)
        // Down, yet refused: the kernel is still setting it up (or its setup failed).
        let setup = HCIError.forBind(errno: EBUSY, adapter: "hci0", program: "x", bluetoothdRunning: false, adapterUp: false)
        XCTAssertEqual(setup, .adapterNotReady("hci0"))
        XCTAssertTrue(setup.description.contains("dmesg"))
    }

    func testOtherBindAndSocketErrors() {
        XCTAssertEqual(HCIError.forBind(errno: ENODEV, adapter: "hci7", program: "x", bluetoothdRunning: false), .noSuchAdapter("hci7"))
        XCTAssertEqual(HCIError.forBind(errno: EUSERS, adapter: "hci0", program: "x", bluetoothdRunning: false), .adapterInUse("hci0"))
        XCTAssertEqual(HCIError.forBind(errno: EALREADY, adapter: "hci0", program: "x", bluetoothdRunning: false), .adapterInUse("hci0"))
        XCTAssertEqual(HCIError.forBind(errno: ERFKILL, adapter: "hci0", program: "x", bluetoothdRunning: false), .rfkillBlocked("hci0"))
        XCTAssertEqual(HCIError.forBind(errno: EINVAL, adapter: "hci0", program: "x", bluetoothdRunning: false),
                       .systemCall(call: "bind(hci0, HCI_CHANNEL_USER)", errno: EINVAL))
        XCTAssertEqual(HCIError.forSocket(errno: EAFNOSUPPORT, program: "x"), .bluetoothUnavailable(errno: EAFNOSUPPORT))
        XCTAssertTrue(HCIError.bluetoothUnavailable(errno: EAFNOSUPPORT).description.contains("AF_BLUETOOTH"))
        XCTAssertEqual(HCIError.forSocket(errno: EMFILE, program: "x"), .systemCall(call: "socket(AF_BLUETOOTH)", errno: EMFILE))
        XCTAssertEqual(HCIError.statusText(0x12), "Invalid HCI Command Parameters (0x12)")
        XCTAssertEqual(HCIError.commandFailed(opcode: .leSetScanEnable, status: 0x0C).description,
                       "controller rejected LE Set Scan Enable (0x200C): Command Disallowed (0x0C)")
    }

    func testInvalidAdapterNameFailsBeforeAnySocket() {
        XCTAssertThrowsError(try HCISocket.open(adapter: "wlan0", program: "clicker-vote")) {
            XCTAssertEqual($0 as? HCIError, .invalidAdapterName("wlan0"))
        }
    }

    /// On a kernel without Bluetooth (this build machine) opening must fail with the typed
    /// `bluetoothUnavailable`; with Bluetooth, with one of the documented adapter errors or succeed.
    func testOpeningTheUserChannelYieldsATypedError() throws {
        let probe = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue), BTPROTO_HCI)
        let probeErrno = errno
        if probe >= 0 { close(probe) }
        do {
            let s = try HCISocket.open(adapter: "hci0", program: "clicker-tally")
            XCTAssertGreaterThanOrEqual(probe, 0, "opened although the kernel has no AF_BLUETOOTH")
            s.close()
            XCTAssertThrowsError(try s.write(HCICommand.reset.packet))
        } catch {
            if probe < 0 {
                XCTAssertEqual(probeErrno, EAFNOSUPPORT, "unexpected probe failure")
                XCTAssertEqual(error, .bluetoothUnavailable(errno: EAFNOSUPPORT))
            } else {
                switch error {
                case .noSuchAdapter, .adapterBusy, .adapterNotReady, .adapterInUse, .permissionDenied, .rfkillBlocked: break
                default: XCTFail("undocumented error \(error)")
                }
            }
        }
        if probe < 0 {
            XCTAssertThrowsError(try HCICentral(adapter: "hci0")) {
                XCTAssertEqual($0 as? HCIError, .bluetoothUnavailable(errno: EAFNOSUPPORT))
            }
            XCTAssertThrowsError(try HCIPeripheral(adapter: "hci1")) {
                XCTAssertEqual($0 as? HCIError, .bluetoothUnavailable(errno: EAFNOSUPPORT))
            }
        }
    }
}
