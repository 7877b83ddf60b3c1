import ClickerDoctor
import Glibc

/// What the doctor learns about raw HCI without taking the adapter: whether the adapter exists
/// (/sys/class/bluetooth) and whether the process may bind its user channel (CAP_NET_RAW and
/// CAP_NET_ADMIN, as held when the program started). It tries nothing on the radio.
public enum RawHCIDoctor {
    public static func examine(role: DoctorFindings.Role, adapter: String, capabilities: ProcessCapabilities.Sets?) -> DoctorFindings {
        var f = DoctorFindings(role: role, radio: "hci", bluetoothd: .init(version: nil, source: "not used by raw HCI"))
        let sets = capabilities ?? (try? ProcessCapabilities.current())
        if let s = sets {
            let missing = [("CAP_NET_RAW", ProcessCapabilities.netRaw), ("CAP_NET_ADMIN", ProcessCapabilities.netAdmin)]
                .filter { s.effective & (UInt64(1) << UInt64($0.1)) == 0 && s.permitted & (UInt64(1) << UInt64($0.1)) == 0 }
                .map(\.0)
            f.access = missing.isEmpty ? .allowed : .denied("\(missing.joined(separator: " and ")) not held")
        }
        if access("/sys/class/bluetooth/\(adapter)", F_OK) == 0 {
            f.chosen = adapter
        } else {
            f.notChosen = "no Bluetooth adapter \(adapter) (/sys/class/bluetooth/\(adapter) is missing)"
        }
        let why = "not tried on raw HCI (the doctor tries the radio through bluetoothd)"
        f.broadcastWhileScanning = .notTried(why)
        f.extendedFrames = .notTried(why)
        return f
    }
}
