import ClickerTransport
import Logging

extension CentralRadioArguments {
    func openBlueZ(logger: Logger) async throws -> OpenedCentral {
        throw Failure("the BlueZ backend is not wired yet; use --simulate N or --radio sim")
    }
}
