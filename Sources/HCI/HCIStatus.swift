import ClickerTransport
import Synchronization

/// The power-on sequence both roles share. Returns the controller's public address.
///
/// Reset (optional) clears any scan/advertising state a previous owner left; Set Event Mask adds
/// the LE Meta event (not in the default mask); LE Set Event Mask adds extended advertising
/// reports; Read BD_ADDR names the controller in the status.
func initializeController(_ controller: HCIController, reset: Bool, timeout: Duration) async throws -> DeviceAddress {
    if reset { _ = try await controller.executeNow(.reset, timeout: max(timeout, .seconds(5))) }
    _ = try await controller.executeNow(.setEventMask(HCICommand.eventMaskWithLEMeta), timeout: timeout)
    _ = try await controller.executeNow(.leSetEventMask(HCICommand.leEventMaskWithExtendedReports), timeout: timeout)
    let bdaddr = try await controller.executeNow(.readBDAddr, timeout: timeout)
    guard bdaddr.count >= 6 else { throw HCIError.malformedReply(.readBDAddr) }
    return DeviceAddress(bdaddr[5], bdaddr[4], bdaddr[3], bdaddr[2], bdaddr[1], bdaddr[0])
}
