import ArgumentParser

/// Which radio backend a command uses; the same choice for `clicker-tally` and `clicker-vote`.
public enum RadioKind: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// BlueZ (bluetoothd) over the D-Bus system bus: the default.
    case bluez
    /// Raw HCI on an adapter bluetoothd does not manage (exact advertising interval).
    case hci
    /// The simulated air on a local socket: `clicker-tally --radio sim` hosts it, `clicker-vote
    /// --radio sim` joins it.
    case sim

    /// The `--radio` help of both commands.
    public static let help: ArgumentHelp = "Radio backend: bluez (default), hci or sim."
}
