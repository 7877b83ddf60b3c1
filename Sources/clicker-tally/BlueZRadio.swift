import BlueZ
import ClickerTransport
import Logging

extension CentralRadioArguments {
    /// The BlueZ central on the system bus. `keepTrying`: a service waits for bluetoothd and the
    /// adapter instead of failing at once.
    /// With several adapters, one central each, merged (``MergedCentral``): all scan, all broadcast.
    func openBlueZ(logger: Logger, keepTrying: Bool = false) async throws -> OpenedCentral {
        let names: [String?] = adapters.isEmpty ? [adapter] : adapters
        let centrals = names.map { name in
            BlueZCentral(options: BlueZCentralOptions(
                adapter: AdapterSelection(argument: name),
                discoveryRestartInterval: discoveryRestart > 0 ? .milliseconds(Int64(discoveryRestart * 1000)) : nil,
                waitForRadio: keepTrying), logger: logger)
        }
        let central = MergedCentral.combining(zip(names, centrals).map { MergedCentral.Member(name: $0 ?? "bluez", central: $1) })
        return OpenedCentral(central: central, air: nil) {
            for c in centrals { await c.shutdown() }
            MergedCentral.of(central)?.shutdown()
        }
    }
}
