import ArgumentParser
import BlueZ
import ClickerCommandLine
import ClickerDoctor
import ClickerWire
import HCI
import Synchronization

/// `clicker-vote doctor`: will this board do? The adapters, bluetoothd, whether this user may use them,
/// a broadcast tried while the adapter scans, and whether a tally's beacon is heard right now. Exit
/// status 0 when a voter can run here, 3 when it cannot.
struct Doctor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check this board: can it vote, and does it hear a tally right now.",
        discussion: """
            Lists the Bluetooth adapters, bluetoothd's version and whether this user may use them, tries a \
            broadcast while the adapter scans (a frame no tally takes for a vote), and listens for a tally's \
            beacon for --listen seconds.

            Exit status: 0 a voter can run here (whether or not a tally is heard: see the report); 3 it cannot \
            (no bluetoothd, no adapter, adapter off, access refused).
            """)

    /// The process's capabilities when it started, before they were dropped (Privileges.swift).
    static let capabilitiesAtStart = Mutex<ProcessCapabilities.Sets?>(nil)

    @Option(help: "Radio backend to check: bluez (default) or hci.")
    var radio: RadioKind = .bluez

    @Option(help: "Adapter: a name (hci1) or, on BlueZ, an address. Default: the first powered adapter (raw HCI: hci0).")
    var adapter: String?

    @Option(help: ArgumentHelp("How long to listen for a tally's beacon.", valueName: "seconds"))
    var listen: Double = 6

    @Flag(help: "Print the report as one JSON object (stable keys, docs/REFERENCE.md).")
    var json = false

    func validate() throws {
        if radio == .sim { throw ValidationError("doctor checks a Bluetooth radio: --radio bluez or hci") }
        guard listen >= 1 && listen <= 120 else { throw ValidationError("--listen is 1 to 120 seconds (got \(listen))") }
    }

    func run() async throws {
        let findings: DoctorFindings = switch radio {
        case .hci: RawHCIDoctor.examine(role: .vote, adapter: adapter ?? "hci0", capabilities: Self.capabilitiesAtStart.withLock { $0 })
        default: await BlueZDoctor.examine(BlueZDoctor.Options(adapter: AdapterSelection(argument: adapter), role: .vote,
                                                               listen: .milliseconds(Int64(listen * 1000)),
                                                               isBeacon: BeaconCodec.isBeaconFrame))
        }
        let report = DoctorReport(findings)
        print(json ? report.json : report.text)
        if report.exitStatus != 0 { throw ExitCode(report.exitStatus) }
    }
}
