import ClickerTransport

/// The tally's `--adapter`: one adapter, or several separated by commas (`hci0,hci1`), each a Linux
/// interface name (`hci` and a number) or, on BlueZ, the adapter's address.
public enum AdapterList {
    /// The adapters of `text`, in the order given. Throws a ``Failure`` naming what is wrong: an empty
    /// item, something that is neither a name nor an address, an adapter given twice.
    public static func parse(_ text: String) throws -> [String] {
        let items = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(" \t") }
        var seen: [String] = []
        var keys: Set<String> = []
        for item in items {
            guard !item.isEmpty else {
                throw Failure("--adapter: an empty adapter name in '\(text)'; give names separated by commas, like hci0,hci1")
            }
            guard let key = key(of: item) else {
                throw Failure("--adapter: '\(item)' is not an adapter; give a name like hci0 or, on BlueZ, "
                              + "an address like 00:1A:7D:DA:71:13 (clicker-tally doctor lists them)")
            }
            guard keys.insert(key).inserted else {
                throw Failure("--adapter: \(item) is given twice; name each adapter once")
            }
            seen.append(item)
        }
        return seen
    }

    /// What identifies an adapter: its name (`hci` and a decimal number, as Linux writes it: `hci1`,
    /// not `hci01`), or its address, whatever the case of its hex digits; nil for anything else.
    static func key(of item: String) -> String? {
        if item.hasPrefix("hci") {
            let digits = item.dropFirst(3)
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let n = Int(digits), "hci\(n)" == item else { return nil }
            return item
        }
        guard item.count == 17, item.contains(":"), let a = DeviceAddress(item) else { return nil }
        return a.description
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(_ set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
