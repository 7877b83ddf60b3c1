import ClickerTransport

extension AdapterSelection {
    /// From a command-line value: an address (`00:AA:01:00:00:01`), else an interface name (`hci0`);
    /// nil picks the first powered adapter.
    public init(argument: String?) {
        guard let text = argument else { self = .firstPowered; return }
        self = DeviceAddress(text).map { .address($0) } ?? .name(text)
    }
}
