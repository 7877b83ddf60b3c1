/// The URLs the instructor is given for the page. An address like 192.0.2.7 is its own URL; a
/// wildcard (`0.0.0.0`, `::`) is no address another machine can open, so the page is offered at each
/// of this machine's addresses instead, those others can reach first, then loopback. Pure: the
/// machine's addresses are given.
extension ProjectorAddress {
    /// `0.0.0.0` or `::` (in any of their spellings): every address of the machine.
    public var isWildcard: Bool {
        let h = host.lowercased()
        if h.contains(":") { return h.split(separator: ":").allSatisfy { $0.allSatisfy { $0 == "0" } } }
        let parts = h.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0 == "0" } }
    }

    /// The page's URLs, with `?token=` when one is needed.
    /// - Parameter machineAddresses: this machine's interface addresses (IPv4 dotted, IPv6 text); used
    ///   only for a wildcard address. An IPv4 wildcard lists the IPv4 ones; `::` lists both. IPv6
    ///   link-local addresses (fe80::/10) are left out: a browser cannot open them without a zone.
    public func urls(token: String?, machineAddresses: [String]) -> [String] {
        let query = token.map { "?token=\($0)" } ?? ""
        func url(_ host: String) -> String {
            "http://" + ProjectorAddress(host: host, port: port).description + "/" + query
        }
        guard isWildcard else { return [url(host)] }
        let ipv6 = host.contains(":")
        var reachable: [String] = []
        var loopback: [String] = []
        for a in machineAddresses where !reachable.contains(a) && !loopback.contains(a) {
            let isIPv6 = a.contains(":")
            if isIPv6 && !ipv6 { continue }
            let lower = a.lowercased()
            if isIPv6, ["fe8", "fe9", "fea", "feb"].contains(where: { lower.hasPrefix($0) }) { continue }
            if Self.isLoopbackHost(a) { loopback.append(a) } else { reachable.append(a) }
        }
        // Loopback always works on this machine, whatever the interfaces say.
        if !loopback.contains("127.0.0.1") { loopback.insert("127.0.0.1", at: 0) }
        return (reachable + loopback).map(url)
    }
}
