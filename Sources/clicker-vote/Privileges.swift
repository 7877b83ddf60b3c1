import ArgumentParser
import HCI
import Synchronization

/// The entry point: bind the raw HCI socket (if asked for) and drop CAP_NET_RAW and CAP_NET_ADMIN
/// while the process still has one thread, then run the command.
///
/// Linux keeps capabilities per thread and new threads inherit them, so a drop made later, once
/// Swift's thread pool runs, would leave every other thread holding them. At the top of an async
/// `main`, before its first suspension, the process has a single thread (checked: the drop fails
/// loudly otherwise). The bound socket is the only thing the capabilities were needed for.
@main
enum ClickerVoteMain {
    static func main() async {
        do {
            var command = try ClickerVoteCommand.parseAsRoot()
            if let cast = command as? Cast, cast.radio.radio == .hci {
                do {
                    PreboundHCI.socket.withLock { $0 = nil }
                    let socket = try HCISocket.open(adapter: cast.radio.adapter ?? "hci0", program: "clicker-vote")
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
            ClickerVoteCommand.exit(withError: error)
        }
    }
}

/// The HCI user-channel socket bound by ``ClickerVoteMain`` before the capabilities were dropped.
enum PreboundHCI {
    static let socket = Mutex<HCISocket?>(nil)

    static func take() -> HCISocket? { socket.withLock { s in defer { s = nil }; return s } }
}
