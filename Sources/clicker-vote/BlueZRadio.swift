import BlueZ
import ClickerTransport
import Logging

extension PeripheralRadioArguments {
    /// The BlueZ peripheral on the system bus: an LEAdvertisement1 and a GATT application.
    func openBlueZ(logger: Logger) async throws -> any PeripheralTransport {
        BlueZPeripheral(options: BlueZPeripheralOptions(adapter: AdapterSelection(argument: adapter)), logger: logger)
    }
}
