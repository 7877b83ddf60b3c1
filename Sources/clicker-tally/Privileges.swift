import ArgumentParser
import ClickerCommandLine
import HCI

/// The entry point: binds the raw HCI socket when the command will use it and drops the network
/// capabilities while the process has one thread (``PreboundHCI``), then runs the command.
@main
enum ClickerTallyMain {
    static func main() async {
        Allocator.configure()
        do {
            var command = try ClickerTallyCommand.parseAsRoot()
            // The doctor reports what the program may do on raw HCI: what it held before the drop.
            if command is Doctor {
                let held = try? ProcessCapabilities.current()
                Doctor.capabilitiesAtStart.withLock { $0 = held }
            }
            do {
                try PreboundHCI.bindThenDropCapabilities(adapter: hciAdapter(of: command), program: "clicker-tally")
            } catch { throw Failure("\(error)") }
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
        if let c = (command as? Run)?.arguments,
           c.room.simulate == nil, c.radio.radio == .hci { return c.radio.adapter ?? "hci0" }
        if let c = command as? Daemon, c.room.simulate == nil, c.radio.radio == .hci { return c.radio.adapter ?? "hci0" }
        return nil
    }
}

