import BlueZ
import ClickerTransport
import Logging

extension CentralRadioArguments {
    /// The BlueZ central on the system bus. `keepTrying`: a service waits for bluetoothd and the
    /// adapter instead of failing at once.
    func openBlueZ(logger: Logger, keepTrying: Bool = false) async throws -> OpenedCentral {
        let selection = AdapterSelection(argument: adapter)
        let central = BlueZCentral(options: BlueZCentralOptions(
            adapter: selection,
            discoveryRestartInterval: discoveryRestart > 0 ? .milliseconds(Int64(discoveryRestart * 1000)) : nil,
            waitForRadio: keepTrying), logger: logger)
        return OpenedCentral(central: central, air: nil) { await central.shutdown() }
    }
}
