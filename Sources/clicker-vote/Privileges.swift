import ArgumentParser
import ClickerCommandLine
import HCI

/// The entry point: binds the raw HCI socket when the command will use it and drops the network
/// capabilities while the process has one thread (``PreboundHCI``), then runs the command.
@main
enum ClickerVoteMain {
    static func main() async {
        Allocator.configure()
        do {
            var command = try ClickerVoteCommand.parseAsRoot()
            // The doctor reports what the program may do on raw HCI: what it held before the drop.
            if command is Doctor {
                let held = try? ProcessCapabilities.current()
                Doctor.capabilitiesAtStart.withLock { $0 = held }
            }
            let adapter = (command as? Cast).flatMap { $0.radio.radio == .hci ? $0.radio.adapter ?? "hci0" : nil }
            do {
                try PreboundHCI.bindThenDropCapabilities(adapter: adapter, program: "clicker-vote")
            } catch { throw Failure("\(error)") }
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

