import ArgumentParser
import BlueZ
import ClickerCommandLine
import ClickerDoctor
import HCI
import Synchronization

/// `clicker-tally doctor`: will this laptop do? The adapters, bluetoothd, whether this user may use them,
/// and what the radio does when tried: a broadcast while it scans, extended frames. Exit status 0 when the
/// tally can run here, 3 when it cannot.
struct Doctor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check this machine before the lecture: can the tally run, which beacon, what it means for a room.",
        discussion: """
            Lists the Bluetooth adapters, bluetoothd's version and whether this user may use them, then tries \
            the adapter the tally would use: a broadcast while it scans (a frame no voter takes for a vote) and \
            the beacon's extended-frame probe. Prints which beacon the tally will use, the simulated time to \
            count rooms of 40, 300 and 1,000 with it, and what would make it better. Takes a few seconds.

            Exit status: 0 the tally can run here (perhaps without its beacon: see the report); 3 it cannot \
            (no bluetoothd, no adapter, adapter off, access refused).
            """)

    /// The process's capabilities when it started, before they were dropped (Privileges.swift).
    static let capabilitiesAtStart = Mutex<ProcessCapabilities.Sets?>(nil)

    @Option(help: "Radio backend to check: bluez (default) or hci.")
    var radio: RadioKind = .bluez

    @Option(help: "Adapter: a name (hci0) or, on BlueZ, an address. Default: the first powered adapter (raw HCI: hci0).")
    var adapter: String?

    @Flag(help: "Print the report as one JSON object (stable keys, docs/REFERENCE.md).")
    var json = false

    func validate() throws {
        if radio == .sim { throw ValidationError("doctor checks a Bluetooth radio: --radio bluez or hci") }
    }

    func run() async throws {
        let findings: DoctorFindings = switch radio {
        case .hci: RawHCIDoctor.examine(role: .tally, adapter: adapter ?? "hci0", capabilities: Self.capabilitiesAtStart.withLock { $0 })
        default: await BlueZDoctor.examine(BlueZDoctor.Options(adapter: AdapterSelection(argument: adapter), role: .tally,
                                                               listen: .seconds(5)))
        }
        let report = DoctorReport(findings)
        print(json ? report.json : report.text)
        if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
    }
}
