/// What the doctor concludes from its findings: whether the tally (or a voter) can run here, which
/// beacon it would use, what that means for a room, and what would make it better. Pure.
public struct DoctorReport: Sendable, Hashable {
    /// The exit status of a doctor that found the program cannot run here (0: it can).
    public static let cannotRunStatus: Int32 = 3
    /// The first bluetoothd that takes extended advertising data (5.68 and before cap it at 31 bytes).
    public static let extendedBluetoothd = (5, 69)

    public let findings: DoctorFindings
    /// Why the program cannot run here; empty when it can.
    public let problems: [String]
    /// What would make it better (or make it run), most useful first.
    public let advice: [String]
    /// The beacon the tally would use; nil where it cannot run, or where the doctor tried nothing on the radio (raw HCI).
    public let reach: BeaconReach?

    public init(_ findings: DoctorFindings) {
        self.findings = findings
        let problems = Self.problems(findings)
        self.problems = problems
        reach = findings.radio != "bluez" || !problems.isEmpty ? nil
            : findings.extendedFrames.worked ? .extended : findings.broadcastWhileScanning.worked ? .legacy : .off
        advice = Self.advice(findings, reach: reach)
    }

    public var canRun: Bool { problems.isEmpty }
    public var exitStatus: Int32 { canRun ? 0 : Self.cannotRunStatus }
    public var figures: [CollectionFigure] { reach.map(CollectionFigures.figures) ?? [] }
    var chosenAdapter: DoctorFindings.Adapter? { findings.adapters.first { $0.name == findings.chosen } }

    static func problems(_ f: DoctorFindings) -> [String] {
        if let why = f.unreachable { return [why] }
        var out: [String] = []
        if case .denied(let why) = f.access { out.append("this user may not use the radio: \(why)") }
        if f.chosen == nil {
            out.append(f.notChosen ?? (f.adapters.isEmpty ? "no Bluetooth adapter" : "no adapter is powered"))
        } else if f.radio == "bluez", let a = f.adapters.first(where: { $0.name == f.chosen }), !a.powered {
            out.append("adapter \(a.name) is powered off")
        }
        return out
    }

    static func advice(_ f: DoctorFindings, reach: BeaconReach?) -> [String] {
        var out: [String] = []
        if f.unreachable != nil {
            out.append("or use --radio hci, which needs no bluetoothd (the adapter down, CAP_NET_RAW and CAP_NET_ADMIN)")
            return out
        }
        if case .denied = f.access {
            out.append(f.radio == "hci"
                ? "raw HCI needs CAP_NET_RAW and CAP_NET_ADMIN: run with sudo, or see docs/GUIDE.md (raw HCI)"
                : "install the project's D-Bus policy (dbus-policy/) and add this user to its group, then log in again")
        }
        if let a = f.adapters.first(where: { $0.name == f.chosen }), !a.powered {
            out.append("power it on: bluetoothctl power on")
        }
        guard f.chosen != nil, let reach else { return out }
        let adapter = f.adapters.first { $0.name == f.chosen }
        if reach != .extended {
            if adapter?.extendedAdvertising == false {
                out.append("a Bluetooth 5 USB adapter (LE Extended Advertising) would send extended frames: "
                           + "58 acknowledgements a frame instead of 3, and it broadcasts while it scans")
            } else {
                if let v = f.bluetoothd.number, v < extendedBluetoothd {
                    out.append("bluetoothd \(extendedBluetoothd.0).\(extendedBluetoothd.1) or later takes extended frames "
                               + "(this one is \(f.bluetoothd.version ?? "?"), which caps them at 31 bytes)")
                } else if f.bluetoothd.number == nil {
                    out.append("bluetoothd \(extendedBluetoothd.0).\(extendedBluetoothd.1) or later takes extended frames")
                }
                out.append("--radio hci sends extended frames itself, whatever bluetoothd does "
                           + "(it needs CAP_NET_RAW and CAP_NET_ADMIN, and takes the adapter from bluetoothd)")
            }
        }
        if f.role == .tally, reach != .off, let a = adapter, a.features.isEmpty {
            out.append("bluetoothd ignores the beacon's interval: set Experimental = true under [General] in "
                       + "/etc/bluetooth/main.conf, then restart bluetooth")
        }
        return out
    }
}
