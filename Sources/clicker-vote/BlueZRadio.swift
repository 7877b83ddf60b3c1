import ClickerTransport
import Logging

extension PeripheralRadioArguments {
    func openBlueZ(logger: Logger) async throws -> any PeripheralTransport {
        throw Failure("the BlueZ backend is not wired yet; use --radio sim")
    }
}
