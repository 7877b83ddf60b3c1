import ClickerDoctor
import Foundation
import XCTest

/// The doctor's conclusions from findings: exit status, the beacon it names, the figures, the advice, and the
/// JSON keys scripts read.
final class DoctorReportTests: XCTestCase {
    static let bt5 = DoctorFindings.Adapter(name: "hci0", address: "00:AA:01:00:00:23", powered: true, extendedAdvertising: true,
                                            maxAdvertisingLength: 251, features: ["CanSetTxPower"])
    static let bt4 = DoctorFindings.Adapter(name: "hci0", address: "00:AA:01:00:00:23", powered: true, extendedAdvertising: false)

    /// A Debian 12 laptop: bluetoothd 5.66, a Bluetooth 5 controller, the extended probe refused.
    func debian12() -> DoctorFindings {
        DoctorFindings(role: .tally, access: .allowed, bluetoothd: .init(version: "5.66", source: "bluetoothd --version on PATH"),
                       adapters: [Self.bt5], chosen: "hci0", broadcastWhileScanning: .worked,
                       extendedFrames: .failed("refused"), frameLength: 24)
    }

    func testBluetoothd566WithABluetooth5ControllerRunsInLegacyFramesAndNamesTheWaysOut() {
        let r = DoctorReport(debian12())
        XCTAssertTrue(r.canRun)
        XCTAssertEqual(r.exitStatus, 0)
        XCTAssertEqual(r.reach, .legacy)
        XCTAssertEqual(r.figures.map(\.voters), [40, 300, 1000])
        XCTAssertEqual(r.figures[2].seconds99, 8.15, "the legacy beacon's 1,000 voters (docs/SIMULATION.md)")
        XCTAssertTrue(r.advice.contains { $0.contains("bluetoothd 5.69 or later") && $0.contains("5.66") }, "\(r.advice)")
        XCTAssertTrue(r.advice.contains { $0.contains("--radio hci") })
        XCTAssertFalse(r.advice.contains { $0.contains("USB adapter") }, "the controller already has extended advertising")
        XCTAssertTrue(r.text.contains("legacy frames of 24 bytes"))
        XCTAssertTrue(r.text.contains("room of 1,000: 99 % counted in 8.15 s, all in 12.49 s; 17.5 % see *counted* within 1 s"), r.text)
    }

    func testExtendedFramesNeedNoAdviceButTheFiguresAreTheExtendedOnes() {
        var f = debian12()
        f.bluetoothd.version = "5.82"
        f.extendedFrames = .worked
        f.frameLength = 222
        let r = DoctorReport(f)
        XCTAssertEqual(r.reach, .extended)
        XCTAssertEqual(r.figures[1].seconds99, 1.37)
        XCTAssertEqual(r.advice, [])
        XCTAssertTrue(r.text.contains("extended frames of 222 bytes"))
    }

    func testABluetooth4ControllerThatCannotBroadcastWhileScanningRunsWithoutBeaconAndIsToldToGetABluetooth5Adapter() {
        var f = debian12()
        f.adapters = [Self.bt4]
        f.broadcastWhileScanning = .failed("org.bluez.Error.Failed")
        f.extendedFrames = .notTried("no extended advertising")
        let r = DoctorReport(f)
        XCTAssertTrue(r.canRun, "the tally counts without its beacon")
        XCTAssertEqual(r.reach, .off)
        XCTAssertNil(r.figures[2].seconds99, "1,000 voters without a beacon are not all counted in 30 s")
        XCTAssertTrue(r.advice.first?.contains("Bluetooth 5 USB adapter") == true, "\(r.advice)")
        XCTAssertTrue(r.text.contains("voters need --question N"))
    }

    func testWhatStopsTheTallyGivesTheCannotRunStatus() {
        let cases: [(DoctorFindings, String)] = [
            (DoctorFindings(role: .tally, unreachable: "bluetoothd is not running"), "bluetoothd is not running"),
            (DoctorFindings(role: .tally, access: .denied("org.freedesktop.DBus.Error.AccessDenied: rejected")), "may not use the radio"),
            (DoctorFindings(role: .tally, access: .allowed, adapters: []), "no Bluetooth adapter"),
            ({ var f = debian12(); f.adapters[0].powered = false; return f }(), "powered off"),
            (DoctorFindings(role: .vote, access: .allowed, adapters: [Self.bt5], notChosen: "no Bluetooth adapter matches hci3"), "hci3"),
        ]
        for (f, why) in cases {
            let r = DoctorReport(f)
            XCTAssertFalse(r.canRun, why)
            XCTAssertEqual(r.exitStatus, DoctorReport.cannotRunStatus)
            XCTAssertNil(r.reach, "no beacon named where the tally cannot run")
            XCTAssertEqual(r.figures, [])
            XCTAssertTrue(r.problems.contains { $0.contains(why) }, "\(r.problems) lacks \(why)")
            XCTAssertTrue(r.text.hasPrefix(f.role == .tally ? "The tally cannot run here:" : "A voter cannot run here:"), r.text)
        }
    }

    func testTheExperimentalSettingIsAdvisedOnlyWhereBluetoothdListsNoFeatures() {
        var f = debian12()
        XCTAssertFalse(DoctorReport(f).advice.contains { $0.contains("Experimental") })
        f.adapters[0].features = []
        XCTAssertTrue(DoctorReport(f).advice.contains { $0.contains("Experimental = true") })
    }

    func testTheVotersReportSaysWhetherATallyIsHeard() {
        var f = debian12()
        f.role = .vote
        f.extendedFrames = .notTried("a voter sends legacy frames only")
        f.tallyHeard = false
        f.listenedSeconds = 6
        XCTAssertTrue(DoctorReport(f).text.contains("no tally's beacon heard in 6.00 s"))
        f.tallyHeard = true
        XCTAssertTrue(DoctorReport(f).text.contains("a tally's beacon is heard here"))
    }

    func testTheJSONKeysAreAlwaysThereWithNullWhereNotKnown() throws {
        let keys = ["access", "adapter", "adapters", "advice", "beacon", "bluetoothd", "broadcastWhileScanning", "canRun",
                    "exitStatus", "extendedFrames", "figures", "frameLength", "listenedSeconds", "problems", "radio", "role",
                    "tallyHeard"]
        for f in [debian12(), DoctorFindings(role: .vote, unreachable: "no bus")] {
            let r = DoctorReport(f)
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.json.utf8)) as? [String: Any])
            XCTAssertEqual(object.keys.sorted(), keys)
            XCTAssertEqual(object["canRun"] as? Bool, r.canRun)
            XCTAssertEqual(object["exitStatus"] as? Int, Int(r.exitStatus))
            XCTAssertEqual(object["beacon"] as? String, r.reach?.rawValue)
            XCTAssertEqual((object["figures"] as? [[String: Any]])?.count, r.canRun ? 3 : 0, "no figures where the tally cannot run")
        }
        let r = DoctorReport(debian12())
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(r.json.utf8)) as? [String: Any])
        XCTAssertEqual((object["bluetoothd"] as? [String: Any])?["version"] as? String, "5.66")
        XCTAssertEqual((object["extendedFrames"] as? [String: Any])?["state"] as? String, "failed")
        XCTAssertEqual((object["access"] as? [String: Any])?["state"] as? String, "allowed")
        XCTAssertTrue((object["tallyHeard"] as Any?) is NSNull, "null, not absent")
        let adapter = try XCTUnwrap((object["adapters"] as? [[String: Any]])?.first)
        XCTAssertEqual(adapter["maxAdvertisingLength"] as? Int, 251)
        XCTAssertEqual(adapter["extendedAdvertising"] as? Bool, true)
    }

    func testTheFiguresTableHasEveryRoomForEveryBeacon() {
        for reach in BeaconReach.allCases {
            XCTAssertEqual(CollectionFigures.figures(reach).map(\.voters), CollectionFigures.rooms, "\(reach)")
        }
        // A better beacon is never slower for a big room.
        XCTAssertLessThan(CollectionFigures.figures(.extended)[2].seconds99 ?? .infinity,
                          CollectionFigures.figures(.legacy)[2].seconds99 ?? .infinity)
    }
}
