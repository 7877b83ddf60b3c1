import ArgumentParser
import HCI
import Synchronization

/// The entry point: bind the raw HCI socket (when `--radio hci` will use it) and drop CAP_NET_RAW
/// and CAP_NET_ADMIN while the process still has one thread, then run the command.
///
/// Linux keeps capabilities per thread and new threads inherit them, so a drop made once Swift's
/// thread pool runs would leave every other thread holding them. At the top of an async `main`,
/// before its first suspension, the process has a single thread (the drop refuses otherwise).
@main
enum ClickerTallyMain {
    static func main() async {
        do {
            var command = try ClickerTallyCommand.parseAsRoot()
            if let adapter = hciAdapter(of: command) {
                do {
                    let socket = try HCISocket.open(adapter: adapter, program: "clicker-tally")
                    PreboundHCI.socket.withLock { $0 = socket }
                } catch { throw Failure("\(error)") }
            }
            do { try ProcessCapabilities.dropNetworkCapabilitiesOfTheProcess() } catch { throw Failure("\(error)") }
            if var async = command as? AsyncParsableCommand {
                try await async.run()
            } else {
                try command.run()
            }
        } catch {
            ClickerTallyCommand.exit(withError: error)
        }
    }

    /// The adapter a command will open over raw HCI, if it will.
    static func hciAdapter(of command: ParsableCommand) -> String? {
        if let c = command as? Run, c.room.simulate == nil, c.radio.radio == .hci { return c.radio.adapter ?? "hci0" }
        if let c = command as? Daemon, c.room.simulate == nil, c.radio.radio == .hci { return c.radio.adapter ?? "hci0" }
        return nil
    }
}

/// The HCI user-channel socket bound by ``ClickerTallyMain`` before the capabilities were dropped.
enum PreboundHCI {
    static let socket = Mutex<HCISocket?>(nil)

    static func take() -> HCISocket? { socket.withLock { s in defer { s = nil }; return s } }
}
