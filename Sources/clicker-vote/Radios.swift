import ArgumentParser
import ClickerCommandLine
import ClickerSim
import ClickerTransport
import HCI
import Logging

/// Radio options of the peripheral (voter) side.
struct PeripheralRadioArguments: ParsableArguments {
    @Option(help: RadioKind.help)
    var radio: RadioKind = .bluez

    @Option(help: "Adapter: a name (hci1) or, on BlueZ, an address. Default: the first powered adapter (raw HCI: hci0).")
    var adapter: String?

    @Option(help: "Socket of the simulated air (--radio sim).")
    var air: String = SimulatedAir.defaultSocketPath

    func open(logger: Logger) async throws -> any PeripheralTransport {
        switch radio {
        case .sim:
            return try await SimulatedAir.connect(path: air)
        case .hci:
            // Re-enabling advertising on each change makes emulated controllers (btvirt) report it;
            // real ones would report the new data anyway.
            // The socket was bound at start-up, before the capabilities were dropped (Privileges.swift).
            let options = HCIPeripheral.Options(reenableOnUpdate: true)
            guard let socket = PreboundHCI.take() else {
                return try HCIPeripheral(adapter: adapter ?? "hci0", options: options)
            }
            return HCIPeripheral(channel: socket, adapter: adapter ?? "hci0", options: options)
        case .bluez:
            return try await openBlueZ(logger: logger)
        }
    }
}
